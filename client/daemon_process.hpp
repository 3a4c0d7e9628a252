// Starting looprd from looprctl: where its binary is, spawning it detached
// with its output in a log file, and watching whether it exited.
#pragma once

#include <sys/types.h>

#include <cstddef>
#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "common/error.hpp"

namespace loopr::client {

// `explicit_path` made absolute when given, else "looprd" in the folder of
// this executable (/proc/self/exe). errc::not_found when that file is not an
// executable.
Result<std::string> locate_looprd(const std::string& explicit_path);
// The path of `name` in the folder of the running program (/proc/self/exe),
// where looprctl finds looprd and loopr-tui. Not checked to exist.
Result<std::string> sibling_executable(const std::string& name);

// Spawns argv[0] with `argv` in a new session (setsid: no controlling
// terminal, not in the caller's process group), working directory "/",
// stdin /dev/null, stdout and stderr appended to `log_path` (created 0600),
// the caller's environment, no inherited fds beyond those three (looprctl's
// own are all O_CLOEXEC). The child stays the caller's child until
// reaped: exit_description() polls it. Fails if the binary cannot be run.
Result<pid_t> spawn_detached(const std::vector<std::string>& argv, const std::string& log_path);

// If child `pid` has exited, reaps it and says how ("exited with status 1",
// "was killed by signal 9"); nullopt while it runs.
std::optional<std::string> exit_description(pid_t pid);

// Size of the file, 0 when it does not exist.
std::uint64_t file_size(const std::string& path);

// The last `max_lines` lines of `path` from byte `from` on, reading at most
// `max_bytes` of its end. Empty when the file is missing or has nothing there.
std::string file_tail(const std::string& path, std::uint64_t from, std::size_t max_lines,
                      std::size_t max_bytes);

}  // namespace loopr::client
