// looprctl repo trust | untrust | show (docs/control-protocol.md,
// "Repository settings"): a repository's .loopr/loopr.toml is honoured only
// once its user trusts it; these record or forget that trust and show each
// of the repository's commands and worktree needs with where it came from
// (user config, repository file, daemon default). Like client/commands.hpp's
// commands, each opens its own connection, prints text for a person on
// `out` (the daemon's result as JSON with --json), failures on `err`, and
// returns the process exit status.
#pragma once

#include <iosfwd>
#include <nlohmann/json.hpp>
#include <string>

#include "client/commands.hpp"

namespace loopr::client {

// `dir` empty: the current folder.
int run_repo_trust(const CommandContext& context, const std::string& dir);
int run_repo_untrust(const CommandContext& context, const std::string& dir);
int run_repo_show(const CommandContext& context, const std::string& dir);

// The text repo show prints for a repo.show result.
void print_repo_settings(const nlohmann::json& shown, std::ostream& out);

}  // namespace loopr::client
