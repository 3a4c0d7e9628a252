// Test support: runs a program as a child process with a given stdin, and
// collects all it writes to stdout and stderr and how it ended — the one way
// the tests run a binary of ours (loopr-tool, loopr-fetch, looprctl) and
// read its whole output.
//
// stdin is fed and both outputs are drained on threads of their own, so a
// large input cannot deadlock against a large output. A child that exits
// without reading its stdin does not kill the test: SIGPIPE is blocked on the
// feeding thread only, so its write fails with EPIPE (the test's own signal
// dispositions are left alone). read() and waitpid() are retried on EINTR.
#pragma once

#include <optional>
#include <string>
#include <vector>

namespace loopr::test {

struct SpawnOptions {
  std::string stdin_text;  // fed on stdin, then closed
  std::string cwd;         // empty: the test's own
  // The child's whole environment ("NAME=value"); nullopt: the test's own.
  std::optional<std::vector<std::string>> environment;
  // stderr goes into the same pipe as stdout, interleaved as written, and
  // `err` stays empty (for commands such as git whose messages go to either).
  bool stderr_into_stdout = false;
};

struct SpawnedRun {
  int exit_code = -1;  // 128 + signal when killed; -1 when it could not be waited for
  std::string out;
  std::string err;
};

// Runs `binary` with `args` (argv[0] is `binary`) and waits for it. Throws
// std::runtime_error when it cannot be started.
SpawnedRun spawn_and_drain(const std::string& binary, const std::vector<std::string>& args,
                           const SpawnOptions& options = {});

// What `/bin/sh -c command` writes to stdout (its stderr is dropped), for a
// test's setup steps (git init, ...). Throws as spawn_and_drain does.
std::string shell_output(const std::string& command);

}  // namespace loopr::test
