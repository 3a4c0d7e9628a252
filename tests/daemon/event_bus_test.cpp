#include "daemon/event_bus.hpp"

#include <gtest/gtest.h>

namespace loopr::daemon {
namespace {

TEST(EventBus, TopicsMatchTheirNameAndEverythingBelowIt) {
  EXPECT_TRUE(EventBus::topic_matches("tool", "tool.started"));
  EXPECT_TRUE(EventBus::topic_matches("tool.started", "tool.started"));
  EXPECT_FALSE(EventBus::topic_matches("tool.started", "tool.finished"));
  EXPECT_FALSE(EventBus::topic_matches("too", "tool.started"));
  EXPECT_FALSE(EventBus::topic_matches("tool", "toolbox.x"));
}

TEST(EventBus, DeliversEncodedLinesToMatchingSubscribersOnly) {
  EventBus bus;
  std::vector<std::string> all, tools;
  bus.subscribe({}, [&](const std::string& line) { all.push_back(line); });
  auto id = bus.subscribe({"tool"}, [&](const std::string& line) { tools.push_back(line); });
  bus.publish("tool.started", {{"call_id", "c-1"}});
  bus.publish("approval.requested", {{"id", "a-1"}});
  ASSERT_EQ(all.size(), 2u);
  ASSERT_EQ(tools.size(), 1u);
  EXPECT_EQ(tools[0], "{\"data\":{\"call_id\":\"c-1\"},\"event\":\"tool.started\"}\n");
  bus.unsubscribe(id);
  bus.publish("tool.finished", {});
  EXPECT_EQ(tools.size(), 1u);
  EXPECT_EQ(all.size(), 3u);
}

TEST(EventBus, ASinkMayUnsubscribeAnotherWhileAnEventIsDelivered) {
  EventBus bus;
  int second_calls = 0;
  EventBus::SubscriptionId second = 0;
  bus.subscribe({}, [&](const std::string&) { bus.unsubscribe(second); });
  second = bus.subscribe({}, [&](const std::string&) { ++second_calls; });
  bus.publish("tool.started", {});
  EXPECT_EQ(second_calls, 0);
  EXPECT_EQ(bus.subscriber_count(), 1u);
}

TEST(EventBus, NothingIsEncodedWithoutSubscribers) {
  EventBus bus;
  EXPECT_FALSE(bus.has_subscribers("tool.output"));
  bus.subscribe({"approval"}, [](const std::string&) {});
  EXPECT_FALSE(bus.has_subscribers("tool.output"));
  EXPECT_TRUE(bus.has_subscribers("approval.requested"));
}

}  // namespace
}  // namespace loopr::daemon
