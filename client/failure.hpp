// looprctl's failure categories and the exit status of each (the contract
// scripts rely on):
//
//   0  ok
//   1  the call failed (a tool error, a refused approval, an rpc error reply)
//   2  usage (bad flags, arguments that are not a JSON object, bad paths)
//   3  looprd unreachable (no socket, refused, closed, no answer in time)
//   4  protocol or version mismatch (a malformed reply, another protocol)
//
// Commands that wait for a loop or a plan to end (`loop run`, `plan`, `plan
// approve --follow`) exit with its outcome instead (OutcomeExit), so a
// headless run in CI can branch on it; for them every failure is 1 and a
// usage mistake 2 (CommandContext::fail_outcome).
//
// Failures travel as loopr::Error (common/error.hpp). Besides the shared
// errc::* codes, the client uses the codes below; exit_status_for() maps any
// Error to its exit status.
#pragma once

#include <iosfwd>
#include <string_view>

#include "common/error.hpp"

namespace loopr::client {

enum class ExitStatus : int {
  ok = 0,
  call_failed = 1,
  usage = 2,
  unreachable = 3,
  protocol = 4,
};

constexpr int to_int(ExitStatus status) {
  return static_cast<int>(status);
}

namespace failure {
// The socket is missing, refuses connections, closed the connection, or
// looprd did not answer in time. errc::timeout and errc::io are treated alike.
inline constexpr const char* daemon_unreachable = "daemon_unreachable";
// initialize was answered with 1004 or with another protocol version.
inline constexpr const char* version_mismatch = "version_mismatch";
// looprd answered {"error": ...}. details: {"rpc_code": C, "method": "...",
// "data": <the error's data or null>}.
inline constexpr const char* rpc_error = "rpc_error";
// A command-line mistake found after parsing (a JSON argument that is not an
// object, an unreadable file). errc::invalid_arguments is treated alike.
inline constexpr const char* usage = "usage";
}  // namespace failure

// The outcome of a loop or plan as the exit status of the command that
// followed it: 0 completed; 3 failed (also rejected, invalidated, blocked);
// 4 stuck; 5 budget exhausted; 6 cancelled; 7 waiting for a person (a plan
// at its approval gate, or a headless run's call waiting for approval).
enum class OutcomeExit : int {
  completed = 0,
  failed = 3,
  stuck = 4,
  budget_exhausted = 5,
  cancelled = 6,
  needs_approval = 7,
};

// A loop status the client may stop following at but that is not a loop
// status looprd stores: a call of the loop waits for a person's approval.
inline constexpr const char* kCallAwaitsApproval = "call_awaits_approval";

// The exit status for a loop status: OutcomeExit's, and 1 for a status that
// is no outcome (running, paused, or unknown).
int outcome_exit_status(std::string_view status);

// The exit status for a failure:
//   daemon_unreachable, errc::timeout, errc::io           -> unreachable (3)
//   version_mismatch, errc::protocol, errc::too_large     -> protocol (4)
//   rpc_error: -32700, -32600, -32601 (looprd could not take the request:
//   another protocol) and 1004 -> protocol (4); any other code -> 1
//   usage, errc::invalid_arguments                        -> usage (2)
//   anything else                                         -> call_failed (1)
ExitStatus exit_status_for(const Error& error);

// Writes "looprctl: <message>" (protocol failures as "looprctl: protocol
// error: <message>") and, when there is one, "hint: <hint>" on the next line.
void print_failure(std::ostream& err, const Error& error);

}  // namespace loopr::client
