// DaemonLink: how the MCP server reaches looprd. The MCP room speaks MCP and
// knows looprd's control methods (docs/control-protocol.md) by name, but not
// the socket: looprctl gives it a link over its ControlClient
// (client/mcp_daemon_link.cpp), tests give it a fake.
#pragma once

#include <functional>
#include <mutex>
#include <nlohmann/json.hpp>
#include <string>

#include "common/error.hpp"

namespace loopr::mcp {

// A pushed looprd event: tool.output, approval.requested, ...
struct DaemonEvent {
  std::string name;
  nlohmann::json data;
};

// Lets another thread end a call_tool() that is waiting: abort() runs the
// link's abort action (closing the call's connection, which makes looprd
// cancel the call) now if the call is running, or as soon as it starts.
// Thread-safe.
class CallControl {
 public:
  // Set by the link while the call runs; runs at once if abort() came first.
  void on_abort(std::function<void()> action);
  void clear();
  void abort();
  bool aborted() const;

 private:
  mutable std::mutex mutex_;
  std::function<void()> action_;
  bool aborted_ = false;
};

class DaemonLink {
 public:
  using EventHandler = std::function<void(const DaemonEvent&)>;
  virtual ~DaemonLink() = default;

  // The result of looprd's `method`; blocks until it answers. Thread-safe.
  virtual Result<nlohmann::json> request(const std::string& method,
                                         const nlohmann::json& params) = 0;
  // looprd's tool.call with `params`, on a connection of its own that sees
  // only its own calls' events (events.subscribe own_calls): each one goes to
  // `on_event` on this thread while the call runs. Blocks until the result;
  // no time limit of its own (looprd applies the tool's). Thread-safe.
  virtual Result<nlohmann::json> call_tool(const nlohmann::json& params,
                                           const EventHandler& on_event, CallControl& control) = 0;
};

}  // namespace loopr::mcp
