#include "notify/session_bus.hpp"

#include <dbus/dbus.h>
#include <sys/stat.h>

#include <cstdlib>
#include <memory>

namespace loopr::notify {
namespace {

// DBusError that frees itself.
struct BusError {
  DBusError error;
  BusError() { dbus_error_init(&error); }
  ~BusError() { dbus_error_free(&error); }
  BusError(const BusError&) = delete;
  BusError& operator=(const BusError&) = delete;
  std::string text() const {
    return dbus_error_is_set(&error) ? std::string(error.name) + ": " + error.message
                                     : std::string("unknown D-Bus error");
  }
};

struct ConnectionCloser {
  void operator()(DBusConnection* connection) const {
    dbus_connection_close(connection);
    dbus_connection_unref(connection);
  }
};
struct MessageUnref {
  void operator()(DBusMessage* message) const { dbus_message_unref(message); }
};
using Connection = std::unique_ptr<DBusConnection, ConnectionCloser>;
using Message = std::unique_ptr<DBusMessage, MessageUnref>;

Error bus_error(const std::string& what, const std::string& detail) {
  return make_error(errc::io, "desktop notification: " + what + " (" + detail + ")",
                    "a desktop session with a notification server shows them; on a machine "
                    "without one, set [notify] desktop = false or use webhook_url");
}

// Appends the Notify arguments: (s app_name, u replaces_id, s app_icon,
// s summary, s body, as actions, a{sv} hints, i expire_timeout).
bool append_arguments(DBusMessage* message, const DesktopMessage& shown) {
  DBusMessageIter args;
  dbus_message_iter_init_append(message, &args);
  const char* app = "loopr";
  const char* icon = "";
  const char* summary = shown.summary.c_str();
  const char* body = shown.body.c_str();
  const dbus_uint32_t replaces = 0;
  const dbus_int32_t expire = -1;  // the server's default
  if (!dbus_message_iter_append_basic(&args, DBUS_TYPE_STRING, &app) ||
      !dbus_message_iter_append_basic(&args, DBUS_TYPE_UINT32, &replaces) ||
      !dbus_message_iter_append_basic(&args, DBUS_TYPE_STRING, &icon) ||
      !dbus_message_iter_append_basic(&args, DBUS_TYPE_STRING, &summary) ||
      !dbus_message_iter_append_basic(&args, DBUS_TYPE_STRING, &body)) {
    return false;
  }
  DBusMessageIter actions;
  if (!dbus_message_iter_open_container(&args, DBUS_TYPE_ARRAY, DBUS_TYPE_STRING_AS_STRING,
                                        &actions) ||
      !dbus_message_iter_close_container(&args, &actions)) {
    return false;
  }
  DBusMessageIter hints;
  if (!dbus_message_iter_open_container(&args, DBUS_TYPE_ARRAY, "{sv}", &hints)) return false;
  // urgency: a byte, 0 low, 1 normal, 2 critical.
  DBusMessageIter entry, variant;
  const char* key = "urgency";
  const unsigned char urgency = shown.urgent ? 2 : 1;
  if (!dbus_message_iter_open_container(&hints, DBUS_TYPE_DICT_ENTRY, nullptr, &entry) ||
      !dbus_message_iter_append_basic(&entry, DBUS_TYPE_STRING, &key) ||
      !dbus_message_iter_open_container(&entry, DBUS_TYPE_VARIANT, DBUS_TYPE_BYTE_AS_STRING,
                                        &variant) ||
      !dbus_message_iter_append_basic(&variant, DBUS_TYPE_BYTE, &urgency) ||
      !dbus_message_iter_close_container(&entry, &variant) ||
      !dbus_message_iter_close_container(&hints, &entry) ||
      !dbus_message_iter_close_container(&args, &hints)) {
    return false;
  }
  return dbus_message_iter_append_basic(&args, DBUS_TYPE_INT32, &expire);
}

}  // namespace

std::optional<std::string> session_bus_address() {
  if (const char* address = std::getenv("DBUS_SESSION_BUS_ADDRESS");
      address != nullptr && address[0] != '\0') {
    return std::string(address);
  }
  const char* runtime = std::getenv("XDG_RUNTIME_DIR");
  if (runtime == nullptr || runtime[0] != '/') return std::nullopt;
  const std::string socket = std::string(runtime) + "/bus";
  struct stat st {};
  if (::stat(socket.c_str(), &st) != 0 || !S_ISSOCK(st.st_mode)) return std::nullopt;
  return "unix:path=" + socket;
}

Result<std::uint32_t> send_desktop_notification(const std::string& address,
                                                const DesktopMessage& shown,
                                                std::chrono::milliseconds timeout) {
  BusError error;
  Connection connection(dbus_connection_open_private(address.c_str(), &error.error));
  if (!connection) return bus_error("cannot reach the session bus", error.text());
  // A daemon's connection must never end the daemon when the bus goes away.
  dbus_connection_set_exit_on_disconnect(connection.get(), FALSE);
  if (!dbus_bus_register(connection.get(), &error.error)) {
    return bus_error("the session bus did not accept loopr", error.text());
  }
  Message call(dbus_message_new_method_call("org.freedesktop.Notifications",
                                            "/org/freedesktop/Notifications",
                                            "org.freedesktop.Notifications", "Notify"));
  if (!call || !append_arguments(call.get(), shown)) {
    return bus_error("cannot build the Notify call", "out of memory");
  }
  Message reply(dbus_connection_send_with_reply_and_block(
      connection.get(), call.get(), static_cast<int>(timeout.count()), &error.error));
  if (!reply) return bus_error("no notification server answered", error.text());
  dbus_uint32_t id = 0;
  if (!dbus_message_get_args(reply.get(), &error.error, DBUS_TYPE_UINT32, &id, DBUS_TYPE_INVALID)) {
    return bus_error("the notification server's answer is not an id", error.text());
  }
  return static_cast<std::uint32_t>(id);
}

}  // namespace loopr::notify
