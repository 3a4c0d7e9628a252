// A desktop notification on a real (private) session bus
// (notify/session_bus.hpp): the Notify call's arguments as a notification
// server receives them, and what happens without a server or a bus.
#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include "notify/session_bus.hpp"
#include "tests/notify/session_bus_fixture.hpp"

namespace loopr::notify {
namespace {

using namespace std::chrono_literals;
using ::testing::HasSubstr;

TEST(DesktopNotification, TheServerReceivesSummaryBodyAndUrgency) {
  test::PrivateSessionBus bus;
  test::FakeNotificationServer server(bus.address());
  auto sent = send_desktop_notification(
      bus.address(), {"loopr needs you", "run_command waits for your approval (a-1)", true}, 5s);
  ASSERT_TRUE(sent) << sent.error().message;
  EXPECT_EQ(*sent, 1u);
  const auto received = server.wait_for(1, 5s);
  ASSERT_EQ(received.size(), 1u);
  EXPECT_EQ(received[0].app_name, "loopr");
  EXPECT_EQ(received[0].summary, "loopr needs you");
  EXPECT_EQ(received[0].body, "run_command waits for your approval (a-1)");
  EXPECT_EQ(received[0].urgency, 2);
}

TEST(DesktopNotification, ABusWithoutANotificationServerIsAClearError) {
  test::PrivateSessionBus bus;
  auto sent = send_desktop_notification(bus.address(), {"loopr", "x", false}, 2s);
  ASSERT_FALSE(sent);
  EXPECT_THAT(sent.error().message, HasSubstr("no notification server answered"));
  EXPECT_THAT(sent.error().hint, HasSubstr("webhook_url"));
}

TEST(DesktopNotification, NoBusIsAClearError) {
  test::TempTree tree;
  auto sent = send_desktop_notification("unix:path=" + tree.path("no-bus"), {"loopr", "x"}, 2s);
  ASSERT_FALSE(sent);
  EXPECT_THAT(sent.error().message, HasSubstr("cannot reach the session bus"));
}

TEST(DesktopNotification, TheAddressComesFromTheEnvironment) {
  test::TempTree tree;
  ::setenv("DBUS_SESSION_BUS_ADDRESS", "unix:path=/run/x/bus", 1);
  EXPECT_EQ(session_bus_address(), "unix:path=/run/x/bus");
  ::unsetenv("DBUS_SESSION_BUS_ADDRESS");
  ::setenv("XDG_RUNTIME_DIR", tree.root().c_str(), 1);
  EXPECT_EQ(session_bus_address(), std::nullopt);  // no bus socket there
  ::unsetenv("XDG_RUNTIME_DIR");
}

}  // namespace
}  // namespace loopr::notify
