#include "daemon/loop_tools.hpp"

#include <limits.h>
#include <stdlib.h>

namespace loopr::daemon {

using nlohmann::json;

asio::awaitable<std::vector<json>> LoopTools::run_calls(const std::string& loop_id,
                                                        const std::string& worktree,
                                                        const std::string& repo,
                                                        std::vector<loops::GatewayCall> calls) {
  std::vector<ToolCallRequest> requests;
  requests.reserve(calls.size());
  for (auto& call : calls) {
    ToolCallRequest request;
    request.tool = std::move(call.tool);
    request.args = std::move(call.args);
    request.worktree = worktree;
    request.repo = repo;
    request.session = session_of(loop_id);
    request.loop_id = loop_id;
    request.allowance = std::move(call.allowance);
    request.command = std::move(call.command);
    requests.push_back(std::move(request));
  }
  auto outcomes = co_await router_.batch(std::move(requests));
  std::vector<json> results;
  results.reserve(outcomes.size());
  for (const auto& outcome : outcomes)
    results.push_back(outcome.to_json());
  co_return results;
}

asio::awaitable<json> LoopTools::run_validation(const std::string& loop_id,
                                                const std::string& worktree,
                                                const std::string& command,
                                                std::uint64_t timeout_ms) {
  const config::ToolSpec* tool = validation_tool();
  if (tool == nullptr) {
    ToolCallOutcome refused;
    refused.status = "error";
    refused.error =
        make_error(errc::not_found, "no enabled tool runs the loop's validation command",
                   "enable the built-in validate tool in catalog.toml, or give a tool of yours "
                   "command = \"validate\"");
    co_return refused.to_json();
  }
  ToolCallRequest request;
  request.tool = tool->name;
  request.worktree = worktree;
  request.session = session_of(loop_id);
  request.loop_id = loop_id;
  request.command = command;
  if (timeout_ms > 0) request.timeout_ms = timeout_ms;
  ToolCallOutcome outcome = co_await router_.call(std::move(request));
  co_return outcome.to_json();
}

json LoopTools::waiting_call(const std::string& loop_id) const {
  return router_.waiting_call_of_loop(loop_id);
}

void LoopTools::start_iteration(const std::string& loop_id) {
  reads_.forget_session(session_of(loop_id));
}

void LoopTools::restore_result(const std::string& loop_id, const std::string& worktree,
                               const std::string& tool, const json& output) {
  char resolved[PATH_MAX];
  if (::realpath(worktree.c_str(), resolved) == nullptr) return;
  router_.remember_result(session_of(loop_id), resolved, tool, output);
}

std::size_t LoopTools::cancel_calls(const std::string& loop_id) {
  return router_.cancel_calls_of_loop(loop_id);
}

const config::ToolSpec* LoopTools::find_tool(const std::string& name) const {
  const config::ToolSpec* tool = router_.catalog().find(name);
  return tool != nullptr && tool->enabled ? tool : nullptr;
}

const config::ToolSpec* LoopTools::validation_tool() const {
  return router_.catalog().first_enabled_with(config::ToolCommand::validate);
}

Result<void> LoopTools::check_arguments(const std::string& tool, const json& args) const {
  return router_.check_arguments(tool, args);
}

json LoopTools::tool_definitions(const std::vector<std::string>& names) const {
  try {
    return config::llm_tool_definitions(router_.catalog(), names);
  } catch (const std::exception&) {
    // A reload removed a tool the loop type names: offer what remains.
    std::vector<std::string> known;
    for (const std::string& name : names)
      if (router_.catalog().find(name) != nullptr) known.push_back(name);
    return config::llm_tool_definitions(router_.catalog(), known);
  }
}

}  // namespace loopr::daemon
