// ToolRouter: the pipeline every tool call goes through (DESIGN.md §6):
//   1. catalog lookup (unknown or disabled: an error listing what exists);
//   2. JSON Schema validation of the arguments (a tool error naming the field);
//   3. policy: read-before-edit (ReadTracker → expected_hash / create_only),
//      the tool's safety tier and its approval policy (auto, ask, deny);
//   4. dispatch to the lane's RunnerLink (slots are honoured there);
//   5. timeout, cancellation and output cap, enforced by the runner, with the
//      daemon's own deadline behind them;
//   6. the call recorded in the store, metrics and events.
// A tool that ran and failed is a ToolCallOutcome with ok = false, never an
// exception or a protocol error: that outcome is what the model reads.
//
// Threads: io thread only. Owns nothing it is given by reference.
#pragma once

#include <asio/awaitable.hpp>
#include <asio/io_context.hpp>
#include <chrono>
#include <cstdint>
#include <functional>
#include <map>
#include <memory>
#include <nlohmann/json.hpp>
#include <optional>
#include <string>
#include <vector>

#include "budget/budget.hpp"
#include "cluster/cluster_link.hpp"
#include "common/error.hpp"
#include "config/catalog.hpp"
#include "config/settings.hpp"
#include "daemon/approval_gate.hpp"
#include "daemon/event_bus.hpp"
#include "daemon/json_schema.hpp"
#include "daemon/metrics.hpp"
#include "daemon/path_locks.hpp"
#include "daemon/read_tracker.hpp"
#include "daemon/runner_link.hpp"
#include "egress/egress_proxy.hpp"
#include "hooks/hook_runner.hpp"
#include "llm/cancel_token.hpp"
#include "policy/command_rules.hpp"
#include "store/store.hpp"

namespace loopr::daemon {

using store::args_digest;
using store::Store;
using store::ToolCallRecord;

struct ToolCallRequest {
  std::string tool;
  nlohmann::json args = nlohmann::json::object();
  std::string worktree;
  // Read-before-edit scope: the loop id, or one client connection.
  std::string session;
  std::optional<std::uint64_t> timeout_ms;  // lowers the catalog's timeout
  // The control connection that asked (0: none); its calls are cancelled
  // when it disconnects (cancel_calls_of_client).
  std::uint64_t client_id = 0;
  // True once the caller can no longer receive the result: the call is not
  // started after an approval wait, and nothing is remembered for its session.
  std::function<bool()> caller_gone;
  // The loop that made the call (empty: a client's own call); tool events
  // carry it, and cancel_calls_of_loop() finds the call by it.
  std::string loop_id;
  // The repository the call is about (a loop's: the repository loopr made it
  // for); empty: the one the worktree belongs to (memory/repository.hpp).
  // Only tools hosted in looprd (memory notes) use it.
  std::string repo;
  // The command build/test/validate run instead of the configured one. Set
  // only by looprd itself (a loop's validation, chosen by the user), never
  // from a client's or a model's arguments.
  std::optional<std::string> command;
  // What the calling loop's budgets leave for a hosted tool that consults a
  // model (the oracle); set by a loop's gateway, never from a client.
  std::optional<Allowance> allowance;
  // The hosted call this call is made for (the oracle's file reads):
  // cancel_calls_of_parent() ends it with that call.
  std::string parent_call_id;
};

// The reply to tool.call (docs/control-protocol.md).
struct ToolCallOutcome {
  std::string call_id;
  std::string tool;
  std::string lane;
  std::string status;  // success|failed|timeout|cancelled|error|denied|invalid
  bool ok = false;
  nlohmann::json output = nullptr;  // the tool's own JSON result, when it gave one
  std::optional<Error> error;
  std::optional<std::int32_t> exit_code;
  std::uint64_t duration_ms = 0;
  bool truncated = false;
  // Its runner died while it ran and it ran again on the restarted runner
  // (only calls that change nothing: config::changes_nothing). Told in the
  // tool.finished event, not the reply.
  bool retried = false;
  // What the user's tool.before and tool.after hooks said (hooks/), in order;
  // the model reads them with the result.
  std::vector<std::string> hook_notes;
  // Who ran it: a worker's id when [cluster] sent it to one
  // (docs/cluster.md), "local" for this machine's runners and looprd.
  std::string worker = store::kLocalWorker;
  // For a call a worker ran: {snapshot_ms, pickup_ms, overhead_ms,
  // deliveries} (cluster::RemoteReply); told in tool.finished only.
  nlohmann::json dispatch;

