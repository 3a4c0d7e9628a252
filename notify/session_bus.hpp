// One freedesktop notification sent on the user's D-Bus session bus:
// org.freedesktop.Notifications.Notify (the Desktop Notifications
// Specification), through libdbus, the bus's reference library (Debian's
// libdbus-1; a notification is one method call, so the low-level API is
// enough and no binding is needed).
//
// Blocking: connects, registers with the bus, calls Notify, waits for its
// reply (bounded by `timeout`), disconnects. Call it from a worker thread.
// Thread-safe: each call has a private connection of its own.
#pragma once

#include <chrono>
#include <cstdint>
#include <optional>
#include <string>

#include "common/error.hpp"

namespace loopr::notify {

// The session bus's address: $DBUS_SESSION_BUS_ADDRESS, else
// unix:path=$XDG_RUNTIME_DIR/bus when that socket exists (systemd's user
// bus); nullopt when there is none (a server, a CI machine).
std::optional<std::string> session_bus_address();

struct DesktopMessage {
  std::string summary;  // a title
  std::string body;     // one line
  bool urgent = false;  // urgency hint "critical" (a person is needed now)
};

// The notification's id from the notification server; an error saying what
// failed (no bus, no notification server on it, a timeout).
Result<std::uint32_t> send_desktop_notification(const std::string& address,
                                                const DesktopMessage& message,
                                                std::chrono::milliseconds timeout);

}  // namespace loopr::notify
