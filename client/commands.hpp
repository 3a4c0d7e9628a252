// looprctl's commands. Each one opens its own connection (ControlClient::open,
// which sends initialize first), prints human-readable text on `out` (or the
// JSON result with --json), reports failures on `err` (client/failure.hpp)
// and returns the process exit status. The CLI wiring is client/cli.cpp.
#pragma once

#include <cstdint>
#include <functional>
#include <iosfwd>
#include <optional>
#include <string>
#include <vector>

#include "client/control_client.hpp"
#include "client/failure.hpp"
#include "config/paths.hpp"

namespace loopr::client {

struct CommandContext {
  config::Paths paths;           // paths.socket_path is the socket every command uses
  config::PathFlags path_flags;  // what the user passed (forwarded to looprd by daemon start)
  bool json = false;             // --json: print results as JSON
  ClientTimeouts timeouts;
  std::istream& in;
  std::ostream& out;
  std::ostream& err;

  // Prints `error` on err and returns its exit status.
  int fail(const Error& error) const;
  // The same, for a command whose exit status is an outcome (failure.hpp):
  // 2 for a usage mistake, 1 for any other failure.
  int fail_outcome(const Error& error) const;
  // Prints `value` as indented JSON on out.
  void print_json(const nlohmann::json& value) const;
  Result<ControlClient> open() const;
};

// result[key] as an array of objects. A missing key is an empty list unless
// `required`; any other shape is errc::protocol naming `method` and the key.
Result<nlohmann::json> objects_in(const nlohmann::json& result, const char* key,
                                  const std::string& method, bool required = true);
// result[key], which must be an object; else errc::protocol naming `method`
// and the key.
Result<nlohmann::json> object_in(const nlohmann::json& result, const char* key,
                                 const std::string& method);
// events.subscribe {topics, loop_id?}; the result must be an object.
Result<nlohmann::json> subscribe_events(ControlClient& client, std::vector<std::string> topics,
                                        const std::optional<std::string>& loop_id);
// Whether `text` holds nothing but whitespace.
bool blank(const std::string& text);
// The wall clock, in milliseconds since the epoch (the unit of *_at_ms).
std::int64_t now_ms();

// ---- daemon start | stop | status (daemon_commands.cpp) ----
struct DaemonStartOptions {
  std::string looprd;         // --looprd; empty: looprd next to this executable
  Milliseconds wait{10'000};  // how long to wait for the new daemon to answer
};
int run_daemon_start(const CommandContext& context, const DaemonStartOptions& options);
int run_daemon_stop(const CommandContext& context, Milliseconds wait);
int run_daemon_status(const CommandContext& context);

// ---- call, tools (tool_commands.cpp) ----
struct CallOptions {
  std::string tool;
  std::optional<std::string> args;  // JSON object text, or "-" for stdin; unset: {}
  std::string worktree;             // empty: the current directory
  std::optional<std::uint64_t> timeout_ms;
  std::optional<std::string> loop_id;
};
int run_call(const CommandContext& context, const CallOptions& options);
int run_tools(const CommandContext& context);

// ---- approvals, approve, deny (approval_commands.cpp) ----
int run_approvals(const CommandContext& context);
int run_approve(const CommandContext& context, const std::string& id);
// --always: shows the rules approval.always offers, asks (unless `yes`),
// then saves them and approves.
int run_approve_always(const CommandContext& context, const std::string& id, bool yes);
int run_deny(const CommandContext& context, const std::string& id,
             const std::optional<std::string>& reason);

// ---- events (events_command.cpp) ----
struct EventsOptions {
  std::vector<std::string> topics;     // empty: all
  std::optional<std::uint64_t> count;  // stop after this many events; unset: follow
};
int run_events(const CommandContext& context, const EventsOptions& options);

// ---- metrics (metrics_command.cpp) ----
int run_metrics(const CommandContext& context);
// looprctl workers: the [cluster] link and the workers looprd saw lately.
int run_workers(const CommandContext& context);

// ---- loops, loop ... (loop_commands.cpp; docs/control-protocol.md "Loops") ----
// loop run: loop.create, then (unless detach) follows the loop until it
// ends and prints a summary. Exit 0 only when the loop completed; Ctrl-C
// while following detaches (exit 0) and leaves the loop running. --json:
// JSON Lines (the create result, the loop's events, the loop.get result);
// with detach, the loop object.
struct LoopRunOptions {
  std::string type = "code";
  std::string repo;  // made absolute before it is sent
  std::string task;
  std::optional<std::string> base;
  std::optional<std::string> provider;
  std::optional<std::string> model;
  std::optional<std::uint64_t> max_iterations;
  std::optional<double> budget_usd;
  std::optional<std::string> validate;
  std::optional<std::uint64_t> validate_timeout_s;
  bool include_uncommitted = false;
  bool detach = false;
};
int run_loop_run(const CommandContext& context, const LoopRunOptions& options);

// What `loop run` and `plan` share: sends `method` (loop.create,
// loop.create_plan) with `params`, subscribed to the loop's events first
// when following. Without follow, prints the new loop's id (the loop with
// --json). With follow, prints where the loop works (--json: the create
// result as a JSON line) and follows it live until it reaches a final status
// or `stop_at`; Ctrl-C then detaches with "detached; the NOUN goes on —
// " + after_detach(id). With --json (a headless run) it also stops when a
// call of the loop waits for approval (status kCallAwaitsApproval). Failures
// are returned, not printed.
struct LiveLoopStart {
  std::string method;
  nlohmann::json params;
  std::string noun;  // "loop", "plan"
  std::function<std::string(const std::string& id)> after_detach;
  std::optional<std::string> stop_at;
  bool follow = true;
};
struct LiveLoop {
  ControlClient client;  // for what the caller asks next
  std::string id;
  std::string status;  // as created, or where following stopped
};
Result<LiveLoop> start_live_loop(const CommandContext& context, const LiveLoopStart& start);

struct LoopListOptions {
  std::optional<std::string> status;
  std::optional<std::string> type;
  bool all = false;   // include deleted loops
  bool tree = false;  // as trees by parent_id (client/loop_tree.hpp)
};
int run_loops(const CommandContext& context, const LoopListOptions& options);
int run_loop_show(const CommandContext& context, const std::string& id);

// loop logs: the journal, paged; with follow, then its new steps and streamed
// text until the loop reaches a final status. --json: one step per line.
struct LoopLogsOptions {
  std::string id;
  bool follow = false;
  std::optional<std::int64_t> iteration;
};
int run_loop_logs(const CommandContext& context, const LoopLogsOptions& options);

enum class LoopControl { pause, resume, cancel };
int run_loop_control(const CommandContext& context, LoopControl control, const std::string& id);

struct LoopDeleteOptions {
  std::string id;
  bool remove_worktree = false;
  bool remove_branch = false;
};
int run_loop_delete(const CommandContext& context, const LoopDeleteOptions& options);
// loop export: the loop's model turns as JSON Lines, whatever --json says.
int run_loop_export(const CommandContext& context, const std::string& id);

}  // namespace loopr::client
