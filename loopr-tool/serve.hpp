// The warm-worker front end of loopr-tool: `loopr-tool --serve --worktree DIR
// [--filter-fd N]` answers tool calls for one worktree, one at a time, on
// fd 0 (calls in) and fd 1 (replies out), in proto/worker_messages.hpp's
// frames, until fd 0 ends. Each reply holds exactly the exit status and
// stdout bytes the one-process-per-call front end would have produced for
// the same call (both go through call_tool).
//
// Before it reads anything, the worker installs the seccomp program it was
// handed on --filter-fd (the runner's "no new processes" rules, stacked on the
// lane's filter: runner/warm_workers.hpp) and says so in its ready message; a
// program that cannot be installed ends the worker with status 3 before any
// call. Without --filter-fd (tests, a manual run) no filter is added and the
// ready message says so. Nothing is kept from one call to the next but the
// worktree's directory fd: files are opened afresh by every call.
#pragma once

#include <span>
#include <string_view>

#include "loopr-tool/tool_main.hpp"

namespace loopr::tool {

int serve_calls(std::string_view program, std::span<const ToolEntry> tools,
                const Worktree& worktree, int filter_fd);

}  // namespace loopr::tool