  nlohmann::json to_json() const;
};

// A catalog with every enabled tool's schema compiled. Immutable once built;
// a reload builds a new one and swaps it in whole.
struct CompiledCatalog {
  config::Catalog catalog;
  std::map<std::string, JsonSchema> schemas;

  // Throws loopr::ConfigError naming the tool when a schema does not compile.
  static std::shared_ptr<const CompiledCatalog> build(config::Catalog catalog);
};

// A call of a tool that runs in looprd itself (catalog lane "daemon") and
// goes through the router like any other — catalog, schema, approval
// policy, the store's record, events, metrics, timeout and cancellation:
// memory_* and oracle. (complete_task and create_* belong to the loop
// engine and are refused here.) A hosted tool runs on the io thread, so it
// must not block; it must give up promptly once `cancel` fires (on
// tool.cancel, its loop's or client's end, or its timeout), and keep its
// output under max_output_bytes.
struct HostedCall {
  std::string call_id;
  std::string tool;
  nlohmann::json args;   // checked against the tool's schema
  std::string worktree;  // realpath, beneath a worktree root
  std::string repo;      // realpath: request.repo, or the worktree's repository
  std::string loop_id;   // empty: a client's own call
  std::string session;
  std::uint64_t timeout_ms = 0;
  std::uint64_t max_output_bytes = 0;
  std::optional<Allowance> allowance;  // the request's
  std::shared_ptr<llm::CancelToken> cancel;
};
// The tool's output (a JSON object), or an Error the model reads (code,
// message, hint); the call's status is then "failed".
using HostedTool = std::function<asio::awaitable<Result<nlohmann::json>>(HostedCall)>;

class ToolRouter {
 public:
  using Lanes = std::map<std::string, RunnerLink*, std::less<>>;

  ToolRouter(asio::io_context& io, const config::Settings& settings,
             std::shared_ptr<const CompiledCatalog> catalog, Lanes lanes, ApprovalGate& approvals,
             EventBus& events, Metrics& metrics, Store& store, ReadTracker& reads);

  asio::awaitable<ToolCallOutcome> call(ToolCallRequest request);
  // Runs calls of one model turn: consecutive calls that change nothing
  // (config::changes_nothing) in parallel, every other call alone, in order.
  // Outcomes come back in call order.
  asio::awaitable<std::vector<ToolCallOutcome>> batch(std::vector<ToolCallRequest> requests);
  // Cancels a call waiting for approval, queued or running; false if unknown.
  bool cancel(const std::string& call_id);
  // The control connection that made the running call `call_id` (0: none,
  // or the call is not running).
  std::uint64_t client_of(const std::string& call_id) const;
  // Cancels every call of one control connection; returns how many.
  std::size_t cancel_calls_of_client(std::uint64_t client_id);
  // Cancels every call a loop made; returns how many.
  std::size_t cancel_calls_of_loop(const std::string& loop_id);
  // Cancels the calls made for hosted call `call_id` (parent_call_id).
  std::size_t cancel_calls_of_parent(const std::string& call_id);
  // The loop a running call belongs to (empty: none or unknown).
  std::string loop_of_call(const std::string& call_id) const;
  // A call of `loop_id` that waits for a lane slot: {call_id, tool, lane,
  // ahead (jobs queued before it), slots, running (the lane's jobs in
  // flight)}; null when none waits.
  nlohmann::json waiting_call_of_loop(const std::string& loop_id) const;
  // What a successful call's `output` tells read-before-edit tracking (the
  // content hash a read, write or edit saw; a delete forgets), recorded for
  // `session` in `worktree` (a realpath). Done for every call the router
  // runs; a loop resumed after a restart replays its journal through it.
  void remember_result(const std::string& session, const std::string& worktree,
                       const std::string& tool, const nlohmann::json& output);
  // The approval rules that judge a command `tool` runs in `repository` (a
  // realpath): the user's, those saved for it (and that tool) by `looprctl
  // approve --always`, and its trusted .loopr/loopr.toml's; an error when
  // that file sets rules it may not (repos::kRefusedCode) or cannot be read.
  Result<std::vector<policy::CommandRule>> command_rules(const std::string& repository,
                                                         const std::string& tool) const;
  // Checks `args` against the JSON Schema of `tool` (any lane, daemon tools
  // too): an invalid_arguments Error naming the field.
  Result<void> check_arguments(const std::string& tool, const nlohmann::json& args) const;

