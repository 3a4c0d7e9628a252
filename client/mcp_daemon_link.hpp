// The MCP server's link to looprd (mcp/daemon_link.hpp) over looprctl's
// ControlClient: a small pool of initialized connections, each subscribed to
// its own calls' events (events.subscribe own_calls), so a tool call runs
// alone on one connection and every event that arrives there is about it.
//
// Contract: request() and call_tool() take an idle connection (or open one)
// and give it back when the exchange ended cleanly (a reply, or an error
// reply); a connection that failed or was aborted is dropped. At most
// kMaxIdle idle connections are kept. Thread-safe.
#pragma once

#include <cstddef>
#include <memory>
#include <mutex>
#include <string>
#include <vector>

#include "client/control_client.hpp"
#include "mcp/daemon_link.hpp"

namespace loopr::client {

class McpDaemonLink final : public mcp::DaemonLink {
 public:
  static constexpr std::size_t kMaxIdle = 8;

  McpDaemonLink(std::string socket_path, ClientTimeouts timeouts);

  Result<nlohmann::json> request(const std::string& method, const nlohmann::json& params) override;
  Result<nlohmann::json> call_tool(const nlohmann::json& params, const EventHandler& on_event,
                                   mcp::CallControl& control) override;

 private:
  Result<std::shared_ptr<ControlClient>> take();
  void give_back(std::shared_ptr<ControlClient> client);

  std::string socket_path_;
  ClientTimeouts timeouts_;
  std::mutex mutex_;
  std::vector<std::shared_ptr<ControlClient>> idle_;
};

}  // namespace loopr::client
