// tool_main: the process boundary every tool binary shares (loopr-tool and
// loopr-fetch). `PROGRAM <tool> --worktree DIR` reads the tool's JSON
// arguments on stdin and writes one JSON result on stdout. Exit status: 0
// success, 1 tool error ({"error": {...}} on stdout), 2 usage error (bad
// command line; a message on stderr and an error object on stdout). This is
// the single dispatch boundary of those binaries (common/error.hpp): an
// exception that escapes a tool becomes an internal error reply.
//
// Two front ends share call_tool(), so a result is the same bytes either way:
// one process per call (above), and `PROGRAM --serve --worktree DIR`, a warm
// worker that answers many calls on fds 0 and 1 (loopr-tool/serve.hpp).
#pragma once

#include <nlohmann/json.hpp>
#include <span>
#include <string>
#include <string_view>

#include "common/error.hpp"
#include "loopr-tool/worktree.hpp"

namespace loopr::tool {

using ToolFunction = Result<nlohmann::json> (*)(const Worktree&, const nlohmann::json&);

struct ToolEntry {
  std::string_view name;
  ToolFunction run;
};

// One call's outcome: the exit status the process front end exits with, and
// the exact bytes it writes on stdout (one JSON object and a newline).
struct ToolOutput {
  int exit_code = 0;
  std::string stdout_text;
};

// Runs `tool_name` on `input` (the arguments' JSON text) in `worktree`:
// unknown tool -> exit 2 with a usage error object; arguments that are not
// JSON or a tool error -> exit 1 with {"error": ...}; an exception -> exit 1
// with an internal error. Never throws. A listing or a read_file page longer
// than `max_output_bytes` (the job's cap; 0: none known) is cut to fit
// (output_fit.hpp).
ToolOutput call_tool(std::string_view program, std::span<const ToolEntry> tools,
                     std::string_view tool_name, const Worktree& worktree, std::string_view input,
                     std::size_t max_output_bytes = 0);

// The warm-worker front end, for binaries that offer one: serves calls for
// `worktree` until its input ends; `filter_fd` (-1: none) holds a seccomp
// program to install before the first call. Returns the exit status.
using ServeFunction = int (*)(std::string_view program, std::span<const ToolEntry> tools,
                              const Worktree& worktree, int filter_fd);

int tool_main(int argc, char** argv, std::string_view program, std::span<const ToolEntry> tools,
              ServeFunction serve = nullptr);

}  // namespace loopr::tool
