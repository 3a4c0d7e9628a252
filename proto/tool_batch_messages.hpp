// Typed params of tool.batch (docs/control-protocol.md): one model turn's
// tool calls in one request. parse_tool_batch_params refuses as
// invalid_params (-32602) with the messages looprd has always answered.
// Never throws.
#pragma once

#include <cstddef>
#include <nlohmann/json.hpp>
#include <optional>
#include <string>
#include <vector>

#include "common/error.hpp"

namespace loopr::proto {

inline constexpr std::size_t kMaxBatchCalls = 64;
inline constexpr std::size_t kMaxBatchToolNameBytes = 256;

struct ToolBatchCall {
  std::string tool;
  nlohmann::json args = nlohmann::json::object();  // {} when absent
  bool operator==(const ToolBatchCall&) const = default;
};

// Every call runs in `worktree`, in the read-before-edit scope of loop_id
// when set (else the connection's).
struct ToolBatchParams {
  std::vector<ToolBatchCall> calls;  // 1 to kMaxBatchCalls
  std::string worktree;
  std::optional<std::string> loop_id;
  bool operator==(const ToolBatchParams&) const = default;
};

nlohmann::json to_json(const ToolBatchParams& params);
Result<ToolBatchParams> parse_tool_batch_params(const nlohmann::json& params);

}  // namespace loopr::proto
