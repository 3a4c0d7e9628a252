// `looprctl approve ID --always` against the real looprd and looprctl
// (issue 27): it shows the narrowest rule for the waiting command and saves
// it only when the person says yes; the same command then runs without
// asking while a broader one still asks; the rule is scoped to the
// repository, listed and forgotten with `looprctl policy rules|forget`,
// counted by `policy check --repo`; and it is refused, saying why, where no
// exact rule could say what was approved or where a rule of the user's asks.
#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <chrono>
#include <thread>

#include "tests/client/looprctl_run.hpp"
#include "tests/daemon/daemon_harness.hpp"

namespace loopr::test {
namespace {

using nlohmann::json;
using namespace std::chrono_literals;
using ::testing::HasSubstr;

class ApproveAlways : public ::testing::Test {
 protected:
  explicit ApproveAlways(std::string extra = "")
      : daemon_(DaemonOptions{
            "[approval.tools]\nrun_command = \"ask\"\nrun_command_isolated = \"ask\"\n" + extra,
            {},
            {}}) {}
  void SetUp() override { daemon_.start(); }

  CtlRun ctl(std::vector<std::string> args, std::string stdin_text = "") {
    args.insert(args.begin(), {"--socket", daemon_.socket_path()});
    CtlOptions options;
    options.config_dir = daemon_.tree().path("ctl-config");
    options.state_dir = daemon_.tree().path("ctl-state");
    options.stdin_text = std::move(stdin_text);
    options.env["COLUMNS"] = "200";
    return run_looprctl(args, options);
  }

  // The id of the first call waiting for approval ("" after 20 s).
  std::string waiting_id() {
    const auto deadline = std::chrono::steady_clock::now() + 20s;
    while (std::chrono::steady_clock::now() < deadline) {
      const json pending = daemon_.call("approval.list")["approvals"];
      if (pending.is_array() && !pending.empty()) return pending[0]["id"];
      std::this_thread::sleep_for(20ms);
    }
    return "";
  }

  // Runs `command` with run_command on a thread of its own.
  std::jthread call(const std::string& command, json& result) {
    return std::jthread([this, command, &result] {
      result = daemon_.tool("run_command", {{"command", command}});
    });
  }

