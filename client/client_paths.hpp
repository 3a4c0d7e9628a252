// The places looprctl uses: config/paths.hpp's resolution (flags, LOOPR_*
// variables, XDG), then once more with loopr.toml's [daemon] socket and
// state_dir, so looprctl finds a daemon that reads the same file.
#pragma once

#include <iosfwd>
#include <string>
#include <string_view>

#include "common/error.hpp"
#include "config/paths.hpp"

namespace loopr::client {

// A loopr.toml that cannot be read is reported on `err` as a warning and
// ignored (looprd itself refuses to start on it, and says why in its log).
// Throws loopr::StartupError when a place cannot be resolved (no HOME, a
// socket path too long).
config::Paths resolve_client_paths(const config::PathFlags& flags, std::ostream& err);

// `given` made absolute against the current folder and normalized (no
// trailing '/'); empty: the current folder. A failure is a usage error
// naming `what` ("the worktree") and the flag to pass ("--worktree").
Result<std::string> absolute_folder(const std::string& given, std::string_view what,
                                    std::string_view flag);

}  // namespace loopr::client
