// Notifications (notify/notification.hpp): the events that need a person,
// each said once; webhook bodies for Slack- and ntfy-style templates; the
// rate limit.
#include "notify/notification.hpp"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

namespace loopr::notify {
namespace {

using nlohmann::json;
using ::testing::HasSubstr;

json loop_event(const std::string& id, const std::string& status, const std::string& type = "code",
                json budget = json::object()) {
  return {{"loop",
           {{"id", id},
            {"type", type},
            {"status", status},
            {"status_reason", status == "failed" ? "validation failed 3 times" : ""},
            {"budget", budget}}}};
}

TEST(NotificationFilter, AnApprovalWaitingIsSaidWithHowToAnswerIt) {
  NotificationFilter filter;
  const auto said = filter.on_event("approval.requested", {{"id", "a-3"},
                                                           {"tool", "run_command"},
                                                           {"loop_id", "l-7"},
                                                           {"args", {{"command", "git push"}}}});
  ASSERT_TRUE(said);
  EXPECT_EQ(said->event, "approval.needed");
  EXPECT_EQ(said->loop_id, "l-7");
  EXPECT_THAT(said->text, HasSubstr("run_command waits for your approval (a-3, loop l-7)"));
  EXPECT_THAT(said->text, HasSubstr("looprctl approve a-3"));
  EXPECT_EQ(said->data["args"]["command"], "git push");
}

TEST(NotificationFilter, ALoopsOrPlansEndAndAPlansGateAreSaidOnceEach) {
  NotificationFilter filter;
  EXPECT_FALSE(filter.on_event("loop.updated", loop_event("l-1", "running")));
  const auto ended = filter.on_event("loop.updated", loop_event("l-1", "failed"));
  ASSERT_TRUE(ended);
  EXPECT_EQ(ended->event, "loop.end");
  EXPECT_EQ(ended->text, "loopr: loop l-1 failed: validation failed 3 times");
  EXPECT_FALSE(filter.on_event("loop.updated", loop_event("l-1", "failed")));

  const auto gate = filter.on_event("loop.updated", loop_event("p1", "awaiting_approval", "plan"));
  ASSERT_TRUE(gate);
  EXPECT_EQ(gate->event, "plan.awaiting_approval");
  EXPECT_FALSE(filter.on_event("loop.updated", loop_event("p1", "awaiting_approval", "plan")));
  EXPECT_FALSE(filter.on_event("loop.updated", loop_event("p1", "running", "plan")));
  // Iterated and back at the gate: said again.
  EXPECT_TRUE(filter.on_event("loop.updated", loop_event("p1", "awaiting_approval", "plan")));
  const auto plan_end = filter.on_event("loop.updated", loop_event("p1", "completed", "plan"));
  ASSERT_TRUE(plan_end);
  EXPECT_EQ(plan_end->event, "plan.end");
  EXPECT_FALSE(filter.on_event("tool.finished", {{"loop_id", "l-1"}}));
}

TEST(NotificationFilter, ABudgetWithATenthOrLessLeftIsSaidOncePerLoop) {
  NotificationFilter filter;
  const json roomy = {{"limits", {{"usd", 5.0}}}, {"left", {{"usd", 2.0}}}};
  EXPECT_FALSE(filter.on_event("loop.updated", loop_event("l-2", "running", "code", roomy)));
  const json tight = {{"limits", {{"usd", 5.0}, {"tool_calls", 100}}},
                      {"left", {{"usd", 2.0}, {"tool_calls", 9}}}};
  const auto near = filter.on_event("loop.updated", loop_event("l-2", "running", "code", tight));
  ASSERT_TRUE(near);
  EXPECT_EQ(near->event, "budget.near_limit");
  EXPECT_THAT(near->text, HasSubstr("tool_calls: 9 of 100 left"));
  EXPECT_FALSE(filter.on_event("loop.updated", loop_event("l-2", "running", "code", tight)));
  // The loop's end is still said.
  EXPECT_TRUE(
      filter.on_event("loop.updated", loop_event("l-2", "budget_exhausted", "code", tight)));
}

TEST(WebhookBody, TheDefaultIsTheNotificationAsJson) {
  const Notification n{"loop.end", "loopr: loop l-1 completed", "l-1", {{"loop", {{"id", "l-1"}}}}};
  const json body = json::parse(webhook_body(n, ""));
  EXPECT_EQ(body["event"], "loop.end");
  EXPECT_EQ(body["text"], "loopr: loop l-1 completed");
  EXPECT_EQ(body["loop_id"], "l-1");
  EXPECT_EQ(body["data"]["loop"]["id"], "l-1");
}

TEST(WebhookBody, AJsonTemplateGetsEscapedValuesAndAPlainOneRawText) {
  const Notification n{"approval.needed", "run \"rm -rf\"\nnow", "l-1", json::object()};
  // Slack's incoming webhook: {"text": ...}
  const std::string slack = webhook_body(n, R"({"text": "{{event}}: {{text}}"})");
  const json parsed = json::parse(slack);
  EXPECT_EQ(parsed["text"], "approval.needed: run \"rm -rf\"\nnow");
  // ntfy: the message is the body itself.
  EXPECT_EQ(webhook_body(n, "{{text}} ({{loop_id}}, {{unknown}})"),
            "run \"rm -rf\"\nnow (l-1, {{unknown}})");
  // A value holding a placeholder is not expanded again.
  const Notification tricky{"loop.end", "{{text}}", "", json::object()};
  EXPECT_EQ(webhook_body(tricky, "{{text}}"), "{{text}}");
}

TEST(RateLimit, AtMostSoManyInAnyMinute) {
  RateLimit limit(3);
  const auto t0 = RateLimit::Clock::time_point{} + std::chrono::hours(1);
  EXPECT_TRUE(limit.allow(t0));
  EXPECT_TRUE(limit.allow(t0 + std::chrono::seconds(1)));
  EXPECT_TRUE(limit.allow(t0 + std::chrono::seconds(2)));
  EXPECT_FALSE(limit.allow(t0 + std::chrono::seconds(30)));
  EXPECT_EQ(limit.dropped(), 1u);
  // The first has left the window, the second not yet.
  EXPECT_TRUE(limit.allow(t0 + std::chrono::milliseconds(60'500)));
  EXPECT_FALSE(limit.allow(t0 + std::chrono::milliseconds(60'600)));
  EXPECT_EQ(limit.dropped(), 2u);
}

}  // namespace
}  // namespace loopr::notify
