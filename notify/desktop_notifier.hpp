// DesktopNotifier: [notify] desktop = true — the notifications a person is
// needed for (notification.hpp: an approval waiting, a plan at its gate, a
// loop or plan that ended, a budget nearly spent) shown on the user's
// desktop through its notification server on the D-Bus session bus
// (session_bus.hpp). An approval waiting is urgent.
//
// Never fatal: without a session bus (DBUS_SESSION_BUS_ADDRESS unset and no
// $XDG_RUNTIME_DIR/bus) it says so once in the log at start and shows
// nothing; a notification the bus or the server does not take is logged.
// Past max_per_minute in any minute the rest are dropped, and logged.
//
// Threads: on_event runs on the io thread; the D-Bus call runs on a worker
// thread of its own, so a slow or hung server never holds up looprd.
#pragma once

#include <asio/io_context.hpp>
#include <asio/thread_pool.hpp>
#include <atomic>
#include <nlohmann/json.hpp>
#include <optional>
#include <string>
#include <string_view>

#include "config/settings.hpp"
#include "notify/notification.hpp"

namespace loopr::notify {

class DesktopNotifier {
 public:
  static constexpr const char* kTopics[] = {"approval.requested", "loop.updated"};

  DesktopNotifier(asio::io_context& io, config::NotifySettings settings);
  ~DesktopNotifier();

  void on_event(std::string_view event, const nlohmann::json& data);

  std::size_t sent() const { return sent_; }
  std::size_t failed() const { return failed_; }

 private:
  config::NotifySettings settings_;
  std::optional<std::string> address_;
  NotificationFilter filter_;
  RateLimit limit_;
  asio::thread_pool sender_{1};
  std::atomic<std::size_t> sent_{0};
  std::atomic<std::size_t> failed_{0};
};

}  // namespace loopr::notify
