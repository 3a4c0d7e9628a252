// ToolGateway: how the loop engine reaches tools, without knowing the
// daemon. looprd implements it over its ToolRouter (daemon/loop_tools.cpp),
// so a loop's calls get everything a client's calls get: the catalog,
// schema validation, read-before-edit tracking scoped to the loop, approval
// policy, lanes, timeouts and output caps, the store's record, and tool
// events carrying the loop's id.
// Threads: io thread only.
#pragma once

#include <asio/awaitable.hpp>
#include <cstddef>
#include <nlohmann/json.hpp>
#include <optional>
#include <string>
#include <vector>

#include "budget/budget.hpp"
#include "common/error.hpp"
#include "config/catalog.hpp"

namespace loopr::loops {

struct GatewayCall {
  std::string tool;
  nlohmann::json args = nlohmann::json::object();
  // For a tool looprd hosts that consults a model itself (the oracle): what
  // the loop's budgets leave it (loops/budget.hpp). Such a tool caps its
  // model call to it, or refuses with budget_exhausted, and reports what it
  // spent in its output's `usage` and `cost_usd`, which the loop adds to
  // its spend. Other tools ignore it.
  std::optional<Allowance> allowance;
  // build and test: the command of the loop's repository as resolved when
  // the loop was made (LoopSpec::commands); nullopt: the router resolves it.
  std::optional<std::string> command;
};

class ToolGateway {
 public:
  virtual ~ToolGateway() = default;

  // Runs one model turn's calls (all but the loop engine's own tools:
  // runner lanes, and the tools looprd hosts such as memory notes and the
  // oracle): consecutive calls that change nothing (config::changes_nothing)
  // in parallel, the others alone, in order. `repo` is the repository the
  // loop was made for (memory notes are kept per repository). Returns one tool.call result per
  // call, in call order (docs/control-protocol.md: {call_id, tool, lane, status, ok, output,
  // error?, exit_code, duration_ms, truncated}).
  virtual asio::awaitable<std::vector<nlohmann::json>> run_calls(
      const std::string& loop_id, const std::string& worktree, const std::string& repo,
      std::vector<GatewayCall> calls) = 0;
  // Runs `command` (the loop's validation, chosen by the user) with the
  // validation tool (validation_tool()) in `worktree`; a tool.call result,
  // status "error" when no enabled tool validates. `timeout_ms` (0: the
  // tool's) lowers the tool's timeout.
  virtual asio::awaitable<nlohmann::json> run_validation(const std::string& loop_id,
                                                         const std::string& worktree,
                                                         const std::string& command,
                                                         std::uint64_t timeout_ms = 0) = 0;
  // A call of the loop that waits for a lane slot ({call_id, tool, lane,
  // ahead, slots, running}), or null.
  virtual nlohmann::json waiting_call(const std::string& loop_id) const = 0;
  // A new iteration begins with a fresh context: the model has read nothing.
  virtual void start_iteration(const std::string& loop_id) = 0;
  // Cancels the loop's calls that wait or run; returns how many.
  virtual std::size_t cancel_calls(const std::string& loop_id) = 0;
  // After a restart: `output` is what a successful call of `tool` in the
  // current iteration returned before looprd stopped (from the journal), so
  // read-before-edit knows the files the model has seen, as it did then.
  virtual void restore_result(const std::string& loop_id, const std::string& worktree,
                              const std::string& tool, const nlohmann::json& output) = 0;

  // The catalog entry of an enabled tool, or nullptr.
  virtual const config::ToolSpec* find_tool(const std::string& name) const = 0;
  // The tool the loops' own validation runs on: the first enabled tool whose
  // command trait is validate (the built-in validate unless a catalog turned
  // it off), or nullptr.
  virtual const config::ToolSpec* validation_tool() const = 0;
  // Checks arguments against the tool's JSON Schema (for daemon-side tools,
  // which never reach the router): an Error naming the field.
  virtual Result<void> check_arguments(const std::string& tool,
                                       const nlohmann::json& args) const = 0;
  // [{name, description, input_schema}] of these tools, in this order.
  virtual nlohmann::json tool_definitions(const std::vector<std::string>& names) const = 0;
};

}  // namespace loopr::loops
