// LoopTools: the loop engine's ToolGateway (loops/tool_gateway.hpp) over
// looprd's ToolRouter. A loop's calls are scoped to "loop:<id>" for
// read-before-edit tracking, carry the loop's id in their tool events, and
// are batched like one model turn's calls from a client (tool.batch).
// Threads: io thread only. Holds references to objects the Daemon owns.
#pragma once

#include "daemon/read_tracker.hpp"
#include "daemon/tool_router.hpp"
#include "loops/tool_gateway.hpp"

namespace loopr::daemon {

class LoopTools : public loops::ToolGateway {
 public:
  LoopTools(ToolRouter& router, ReadTracker& reads) : router_(router), reads_(reads) {}

  asio::awaitable<std::vector<nlohmann::json>> run_calls(
      const std::string& loop_id, const std::string& worktree, const std::string& repo,
      std::vector<loops::GatewayCall> calls) override;
  asio::awaitable<nlohmann::json> run_validation(const std::string& loop_id,
                                                 const std::string& worktree,
                                                 const std::string& command,
                                                 std::uint64_t timeout_ms = 0) override;
  nlohmann::json waiting_call(const std::string& loop_id) const override;
  void start_iteration(const std::string& loop_id) override;
  std::size_t cancel_calls(const std::string& loop_id) override;
  void restore_result(const std::string& loop_id, const std::string& worktree,
                      const std::string& tool, const nlohmann::json& output) override;
  const config::ToolSpec* find_tool(const std::string& name) const override;
  const config::ToolSpec* validation_tool() const override;
  Result<void> check_arguments(const std::string& tool, const nlohmann::json& args) const override;
  nlohmann::json tool_definitions(const std::vector<std::string>& names) const override;

  // The read-before-edit scope of a loop's calls.
  static std::string session_of(const std::string& loop_id) { return "loop:" + loop_id; }

 private:
  ToolRouter& router_;
  ReadTracker& reads_;
};

}  // namespace loopr::daemon
