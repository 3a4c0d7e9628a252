// A private D-Bus session bus for tests (the real dbus-daemon, on a socket
// in a temporary folder) and a notification server on it that records every
// org.freedesktop.Notifications.Notify call, as a desktop's would receive
// them (the Desktop Notifications Specification's arguments).
#pragma once

#include <sys/types.h>

#include <atomic>
#include <chrono>
#include <cstdint>
#include <mutex>
#include <string>
#include <thread>
#include <vector>

#include "tests/support/temp_tree.hpp"

namespace loopr::test {

class PrivateSessionBus {
 public:
  PrivateSessionBus();  // fails the test when dbus-daemon cannot start
  ~PrivateSessionBus();
  PrivateSessionBus(const PrivateSessionBus&) = delete;
  PrivateSessionBus& operator=(const PrivateSessionBus&) = delete;

  const std::string& address() const { return address_; }

 private:
  TempTree tree_;
  std::string address_;
  pid_t pid_ = -1;
};

struct ReceivedNotification {
  std::string app_name;
  std::string summary;
  std::string body;
  int urgency = -1;  // the hint's byte; -1 when absent
};

class FakeNotificationServer {
 public:
  // Owns org.freedesktop.Notifications on the bus at `address`; serves on a
  // thread of its own until destroyed.
  explicit FakeNotificationServer(const std::string& address);
  ~FakeNotificationServer();
  FakeNotificationServer(const FakeNotificationServer&) = delete;
  FakeNotificationServer& operator=(const FakeNotificationServer&) = delete;

  std::vector<ReceivedNotification> received() const;
  // Waits (bounded) until `count` notifications arrived; what arrived.
  std::vector<ReceivedNotification> wait_for(std::size_t count,
                                             std::chrono::milliseconds wait) const;

 private:
  void serve(void* connection);

  mutable std::mutex mutex_;
  std::vector<ReceivedNotification> received_;
  std::atomic<bool> stop_{false};
  std::atomic<bool> ready_{false};
  std::thread thread_;
};

}  // namespace loopr::test
