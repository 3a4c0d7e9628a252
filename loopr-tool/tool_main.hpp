// tool_main: the process boundary every tool binary shares (loopr-tool and
// loopr-fetch). `PROGRAM <tool> --worktree DIR` reads the tool's JSON
// arguments on stdin and writes one JSON result on stdout. Exit status: 0
// success, 1 tool error ({"error": {...}} on stdout), 2 usage error (bad
// command line; a message on stderr and an error object on stdout). This is
// the single dispatch boundary of those binaries (common/error.hpp): an
// exception that escapes a tool becomes an internal error reply.
#pragma once

#include <nlohmann/json.hpp>
#include <span>
#include <string_view>

#include "common/error.hpp"
#include "loopr-tool/worktree.hpp"

namespace loopr::tool {

using ToolFunction = Result<nlohmann::json> (*)(const Worktree&, const nlohmann::json&);

struct ToolEntry {
  std::string_view name;
  ToolFunction run;
};

int tool_main(int argc, char** argv, std::string_view program, std::span<const ToolEntry> tools);

}  // namespace loopr::tool
