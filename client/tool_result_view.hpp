// Human-readable rendering of a tool.call result (docs/control-protocol.md):
//   read_file-like output ({content, ...})       -> the content, as a file
//   command-like output ({stdout, stderr, exit_code, ...}) -> stdout on out,
//       stderr on err, then "exit code: N" (or the signal / timeout) on err
//   any other output                              -> indented JSON
// A failed call ("ok": false) prints whatever output it has, then
// "error: <code>: <message>" and "hint: <hint>" on err.
#pragma once

#include <iosfwd>
#include <nlohmann/json.hpp>

#include "client/failure.hpp"
#include "common/error.hpp"

namespace loopr::client {

// Checks the result's shape ("ok" must be a boolean): errc::protocol if not.
Result<bool> tool_call_succeeded(const nlohmann::json& result);

// Prints `result` for a person. Returns ok or call_failed.
ExitStatus print_tool_result(const nlohmann::json& result, std::ostream& out, std::ostream& err);

// Writes "error: <code>: <message>" and "hint: <hint>" for a failed result.
void print_tool_error(const nlohmann::json& result, std::ostream& err);

}  // namespace loopr::client
