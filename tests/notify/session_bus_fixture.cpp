#include "tests/notify/session_bus_fixture.hpp"

#include <dbus/dbus.h>
#include <gtest/gtest.h>
#include <signal.h>
#include <spawn.h>
#include <sys/wait.h>
#include <unistd.h>

#include <array>

extern char** environ;

namespace loopr::test {

PrivateSessionBus::PrivateSessionBus() {
  const std::string socket = tree_.path("bus");
  address_ = "unix:path=" + socket;
  const std::string config = tree_.path("session.conf");
  // The smallest session bus: one socket, anyone of this user may talk.
  tree_.write("session.conf",
              "<!DOCTYPE busconfig PUBLIC \"-//freedesktop//DTD D-Bus Bus Configuration 1.0//EN\"\n"
              " \"http://www.freedesktop.org/standards/dbus/1.0/busconfig.dtd\">\n"
              "<busconfig><type>session</type><listen>" +
                  address_ +
                  "</listen><auth>EXTERNAL</auth>"
                  "<policy context=\"default\"><allow send_destination=\"*\" eavesdrop=\"true\"/>"
                  "<allow eavesdrop=\"true\"/><allow own=\"*\"/></policy></busconfig>\n");
  std::string binary = "/usr/bin/dbus-daemon", config_arg = "--config-file=" + config,
              nofork = "--nofork", nopid = "--nopidfile";
  std::array<char*, 5> argv{binary.data(), config_arg.data(), nofork.data(), nopid.data(), nullptr};
  if (::posix_spawn(&pid_, binary.c_str(), nullptr, nullptr, argv.data(), environ) != 0) {
    ADD_FAILURE() << "cannot start dbus-daemon (scripts/install-deps.sh installs it)";
    pid_ = -1;
    return;
  }
  // Ready once the socket exists.
  for (int i = 0; i < 500 && !tree_.exists("bus"); ++i)
    std::this_thread::sleep_for(std::chrono::milliseconds(10));
  if (!tree_.exists("bus")) ADD_FAILURE() << "dbus-daemon made no socket at " << socket;
}

PrivateSessionBus::~PrivateSessionBus() {
  if (pid_ > 0) {
    ::kill(pid_, SIGTERM);
    ::waitpid(pid_, nullptr, 0);
  }
}

FakeNotificationServer::FakeNotificationServer(const std::string& address) {
  DBusError error;
  dbus_error_init(&error);
  DBusConnection* connection = dbus_connection_open_private(address.c_str(), &error);
  if (connection == nullptr || !dbus_bus_register(connection, &error)) {
    ADD_FAILURE() << "the fake notification server cannot reach the bus: "
                  << (dbus_error_is_set(&error) ? error.message : "?");
    dbus_error_free(&error);
    return;
  }
  dbus_connection_set_exit_on_disconnect(connection, FALSE);
  const int owned = dbus_bus_request_name(connection, "org.freedesktop.Notifications",
                                          DBUS_NAME_FLAG_DO_NOT_QUEUE, &error);
  if (owned != DBUS_REQUEST_NAME_REPLY_PRIMARY_OWNER) {
    ADD_FAILURE() << "cannot own org.freedesktop.Notifications";
    dbus_error_free(&error);
  }
  thread_ = std::thread([this, connection] { serve(connection); });
}

FakeNotificationServer::~FakeNotificationServer() {
  stop_ = true;
  if (thread_.joinable()) thread_.join();
}

void FakeNotificationServer::serve(void* opaque) {
  auto* connection = static_cast<DBusConnection*>(opaque);
  dbus_uint32_t next_id = 1;
  while (!stop_ && dbus_connection_read_write(connection, 50)) {
    while (DBusMessage* message = dbus_connection_pop_message(connection)) {
      if (dbus_message_is_method_call(message, "org.freedesktop.Notifications", "Notify")) {
        ReceivedNotification got;
        DBusMessageIter args;
        dbus_message_iter_init(message, &args);
        const char* text = nullptr;
        int field = 0;
        do {
          const int type = dbus_message_iter_get_arg_type(&args);
          if (type == DBUS_TYPE_STRING) {
            dbus_message_iter_get_basic(&args, &text);
            if (field == 0) got.app_name = text;
            if (field == 3) got.summary = text;
            if (field == 4) got.body = text;
          } else if (type == DBUS_TYPE_ARRAY && field == 6) {
            DBusMessageIter hints;
            dbus_message_iter_recurse(&args, &hints);
            while (dbus_message_iter_get_arg_type(&hints) == DBUS_TYPE_DICT_ENTRY) {
              DBusMessageIter entry, variant;
              dbus_message_iter_recurse(&hints, &entry);
              const char* key = nullptr;
              dbus_message_iter_get_basic(&entry, &key);
              dbus_message_iter_next(&entry);
              dbus_message_iter_recurse(&entry, &variant);
              if (std::string(key) == "urgency" &&
                  dbus_message_iter_get_arg_type(&variant) == DBUS_TYPE_BYTE) {
                unsigned char urgency = 0;
                dbus_message_iter_get_basic(&variant, &urgency);
                got.urgency = urgency;
              }
              dbus_message_iter_next(&hints);
            }
          }
          ++field;
        } while (dbus_message_iter_next(&args));
        {
          std::lock_guard lock(mutex_);
          received_.push_back(std::move(got));
        }
        DBusMessage* reply = dbus_message_new_method_return(message);
        const dbus_uint32_t id = next_id++;
        dbus_message_append_args(reply, DBUS_TYPE_UINT32, &id, DBUS_TYPE_INVALID);
        dbus_connection_send(connection, reply, nullptr);
        dbus_message_unref(reply);
      }
      dbus_message_unref(message);
    }
  }
  dbus_connection_close(connection);
  dbus_connection_unref(connection);
}

std::vector<ReceivedNotification> FakeNotificationServer::received() const {
  std::lock_guard lock(mutex_);
  return received_;
}

std::vector<ReceivedNotification> FakeNotificationServer::wait_for(
    std::size_t count, std::chrono::milliseconds wait) const {
  const auto deadline = std::chrono::steady_clock::now() + wait;
  while (received().size() < count && std::chrono::steady_clock::now() < deadline)
    std::this_thread::sleep_for(std::chrono::milliseconds(20));
  return received();
}

}  // namespace loopr::test
