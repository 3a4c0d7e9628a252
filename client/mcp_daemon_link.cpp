#include "client/mcp_daemon_link.hpp"

#include <utility>

#include "client/failure.hpp"

namespace loopr::client {

using json = nlohmann::json;

McpDaemonLink::McpDaemonLink(std::string socket_path, ClientTimeouts timeouts)
    : socket_path_(std::move(socket_path)), timeouts_(timeouts) {}

Result<std::shared_ptr<ControlClient>> McpDaemonLink::take() {
  {
    std::lock_guard lock(mutex_);
    if (!idle_.empty()) {
      auto client = std::move(idle_.back());
      idle_.pop_back();
      return client;
    }
  }
  auto opened = ControlClient::open(socket_path_, timeouts_);
  if (!opened) return std::move(opened).error();
  auto client = std::make_shared<ControlClient>(std::move(*opened));
  // Not tool.started: a frame and a wake-up more per call, only to learn a
  // call id that cancelling does without (McpSession::cancel closes the
  // connection of a call looprd has not named, and looprd cancels it).
  auto subscribed = client->call<proto::methods::EventsSubscribe>(
      {{"tool.output", "approval.requested"}, std::nullopt, true});
  if (!subscribed) return std::move(subscribed).error();
  return client;
}

void McpDaemonLink::give_back(std::shared_ptr<ControlClient> client) {
  std::lock_guard lock(mutex_);
  if (idle_.size() < kMaxIdle) idle_.push_back(std::move(client));
}

Result<json> McpDaemonLink::request(const std::string& method, const json& params) {
  auto client = take();
  if (!client) return std::move(client).error();
  auto reply = (*client)->call(method, params);
  if (reply || reply.error().code == failure::rpc_error) give_back(std::move(*client));
  return reply;
}

Result<json> McpDaemonLink::call_tool(const json& params, const EventHandler& on_event,
                                      mcp::CallControl& control) {
  auto taken = take();
  if (!taken) return std::move(taken).error();
  std::shared_ptr<ControlClient> client = std::move(*taken);
  // The abort action keeps the connection alive: it may run on another
  // thread just as the call returns.
  control.on_abort([client] { client->abort(); });
  auto reply =
      client->call("tool.call", params, Milliseconds::max(), [&](const proto::Event& event) {
        on_event(mcp::DaemonEvent{event.event, event.data});
      });
  control.clear();
  const bool reusable = !control.aborted() && (reply || reply.error().code == failure::rpc_error);
  if (reusable) give_back(std::move(client));
  return reply;
}

}  // namespace loopr::client
