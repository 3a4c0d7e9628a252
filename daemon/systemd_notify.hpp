// sd_notify(3) without libsystemd: one datagram to $NOTIFY_SOCKET (a path,
// or an abstract name starting with '@'). Does nothing when the variable is
// unset, so looprd runs the same outside systemd.
#pragma once

#include <string_view>

namespace loopr::daemon {

// Sends `state` (e.g. "READY=1", "STOPPING=1"); false if it could not.
bool notify_systemd(std::string_view state);

}  // namespace loopr::daemon
