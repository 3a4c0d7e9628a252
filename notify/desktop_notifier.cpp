#include "notify/desktop_notifier.hpp"

#include <spdlog/spdlog.h>

#include <asio/post.hpp>
#include <chrono>

#include "notify/session_bus.hpp"

namespace loopr::notify {

DesktopNotifier::DesktopNotifier(asio::io_context&, config::NotifySettings settings)
    : settings_(std::move(settings)),
      address_(session_bus_address()),
      limit_(static_cast<std::size_t>(settings_.max_per_minute)) {
  if (!address_) {
    spdlog::warn(
        "notify: desktop = true, but there is no session bus (DBUS_SESSION_BUS_ADDRESS is unset "
        "and $XDG_RUNTIME_DIR/bus does not exist): no desktop notification will be shown; run "
        "looprd in your desktop session (systemctl --user), or use [notify] webhook_url");
  }
}

DesktopNotifier::~DesktopNotifier() {
  sender_.stop();
  sender_.join();
}

void DesktopNotifier::on_event(std::string_view event, const nlohmann::json& data) {
  if (!address_) return;
  std::optional<Notification> notification = filter_.on_event(event, data);
  if (!notification) return;
  if (!limit_.allow(RateLimit::Clock::now())) {
    spdlog::warn("notify: desktop notification {} dropped ({} so far): more than {} a minute",
                 notification->event, limit_.dropped(), settings_.max_per_minute);
    return;
  }
  DesktopMessage message;
  message.urgent =
      notification->event == "approval.needed" || notification->event == "plan.awaiting_approval";
  message.summary = message.urgent ? "loopr needs you" : "loopr";
  // The text starts "loopr: "; the summary says that already.
  message.body = notification->text.rfind("loopr: ", 0) == 0 ? notification->text.substr(7)
                                                             : notification->text;
  asio::post(sender_, [this, address = *address_, message, event = notification->event] {
    auto sent = send_desktop_notification(address, message, std::chrono::seconds(5));
    if (sent) {
      ++sent_;
      return;
    }
    ++failed_;
    spdlog::warn("notify: the desktop did not take {}: {}", event, sent.error().message);
  });
}

}  // namespace loopr::notify