  DaemonHarness daemon_;
};

TEST_F(ApproveAlways, TheExactCommandStopsAskingAndNothingBroaderDoes) {
  json first;
  {
    std::jthread caller = call("echo hi", first);
    const std::string id = waiting_id();
    ASSERT_FALSE(id.empty());
    const CtlRun approved = ctl({"approve", id, "--always"}, "y\n");
    EXPECT_EQ(approved.exit_code, 0) << approved.out << approved.err;
    // Shown before it is saved, then saved and approved.
    EXPECT_THAT(approved.out, HasSubstr("would save 1 rule for "));
    EXPECT_THAT(approved.out, HasSubstr("allow exactly [\"echo\", \"hi\"] (run_command)"));
    EXPECT_THAT(approved.out,
                HasSubstr("saved rule 1: allow exactly [\"echo\", \"hi\"] (run_command)"));
    EXPECT_THAT(approved.out, HasSubstr("approved " + id));
  }
  EXPECT_EQ(first["status"], "success") << first.dump();

  // The same command runs without asking (an ask would time out: denied).
  const json again = daemon_.tool("run_command", {{"command", "echo hi"}});
  EXPECT_EQ(again["status"], "success") << again.dump();
  EXPECT_EQ(again["output"]["stdout"], "hi\n");

  // A broader one still asks.
  json broader;
  {
    std::jthread caller = call("echo hi && echo more", broader);
    const std::string id = waiting_id();
    ASSERT_FALSE(id.empty()) << "echo hi && echo more ran without asking";
    daemon_.call("approval.deny", {{"id", id}, {"reason", "no"}});
  }
  EXPECT_EQ(broader["status"], "denied");

  // Only for the tool approved: the same command in the other one asks.
  json isolated;
  {
    std::jthread caller([this, &isolated] {
      isolated = daemon_.tool("run_command_isolated", {{"command", "echo hi"}});
    });
    const std::string id = waiting_id();
    ASSERT_FALSE(id.empty()) << "run_command's rule let run_command_isolated run without asking";
    daemon_.call("approval.deny", {{"id", id}});
  }
  EXPECT_EQ(isolated["status"], "denied");

  // Listed, counted by policy check, forgotten.
  const CtlRun listed = ctl({"policy", "rules"});
  EXPECT_EQ(listed.exit_code, 0) << listed.err;
  EXPECT_THAT(listed.out, HasSubstr("allow [\"echo\",\"hi\"] exactly (run_command)"));
  const CtlRun listed_json = ctl({"--json", "policy", "rules"});
  ASSERT_EQ(listed_json.exit_code, 0) << listed_json.err;
  const json rows = json::parse(listed_json.out)["rules"];
  ASSERT_EQ(rows.size(), 1u);
  EXPECT_EQ(rows[0]["repo"], daemon_.worktree());
  EXPECT_EQ(rows[0]["rule"]["tool"], "run_command");
  const CtlRun checked = ctl({"policy", "check", "--repo", daemon_.worktree(), "--", "echo hi"});
  EXPECT_EQ(checked.exit_code, 0) << checked.out << checked.err;
  EXPECT_THAT(checked.out, HasSubstr("saved rule 1"));
  const CtlRun forgot = ctl({"policy", "forget", "1"});
  EXPECT_EQ(forgot.exit_code, 0) << forgot.err;
  EXPECT_EQ(ctl({"policy", "forget", "1"}).exit_code, 1);
  json asked_again;
  {
    std::jthread caller = call("echo hi", asked_again);
    const std::string id = waiting_id();
    ASSERT_FALSE(id.empty()) << "a forgotten rule still allowed echo hi";
    daemon_.call("approval.approve", {{"id", id}});
  }
  EXPECT_EQ(asked_again["status"], "success");
}

TEST_F(ApproveAlways, AnsweringNoSavesNothingAndTheCallStillWaits) {
  json result;
  std::jthread caller = call("echo hi", result);
  const std::string id = waiting_id();
  ASSERT_FALSE(id.empty());
  const CtlRun declined = ctl({"approve", id, "--always"}, "n\n");
  EXPECT_EQ(declined.exit_code, 1);
  EXPECT_THAT(declined.out, HasSubstr("nothing saved; " + id + " still waits"));
  EXPECT_EQ(daemon_.call("policy.rules")["rules"], json::array());
  EXPECT_EQ(daemon_.call("approval.list")["approvals"][0]["id"], id);
  daemon_.call("approval.approve", {{"id", id}});
}

TEST_F(ApproveAlways, NoRuleIsOfferedForWhatCannotBeSaidExactly) {
  for (const std::string command :
       {"CI=1 echo hi", "sh -c 'echo hi'", "$SHELL -c true", "cat > notes.txt <<'EOF'\nhi\nEOF"}) {
    json result;
    std::jthread caller = call(command, result);
    const std::string id = waiting_id();
    ASSERT_FALSE(id.empty()) << command;
    const CtlRun refused = ctl({"approve", id, "--always", "--yes"});
    EXPECT_EQ(refused.exit_code, 1) << command << refused.out;
    EXPECT_THAT(refused.err, HasSubstr("loopr offers no rule")) << command;
    EXPECT_THAT(refused.err, HasSubstr("approve it once")) << command;
    daemon_.call("approval.deny", {{"id", id}});
  }
  EXPECT_EQ(daemon_.call("policy.rules")["rules"], json::array());
}

class ApproveAlwaysUnderAnAskRule : public ApproveAlways {
 protected:
  ApproveAlwaysUnderAnAskRule()
      : ApproveAlways(
            "[[approval.rules]]\ncommand = [\"echo\"]\ndecision = \"ask\"\nreason = \"echo "
            "asks\"\n") {}
};

TEST_F(ApproveAlwaysUnderAnAskRule, ItIsRefusedNamingTheRuleThatWouldStillAsk) {
  json result;
  std::jthread caller = call("echo hi", result);
  const std::string id = waiting_id();
  ASSERT_FALSE(id.empty());
  const CtlRun refused = ctl({"approve", id, "--always", "--yes"});
  EXPECT_EQ(refused.exit_code, 1) << refused.out;
  EXPECT_THAT(refused.err, HasSubstr("a saved rule would not change this"));
  EXPECT_THAT(refused.err, HasSubstr("echo asks"));
  EXPECT_EQ(daemon_.call("policy.rules")["rules"], json::array());
  daemon_.call("approval.deny", {{"id", id}});
}

}  // namespace
}  // namespace loopr::test
