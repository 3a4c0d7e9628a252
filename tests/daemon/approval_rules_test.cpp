// Approval rules through the real looprd (issue 27): run_command's command
// judged by [[approval.rules]] before the tool's policy — a denied command
// fails with the rule's reason and never runs, an asked one waits for
// approval though run_command's policy is auto, an allowed one runs though
// the policy is ask.
#include <gtest/gtest.h>

#include <chrono>
#include <string>
#include <thread>

#include "tests/daemon/daemon_harness.hpp"

namespace loopr::test {
namespace {

using nlohmann::json;
using namespace std::chrono_literals;

constexpr const char* kRules =
    "[[approval.rules]]\n"
    "command = [\"touch\"]\n"
    "args_match = \"denied-marker\"\n"
    "decision = \"deny\"\n"
    "reason = \"markers are not for models\"\n"
    "\n"
    "[[approval.rules]]\n"
    "command = [\"touch\"]\n"
    "decision = \"ask\"\n"
    "reason = \"touch changes files\"\n";

class ApprovalRules : public ::testing::Test {
 protected:
  ApprovalRules() : daemon_(DaemonOptions{kRules, {}, {}}) {}
  void SetUp() override { daemon_.start(); }
  DaemonHarness daemon_;
};

TEST_F(ApprovalRules, ADeniedCommandFailsWithTheRuleAndNeverRuns) {
  const json result =
      daemon_.tool("run_command", {{"command", "echo start && sh -c 'touch denied-marker'"}});
  EXPECT_EQ(result["status"], "denied") << result.dump();
  const std::string message = result["error"]["message"];
  EXPECT_NE(message.find("markers are not for models"), std::string::npos) << message;
  EXPECT_NE(message.find("loopr.toml:"), std::string::npos) << message;
  EXPECT_NE(message.find("deny [\"touch\"]"), std::string::npos) << message;
  EXPECT_EQ(result["error"]["details"]["rule"]["decision"], "deny") << result.dump();
  EXPECT_FALSE(daemon_.tree().exists("work/repo/denied-marker"));
}

TEST_F(ApprovalRules, AnAskedCommandWaitsThoughThePolicyIsAuto) {
  auto watcher = daemon_.client();
  ASSERT_TRUE(
      watcher.call("events.subscribe", {{"topics", {"approval.requested", "tool.started"}}}));
  json result;
  std::jthread caller([&] {
    result = daemon_.tool("run_command", {{"command", "touch asked-marker"}});
  });
  auto requested = watcher.next_event(30s);
  ASSERT_TRUE(requested && *requested);
  ASSERT_EQ((**requested).event, "approval.requested");
  const json rule = (**requested).data["rule"];
  EXPECT_EQ(rule["decision"], "ask") << rule.dump();
  EXPECT_EQ(rule["reason"], "touch changes files");
  EXPECT_EQ(rule["source"], "user");
  EXPECT_FALSE(daemon_.tree().exists("work/repo/asked-marker"));
  ASSERT_TRUE(watcher.call("approval.approve", {{"id", (**requested).data["id"]}}));
  auto started = watcher.next_event(30s);
  ASSERT_TRUE(started && *started);
  EXPECT_EQ((**started).event, "tool.started");
  EXPECT_EQ((**started).data["rule"]["decision"], "ask") << (**started).data.dump();
  caller.join();
  EXPECT_EQ(result["ok"], true) << result.dump();
  EXPECT_TRUE(daemon_.tree().exists("work/repo/asked-marker"));
}

TEST_F(ApprovalRules, ACommandThatCannotBeReadWaitsAndSaysWhy) {
  auto watcher = daemon_.client();
  ASSERT_TRUE(watcher.call("events.subscribe", {{"topics", {"approval.requested"}}}));
  json result;
  std::jthread caller([&] { result = daemon_.tool("run_command", {{"command", "eval \"$X\""}}); });
  auto requested = watcher.next_event(30s);
  ASSERT_TRUE(requested && *requested);
  EXPECT_EQ((**requested).data["uncertain"], "eval runs a string as a command")
      << (**requested).data.dump();
  EXPECT_FALSE((**requested).data.contains("rule"));
  ASSERT_TRUE(watcher.call("approval.deny", {{"id", (**requested).data["id"]}}));
  caller.join();
  EXPECT_EQ(result["status"], "denied") << result.dump();
}

TEST_F(ApprovalRules, ACommandNoRuleMatchesKeepsThePolicy) {
  const json result = daemon_.tool("run_command", {{"command", "echo free"}});
  EXPECT_EQ(result["ok"], true) << result.dump();
  EXPECT_EQ(result["output"]["stdout"], "free\n");
}

TEST_F(ApprovalRules, ATrustedRepositorysRulesTightenTheUsersAndAnUntrustedOneRefuses) {
  daemon_.tree().write("work/repo/.loopr/loopr.toml",
                       "[[approval.rules]]\n"
                       "command = [\"echo\"]\n"
                       "args_match = \"release\"\n"
                       "decision = \"deny\"\n"
                       "reason = \"releases go through CI\"\n");
  const json untrusted = daemon_.tool("run_command", {{"command", "echo release"}});
  EXPECT_EQ(untrusted["status"], "denied") << untrusted.dump();
  EXPECT_EQ(untrusted["error"]["code"], "repo_settings_refused") << untrusted.dump();

  const std::string repo = daemon_.tree().path("work/repo");
  daemon_.call("repo.trust", {{"repo", repo}});
  const json denied = daemon_.tool("run_command", {{"command", "echo release"}});
  EXPECT_EQ(denied["status"], "denied") << denied.dump();
  EXPECT_EQ(denied["error"]["details"]["rule"]["source"], "repository") << denied.dump();
  EXPECT_NE(denied["error"]["message"].get<std::string>().find("releases go through CI"),
            std::string::npos);
  const json other = daemon_.tool("run_command", {{"command", "echo other"}});
  EXPECT_EQ(other["ok"], true) << other.dump();
}

TEST(ApprovalRulesAllow, AnAllowedCommandRunsThoughThePolicyIsAsk) {
  DaemonHarness daemon(
      DaemonOptions{"[approval.tools]\nrun_command = \"ask\"\n\n"
                    "[[approval.rules]]\ncommand = [\"echo\"]\ndecision = \"allow\"\n",
                    {},
                    {}});
  daemon.start();
  const json result = daemon.tool("run_command", {{"command", "echo allowed"}});
  EXPECT_EQ(result["ok"], true) << result.dump();
  EXPECT_EQ(result["output"]["stdout"], "allowed\n");
  EXPECT_EQ(daemon.call("approval.list")["approvals"].size(), 0u);
}

}  // namespace
}  // namespace loopr::test
