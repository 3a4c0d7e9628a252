// Headless runs against the real looprd and looprctl (issue 27): `looprctl
// --json loop run` and `plan --json` print one JSON line per event and exit
// with the outcome (client/failure.hpp's OutcomeExit), a call waiting for
// approval ends a headless run with 7 and leaves the call for a person, and
// `plan --approve-plan` carries a plan out without the gate.
#include <gtest/gtest.h>

#include <string>
#include <vector>

#include "tests/client/looprctl_run.hpp"
#include "tests/daemon/daemon_harness.hpp"
#include "tests/daemon/loop_fixture.hpp"

namespace loopr::test {
namespace {

using nlohmann::json;

class HeadlessLooprdTest : public ::testing::Test {
 protected:
  void start(std::vector<ScriptedSession> sessions, const std::string& extra_toml = "") {
    daemon_ = start_scripted_looprd(scripts_, sessions, extra_toml, repo_);
  }

  CtlRun ctl(std::vector<std::string> args) {
    args.insert(args.begin(), {"--socket", daemon_->socket_path()});
    CtlOptions options;
    options.config_dir = daemon_->tree().path("ctl-config");
    options.state_dir = daemon_->tree().path("ctl-state");
    return run_looprctl(args, options);
  }

  CtlRun headless_run(std::vector<std::string> extra = {}) {
    std::vector<std::string> args = {"--json",   "loop",       "run",       "--repo",
                                     repo_.path, "--validate", "sh test.sh"};
    args.insert(args.end(), extra.begin(), extra.end());
    args.push_back(kSampleTask);
    return ctl(args);
  }

  // Every line of `out` is a JSON object; returns them.
  static std::vector<json> json_lines(const std::string& out) {
    std::vector<json> lines;
    std::size_t from = 0;
    while (from < out.size()) {
      const std::size_t end = out.find('\n', from);
      const std::string line = out.substr(from, end - from);
      from = end == std::string::npos ? out.size() : end + 1;
      const json parsed = json::parse(line, nullptr, false);
      EXPECT_TRUE(parsed.is_object()) << "not a JSON line: " << line;
      lines.push_back(parsed);
    }
    return lines;
  }

  static std::vector<json> solving_turns() {
    return {turn({tool_call("r1", "read_file", {{"path", "answer.txt"}})}),
            turn({tool_call("e1", "edit_file",
                            {{"path", "answer.txt"}, {"old_string", "41"}, {"new_string", "42"}})}),
            turn({tool_call("c1", "complete_task", {{"summary", "42"}})})};
  }

  TempTree scripts_;
  std::unique_ptr<DaemonHarness> daemon_;
  SampleRepo repo_;
};

TEST_F(HeadlessLooprdTest, ACompletedLoopIsJsonLinesAndExitZero) {
  start({{"scripted", solving_turns()}});
  const CtlRun run = headless_run();
  ASSERT_EQ(run.exit_code, 0) << run.out << run.err;
  const std::vector<json> lines = json_lines(run.out);
  ASSERT_GE(lines.size(), 3u) << run.out;
  EXPECT_TRUE(lines.front().contains("loop")) << "first: the created loop";
  bool saw_tool_event = false;
  for (std::size_t i = 1; i + 1 < lines.size(); ++i) {
    ASSERT_TRUE(lines[i].contains("event")) << lines[i].dump();
    if (lines[i]["event"] == "tool.finished") saw_tool_event = true;
  }
  EXPECT_TRUE(saw_tool_event) << run.out;
  EXPECT_EQ(lines.back()["loop"]["status"], "completed") << lines.back().dump();
}

TEST_F(HeadlessLooprdTest, AnExhaustedBudgetExitsFive) {
  // At $15 per million output tokens, 3,000 output tokens cost $0.045; the
  // next call could pass $0.05 (as LoopTest's budget tests).
  start({{"scripted",
          {turn({tool_call("r1", "read_file", {{"path", "answer.txt"}})},
                {{"usage", usage(1000, 3000)}}),
           turn({tool_call("r2", "read_file", {{"path", "answer.txt"}})})},
          1000}});
  const CtlRun run = headless_run({"--budget-usd", "0.05"});
  EXPECT_EQ(run.exit_code, 5) << run.out << run.err;
  const std::vector<json> lines = json_lines(run.out);
  ASSERT_FALSE(lines.empty());
  EXPECT_EQ(lines.back()["loop"]["status"], "budget_exhausted") << lines.back().dump();
}

TEST_F(HeadlessLooprdTest, ACallWaitingForApprovalEndsTheRunWithSevenAndWaitsForAPerson) {
  start({{"scripted",
          {turn({tool_call("x1", "run_command", {{"command", "echo checked"}})}),
           turn({tool_call("r1", "read_file", {{"path", "answer.txt"}})}),
           turn({tool_call("e1", "edit_file",
                           {{"path", "answer.txt"}, {"old_string", "41"}, {"new_string", "42"}})}),
           turn({tool_call("c1", "complete_task", {{"summary", "42"}})})}}},
        "[approval.tools]\nrun_command = \"ask\"\n");
  const CtlRun run = headless_run();
  EXPECT_EQ(run.exit_code, 7) << run.out << run.err;
  EXPECT_NE(run.err.find("waits for an approval"), std::string::npos) << run.err;
  const std::vector<json> lines = json_lines(run.out);
  std::string approval_id;
  std::string loop_id;
  for (const json& line : lines) {
    if (line.value("event", "") == "approval.requested") {
      approval_id = line["data"].value("id", "");
      loop_id = line["data"].value("loop_id", "");
    }
  }
  ASSERT_FALSE(approval_id.empty()) << run.out;
  ASSERT_FALSE(loop_id.empty()) << "the approval names its loop: " << run.out;

  // The call still waits; a person answers it and the loop goes on.
  const json pending = daemon_->call("approval.list");
  ASSERT_EQ(pending["approvals"].size(), 1u) << pending.dump();
  EXPECT_EQ(pending["approvals"][0]["loop_id"], loop_id);
  const CtlRun approved = ctl({"approve", approval_id});
  EXPECT_EQ(approved.exit_code, 0) << approved.err;
  const json ended = wait_final(*daemon_, loop_id);
  EXPECT_EQ(ended["status"], "completed") << ended.dump(2);
}

}  // namespace
}  // namespace loopr::test
