#include "proto/tool_batch_messages.hpp"

#include <utility>

#include "proto/control_messages.hpp"

namespace loopr::proto {

using nlohmann::json;

json to_json(const ToolBatchParams& params) {
  json calls = json::array();
  for (const ToolBatchCall& call : params.calls)
    calls.push_back({{"tool", call.tool}, {"args", call.args}});
  json out = {{"calls", std::move(calls)}, {"worktree", params.worktree}};
  if (params.loop_id) out["loop_id"] = *params.loop_id;
  return out;
}

Result<ToolBatchParams> parse_tool_batch_params(const json& params) {
  auto calls = params.find("calls");
  if (calls == params.end() || !calls->is_array() || calls->empty()) {
    return invalid_params("tool.batch needs `calls`, a non-empty array of {tool, args}");
  }
  if (calls->size() > kMaxBatchCalls) {
    return invalid_params("tool.batch takes at most " + std::to_string(kMaxBatchCalls) +
                              " calls, got " + std::to_string(calls->size()),
                          "split the calls into several batches");
  }
  auto worktree = params.find("worktree");
  if (worktree == params.end() || !worktree->is_string()) {
    return invalid_params("tool.batch needs `worktree`, an absolute path");
  }
  ToolBatchParams out;
  out.worktree = worktree->get<std::string>();
  if (auto loop_id = params.find("loop_id"); loop_id != params.end()) {
    if (!loop_id->is_string()) return invalid_params("loop_id must be a string");
    out.loop_id = loop_id->get<std::string>();
  }
  std::size_t index = 0;
  for (const json& call : *calls) {
    auto tool = call.is_object() ? call.find("tool") : call.end();
    auto args = call.is_object() ? call.find("args") : call.end();
    if (!call.is_object() || tool == call.end() || !tool->is_string() ||
        tool->get_ref<const std::string&>().empty() ||
        tool->get_ref<const std::string&>().size() > kMaxBatchToolNameBytes ||
        (args != call.end() && !args->is_object())) {
      return invalid_params("calls[" + std::to_string(index) + "] must be {tool: string of 1 to " +
                            std::to_string(kMaxBatchToolNameBytes) + " bytes, args?: object}");
    }
    out.calls.push_back(
        ToolBatchCall{tool->get<std::string>(), args != call.end() ? *args : json::object()});
    ++index;
  }
  return out;
}

}  // namespace loopr::proto