  // Makes `tool` (a lane "daemon" tool of the catalog) callable.
  void host_tool(const std::string& tool, HostedTool run) { hosted_[tool] = std::move(run); }
  bool hosts(const std::string& tool) const { return hosted_.count(tool) != 0; }

  // Calls in lanes with network present a fresh token to this proxy, so the
  // connections they make are attributed to them (net.connect's call_id).
  void set_egress_proxy(egress::EgressProxy* proxy) { egress_ = proxy; }
  // The user's [[hooks]]: tool.before runs before an approval wait and may
  // refuse the call, tool.after runs once it ran; both may add notes.
  void set_hooks(hooks::HookRunner* hooks) { hooks_ = hooks; }
  // Workers on other machines: calls of the lanes [cluster] names go there
  // first (null: none).
  void set_cluster(cluster::ClusterLink* cluster) { cluster_ = cluster; }

  void set_catalog(std::shared_ptr<const CompiledCatalog> catalog) {
    catalog_ = std::move(catalog);
  }
  const config::Catalog& catalog() const { return catalog_->catalog; }
  std::size_t active_calls() const { return active_.size(); }
  // tool.list: [{name, description, lane, tier, timeout_ms, max_output_bytes, enabled,
  // input_schema}]
  nlohmann::json tools_json() const;

 private:
  struct BatchState;
  asio::awaitable<ToolCallOutcome> run_call(ToolCallRequest request, std::string call_id);
  // Step 4 for a hosted tool: runs it under its timeout and cancel token.
  asio::awaitable<ToolCallOutcome> run_hosted(const config::ToolSpec& tool,
                                              const ToolCallRequest& request,
                                              const std::string& call_id, nlohmann::json args,
                                              const std::string& worktree,
                                              std::uint64_t timeout_ms);
  asio::awaitable<void> run_into_batch(std::shared_ptr<BatchState> state, std::size_t index);
  void finish(ToolCallOutcome& outcome, const ToolCallRequest& request,
              std::chrono::steady_clock::time_point started, std::int64_t started_unix_ms,
              const std::string& metric_name);
  // The call as a hook reads it (tool.before; tool.after adds the result).
  nlohmann::json hook_data(const std::string& call_id, const config::ToolSpec& tool,
                           const ToolCallRequest& request, const nlohmann::json& args,
                           const std::string& worktree) const;
  // Runs the tool.after hooks of a call that ran, adding their notes to
  // `done` after `before_notes`.
  asio::awaitable<void> after_hooks(ToolCallOutcome& done, nlohmann::json data,
                                    std::vector<std::string> before_notes);
  void track_reads(const ToolCallOutcome& outcome, const ToolCallRequest& request,
                   const std::string& worktree);

  asio::io_context& io_;
  const config::Settings& settings_;
  std::shared_ptr<const CompiledCatalog> catalog_;
  Lanes lanes_;
  egress::EgressProxy* egress_ = nullptr;
  hooks::HookRunner* hooks_ = nullptr;
  cluster::ClusterLink* cluster_ = nullptr;
  ApprovalGate& approvals_;
  EventBus& events_;
  Metrics& metrics_;
  Store& store_;
  ReadTracker& reads_;
  PathLocks path_locks_;
  std::vector<std::string> worktree_roots_;  // realpaths of [sandbox] worktree_roots
  std::uint64_t next_call_ = 1;
  struct ActiveCall {
    std::string lane;
    std::uint64_t client_id = 0;
    std::string loop_id;
    std::shared_ptr<llm::CancelToken> cancel;  // hosted calls
    std::string parent_call_id;
    std::string tool;
  };
  std::map<std::string, ActiveCall> active_;  // call id → running call
  std::map<std::string, HostedTool> hosted_;  // tool → its code in looprd
};

// The result a runner's JobResult gives the model (exposed for tests).
ToolCallOutcome outcome_from_job(const proto::JobResult& result, const config::ToolSpec& tool);

}  // namespace loopr::daemon
