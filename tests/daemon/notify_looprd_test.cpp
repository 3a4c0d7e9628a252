// [notify] through the real looprd (issue 27): a local HTTP server stands in
// for the webhook (Slack, ntfy, ...) and receives a POST when a loop's call
// waits for approval and when the loop ends; a failing webhook is logged and
// changes nothing for the loop; past max_per_minute the rest are dropped and
// the drop is logged.
#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <chrono>
#include <cstdlib>
#include <thread>

#include "tests/daemon/daemon_harness.hpp"
#include "tests/daemon/loop_fixture.hpp"
#include "tests/notify/session_bus_fixture.hpp"
#include "tests/support/scripted_http_server.hpp"

namespace loopr::test {
namespace {

using nlohmann::json;
using ::testing::HasSubstr;

// A loop whose first call (run_command, policy ask) waits for approval,
// then solves the sample task.
std::vector<json> approval_then_solving_turns() {
  return {turn({tool_call("x1", "run_command", {{"command", "echo checked"}})}),
          turn({tool_call("r1", "read_file", {{"path", "answer.txt"}})}),
          turn({tool_call("e1", "edit_file",
                          {{"path", "answer.txt"}, {"old_string", "41"}, {"new_string", "42"}})}),
          turn({tool_call("c1", "complete_task", {{"summary", "42"}})})};
}

std::string notify_toml(const ScriptedHttpServer& webhook, const std::string& extra = "") {
  return "[approval.tools]\nrun_command = \"ask\"\n[notify]\nwebhook_url = \"" +
         webhook.base_url() + "/hooks/T0/B0/secret\"\n" + extra;
}

// Waits for `count` requests at the webhook (a notification is sent on its
// own coroutine, after the event): the condition itself, with a deadline.
std::vector<RecordedRequest> wait_for_requests(const ScriptedHttpServer& webhook,
                                               std::size_t count) {
  const auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(20);
  while (webhook.requests().size() < count && std::chrono::steady_clock::now() < deadline) {
    std::this_thread::sleep_for(std::chrono::milliseconds(20));
  }
  return webhook.requests();
}

// Approves the first waiting call, once there is one.
void approve_when_asked(const DaemonHarness& daemon) {
  const auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(20);
  while (std::chrono::steady_clock::now() < deadline) {
    const json pending = daemon.call("approval.list")["approvals"];
    if (pending.is_array() && !pending.empty()) {
      daemon.call("approval.approve", {{"id", pending[0]["id"]}});
      return;
    }
    std::this_thread::sleep_for(std::chrono::milliseconds(20));
  }
  ADD_FAILURE() << "no call waited for approval";
}

TEST(NotifyLooprd, TheWebhookHearsOfTheApprovalWaitingAndOfTheLoopsEnd) {
  ScriptedHttpServer webhook([](const RecordedRequest&) { return ScriptedReply::json(200, "ok"); });
  TempTree scripts;
  SampleRepo repo;
  auto daemon = start_scripted_looprd(scripts, {{"scripted", approval_then_solving_turns()}},
                                      notify_toml(webhook), repo);
  const std::string id = create_loop(*daemon, repo.path)["id"];
  approve_when_asked(*daemon);
  EXPECT_EQ(wait_final(*daemon, id)["status"], "completed");

  const auto requests = wait_for_requests(webhook, 2);
  ASSERT_EQ(requests.size(), 2u);
  EXPECT_EQ(requests[0].method, "POST");
  EXPECT_EQ(requests[0].path, "/hooks/T0/B0/secret");
  EXPECT_EQ(requests[0].headers.at("content-type"), "application/json");
  const json asked = json::parse(requests[0].body);
  EXPECT_EQ(asked["event"], "approval.needed");
  EXPECT_EQ(asked["loop_id"], id);
  EXPECT_EQ(asked["data"]["tool"], "run_command");
  EXPECT_THAT(asked["text"].get<std::string>(), HasSubstr("looprctl approve"));
  const json ended = json::parse(requests[1].body);
  EXPECT_EQ(ended["event"], "loop.end");
  EXPECT_EQ(ended["loop_id"], id);
  EXPECT_EQ(ended["data"]["loop"]["status"], "completed");
  // The URL's token never reaches the log.
  EXPECT_THAT(daemon->log(), ::testing::Not(HasSubstr("secret")));
}

TEST(NotifyLooprd, TheDesktopShowsTheApprovalWaitingAndTheLoopsEnd) {
  PrivateSessionBus bus;
  FakeNotificationServer server(bus.address());
  ASSERT_EQ(::setenv("DBUS_SESSION_BUS_ADDRESS", bus.address().c_str(), 1), 0);
  TempTree scripts;
  SampleRepo repo;
  auto daemon = start_scripted_looprd(scripts, {{"scripted", approval_then_solving_turns()}},
                                      "[approval.tools]\nrun_command = \"ask\"\n"
                                      "[notify]\ndesktop = true\n",
                                      repo);
  ::unsetenv("DBUS_SESSION_BUS_ADDRESS");
  const std::string id = create_loop(*daemon, repo.path)["id"];
  approve_when_asked(*daemon);
  EXPECT_EQ(wait_final(*daemon, id)["status"], "completed");
  const auto shown = server.wait_for(2, std::chrono::seconds(20));
  ASSERT_EQ(shown.size(), 2u) << daemon->log();
  EXPECT_EQ(shown[0].summary, "loopr needs you");
  EXPECT_THAT(shown[0].body, HasSubstr("run_command waits for your approval"));
  EXPECT_EQ(shown[0].urgency, 2);
  EXPECT_EQ(shown[1].summary, "loopr");
  EXPECT_THAT(shown[1].body, HasSubstr("loop " + id + " completed"));
  EXPECT_EQ(shown[1].urgency, 1);
}

TEST(NotifyLooprd, WithoutASessionBusTheDesktopIsSkippedAndSaysSo) {
  const char* had = std::getenv("DBUS_SESSION_BUS_ADDRESS");
  const std::string saved = had != nullptr ? had : "";
  ::unsetenv("DBUS_SESSION_BUS_ADDRESS");
  TempTree runtime;  // no bus socket in it
  const char* had_runtime = std::getenv("XDG_RUNTIME_DIR");
  const std::string saved_runtime = had_runtime != nullptr ? had_runtime : "";
  ::setenv("XDG_RUNTIME_DIR", runtime.root().c_str(), 1);
  TempTree scripts;
  SampleRepo repo;
  auto daemon = start_scripted_looprd(scripts, {{"scripted", approval_then_solving_turns()}},
                                      "[approval.tools]\nrun_command = \"ask\"\n"
                                      "[notify]\ndesktop = true\n",
                                      repo);
  if (had != nullptr) ::setenv("DBUS_SESSION_BUS_ADDRESS", saved.c_str(), 1);
  if (had_runtime != nullptr) {
    ::setenv("XDG_RUNTIME_DIR", saved_runtime.c_str(), 1);
  } else {
    ::unsetenv("XDG_RUNTIME_DIR");
  }
  const std::string id = create_loop(*daemon, repo.path)["id"];
  approve_when_asked(*daemon);
  EXPECT_EQ(wait_final(*daemon, id)["status"], "completed");
  EXPECT_THAT(daemon->log(), HasSubstr("no desktop notification will be shown"));
}

TEST(NotifyLooprd, TheWebhookHearsWhenALoopsBudgetIsNearlySpent) {
  ScriptedHttpServer webhook([](const RecordedRequest&) { return ScriptedReply::json(200, "ok"); });
  TempTree scripts;
  SampleRepo repo;
  // 9 of 10 tool calls after the second turn: a tenth left, and the last
  // call still fits.
  std::vector<json> reads;
  for (int i = 1; i <= 8; ++i)
    reads.push_back(read_call("r" + std::to_string(i)));
  const std::vector<json> turns = {turn(reads), turn({edit_call("e1")}),
                                   turn({complete_call("c1")})};
  auto daemon = start_scripted_looprd(
      scripts, {{"scripted", turns}},
      "[notify]\nwebhook_url = \"" + webhook.base_url() + "/hook\"\n", repo);
  const std::string id = create_loop(*daemon, repo.path, {{"budget", {{"tool_calls", 10}}}})["id"];
  const json ended_loop = wait_final(*daemon, id);
  EXPECT_EQ(ended_loop["status"], "completed") << ended_loop.dump();
  const auto requests = wait_for_requests(webhook, 2);
  ASSERT_EQ(requests.size(), 2u) << (requests.empty() ? "" : requests[0].body);
  const json warned = json::parse(requests[0].body);
  EXPECT_EQ(warned["event"], "budget.near_limit");
  EXPECT_EQ(warned["loop_id"], id);
  EXPECT_THAT(warned["text"].get<std::string>(), HasSubstr("nearly spent its budget (tool_calls: 1 of 10 left)"));
  EXPECT_EQ(json::parse(requests[1].body)["event"], "loop.end");
}

TEST(NotifyLooprd, AFailingWebhookIsLoggedAndTheLoopGoesOn) {
  ScriptedHttpServer webhook(
      [](const RecordedRequest&) { return ScriptedReply::json(500, R"({"error":"down"})"); });
  TempTree scripts;
  SampleRepo repo;
  auto daemon = start_scripted_looprd(
      scripts, {{"scripted", approval_then_solving_turns()}},
      notify_toml(webhook, "webhook_body = '{\"text\": \"{{text}}\"}'\n"), repo);
  const std::string id = create_loop(*daemon, repo.path)["id"];
  approve_when_asked(*daemon);
  EXPECT_EQ(wait_final(*daemon, id)["status"], "completed");
  const auto requests = wait_for_requests(webhook, 2);
  ASSERT_EQ(requests.size(), 2u);
  // The Slack-style template: {"text": "..."} with the sentence in it.
  EXPECT_THAT(json::parse(requests[0].body)["text"].get<std::string>(),
              HasSubstr("waits for your approval"));
  const auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(10);
  while (daemon->log().find("the webhook answered loop.end with HTTP 500") == std::string::npos &&
         std::chrono::steady_clock::now() < deadline) {
    std::this_thread::sleep_for(std::chrono::milliseconds(20));
  }
  EXPECT_THAT(daemon->log(), HasSubstr("the webhook answered loop.end with HTTP 500"));
}

TEST(NotifyLooprd, PastTheRateLimitNotificationsAreDroppedAndTheDropIsLogged) {
  ScriptedHttpServer webhook([](const RecordedRequest&) { return ScriptedReply::json(200, "ok"); });
  TempTree scripts;
  SampleRepo repo;
  auto daemon = start_scripted_looprd(scripts, {{"scripted", approval_then_solving_turns()}},
                                      notify_toml(webhook, "max_per_minute = 1\n"), repo);
  const std::string id = create_loop(*daemon, repo.path)["id"];
  approve_when_asked(*daemon);
  EXPECT_EQ(wait_final(*daemon, id)["status"], "completed");
  EXPECT_THAT(daemon->log(), HasSubstr("notify: dropped loop.end"));
  const auto requests = wait_for_requests(webhook, 1);
  ASSERT_EQ(requests.size(), 1u);
  EXPECT_EQ(json::parse(requests[0].body)["event"], "approval.needed");
}

}  // namespace
}  // namespace loopr::test
