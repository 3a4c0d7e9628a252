// Loops survive looprd being killed with SIGKILL: the real looprd is killed
// at a chosen moment (found by waiting for the event that marks it) and
// started again on the same state folder; the loop then finishes with
// nothing duplicated and nothing lost.
#include <gtest/gtest.h>
#include <sys/wait.h>

#include <map>
#include <memory>
#include <set>

#include "tests/daemon/loop_fixture.hpp"

namespace loopr::test {
namespace {

using nlohmann::json;
using namespace std::chrono_literals;

class LoopCrashTest : public ::testing::Test {
 protected:
  void start(const std::vector<json>& turns) {
    const std::string script = write_session(scripts_.path("session.jsonl"), turns);
    DaemonOptions options;
    options.extra_toml = scripted_toml({{"scripted", script, 0}});
    daemon_ = std::make_unique<DaemonHarness>(options);
    repo_ = make_sample_repo(daemon_->worktree());
    daemon_->start();
  }

  // SIGKILL, then looprd again on the same state folder.
  void kill_and_restart() {
    const int status = daemon_->stop(9);
    ASSERT_TRUE(WIFSIGNALED(status) && WTERMSIG(status) == 9) << "status " << status;
    daemon_->start();
  }

  // The journal is whole: iterations numbered 1, 2, ... with every step in
  // its iteration; every tool_calls_started answered by exactly one
  // tool_results for the same calls before anything else happens; one
  // model_turn per sequence number, from 0 without gaps; one commit per
  // iteration, on the branch once.
  void expect_whole_journal(const std::string& id, const std::vector<json>& steps) {
    std::int64_t iteration = 0;
    std::optional<json> open_calls;
    std::vector<std::int64_t> sequences;
    std::map<std::int64_t, int> commits;
    for (const json& step : steps) {
      const std::string kind = step["kind"];
      const std::int64_t at = step["iteration"];
      if (kind == "iteration_started") {
        EXPECT_EQ(at, iteration + 1) << step.dump();
        iteration = at;
      } else {
        EXPECT_EQ(at, iteration) << step.dump();
      }
      if (kind == "tool_calls_started") {
        EXPECT_FALSE(open_calls) << "calls started twice: " << step.dump();
        open_calls = step["data"]["calls"];
      } else if (kind == "tool_results") {
        ASSERT_TRUE(open_calls) << "results without started calls: " << step.dump();
        const json& results = step["data"]["results"];
        ASSERT_EQ(results.size(), open_calls->size()) << step.dump();
        for (std::size_t i = 0; i < results.size(); ++i)
          EXPECT_EQ(results[i]["call_id"], (*open_calls)[i]["id"]);
        open_calls.reset();
      } else if (kind != "note" && kind != "status") {
        EXPECT_FALSE(open_calls) << kind << " while calls had no results";
      }
      if (kind == "model_turn") sequences.push_back(step["data"]["sequence"]);
      if (kind == "committed") ++commits[at];
    }
    for (std::size_t i = 0; i < sequences.size(); ++i)
      EXPECT_EQ(sequences[i], static_cast<std::int64_t>(i)) << "model_turn sequences in order";
    for (const auto& [at, count] : commits)
      EXPECT_EQ(count, 1) << "commits of iteration " << at;
    const auto subjects = branch_subjects(repo_.path, repo_.base_commit, "loop/" + id);
    std::set<std::string> unique(subjects.begin(), subjects.end());
    EXPECT_EQ(unique.size(), subjects.size()) << "a commit repeated on the branch";
    EXPECT_EQ(subjects.size(), commits.size());
  }

  TempTree scripts_;
  std::unique_ptr<DaemonHarness> daemon_;
  SampleRepo repo_;
};

TEST_F(LoopCrashTest, KilledDuringAModelCallTheSameTurnIsAskedAgain) {
  start({turn({read_call("r1")}), turn({edit_call("e1")}, {{"delay_ms", 2000}}),
         turn({complete_call("c1")})});
  std::string id;
  {
    EventLog events(*daemon_, {"loop"});
    id = create_loop(*daemon_, repo_.path)["id"];
    // The first turn's call answered: the second model call (sequence 1)
    // is now waiting out its delay.
    ASSERT_TRUE(events.wait_for(step_event(id, "tool_results")));
    ASSERT_EQ(get_loop(*daemon_, id)["usage"]["model_turns"], 1) << "killed before it answered";
  }
  kill_and_restart();

  const json loop = wait_final(*daemon_, id);
  EXPECT_EQ(loop["status"], "completed") << loop.dump(2);
  EXPECT_EQ(loop["usage"]["model_turns"], 3);
  const auto steps = read_transcript(*daemon_, id);
  const auto turns = steps_of_kind(steps, "model_turn");
  ASSERT_EQ(turns.size(), 3u);
  EXPECT_EQ(turns[1]["data"]["sequence"], 1);
  EXPECT_EQ(turns[1]["data"]["turn"]["tool_calls"][0]["id"], "e1");
  EXPECT_EQ(steps_of_kind(steps, "iteration_started").size(), 1u);
  expect_whole_journal(id, steps);
  EXPECT_NE(branch_diff(repo_.path, repo_.base_commit, "loop/" + id).find("\n-41\n+42\n"),
            std::string::npos);
}

TEST_F(LoopCrashTest, StoppedGracefullyDuringAModelCallTheLoopIsNotFailedAndGoesOnAfterRestart) {
  start({turn({read_call("r1")}), turn({edit_call("e1")}, {{"delay_ms", 3000}}),
         turn({complete_call("c1")})});
  std::string id;
  {
    EventLog events(*daemon_, {"loop"});
    id = create_loop(*daemon_, repo_.path)["id"];
    ASSERT_TRUE(events.wait_for(step_event(id, "tool_results")));
  }
  // SIGTERM: looprd stops every loop where it is; the cut-off model call is
  // not the loop's failure.
  const int status = daemon_->stop(15);
  ASSERT_TRUE(WIFEXITED(status) && WEXITSTATUS(status) == 0) << "status " << status;
  daemon_->start();
  const json stopped = get_loop(*daemon_, id);
  EXPECT_NE(stopped["status"], "failed") << stopped.dump(2);

  const json loop = wait_final(*daemon_, id);
  EXPECT_EQ(loop["status"], "completed") << loop.dump(2);
  EXPECT_EQ(loop["usage"]["model_turns"], 3);
  const auto steps = read_transcript(*daemon_, id);
  for (const json& step : steps_of_kind(steps, "status"))
    EXPECT_NE(step["data"]["status"], "failed") << step.dump();
  expect_whole_journal(id, steps);
}

TEST_F(LoopCrashTest, KilledDuringASideEffectingCallItIsReportedInterruptedNotRunAgain) {
  start({turn({tool_call("s1", "run_command", {{"command", "echo x >> marker && sleep 5"}})}),
         turn({read_call("r1")}), turn({edit_call("e1")}), turn({complete_call("c1")})});
  std::string id, worktree;
  {
    EventLog events(*daemon_, {"loop", "tool"});
    const json created = create_loop(*daemon_, repo_.path);
    id = created["id"];
    worktree = created["worktree"];
    ASSERT_TRUE(events.wait_for(tool_event(id, "tool.started", "run_command")));
  }
  // The command has taken effect (and sleeps) when the marker has its line.
  ASSERT_TRUE(wait_for_file(worktree + "/marker", 10s));
  kill_and_restart();

  const json loop = wait_final(*daemon_, id);
  EXPECT_EQ(loop["status"], "completed") << loop.dump(2);
  EXPECT_EQ(file_text(worktree + "/marker"), "x\n") << "the command ran again";
  const auto steps = read_transcript(*daemon_, id);
  const auto results = steps_of_kind(steps, "tool_results");
  ASSERT_EQ(results.size(), 4u);
  const json& interrupted = results[0]["data"]["results"][0];
  EXPECT_EQ(interrupted["call_id"], "s1");
  EXPECT_EQ(interrupted["status"], "interrupted");
  EXPECT_EQ(interrupted["interrupted"], true);
  EXPECT_EQ(interrupted["is_error"], true);
  EXPECT_NE(interrupted["content"].get<std::string>().find("not run again"), std::string::npos)
      << interrupted.dump();
  EXPECT_EQ(steps_of_kind(steps, "tool_calls_started").size(), 4u);
  expect_whole_journal(id, steps);
}

TEST_F(LoopCrashTest, KilledRightAfterAReadOnlyCallStartedItsResultIsNeverInterrupted) {
  start({turn({tool_call("g1", "grep", {{"pattern", "answer"}})}), turn({read_call("r1")}),
         turn({edit_call("e1")}), turn({complete_call("c1")})});
  std::string id;
  {
    EventLog events(*daemon_, {"loop", "tool"});
    id = create_loop(*daemon_, repo_.path)["id"];
    ASSERT_TRUE(events.wait_for(tool_event(id, "tool.started", "grep")));
  }
  kill_and_restart();

  const json loop = wait_final(*daemon_, id);
  EXPECT_EQ(loop["status"], "completed") << loop.dump(2);
  const auto steps = read_transcript(*daemon_, id);
  const auto results = steps_of_kind(steps, "tool_results");
  ASSERT_EQ(results.size(), 4u);
  // Whether looprd died before or after storing it, the grep's result is a
  // real one: a read-only call is run again, never reported interrupted.
  const json& grep = results[0]["data"]["results"][0];
  EXPECT_EQ(grep["call_id"], "g1");
  EXPECT_EQ(grep["status"], "success") << grep.dump();
  EXPECT_FALSE(grep.contains("interrupted"));
  EXPECT_NE(grep["content"].get<std::string>().find("test.sh"), std::string::npos);
  expect_whole_journal(id, steps);
}

TEST_F(LoopCrashTest, KilledDuringValidationTheValidationRunsAgain) {
  start({turn({read_call("r1")}), turn({edit_call("e1")}), turn({complete_call("c1")})});
  std::string id;
  {
    EventLog events(*daemon_, {"loop"});
    id = create_loop(*daemon_, repo_.path, {{"validate", "sleep 3; sh test.sh"}})["id"];
    ASSERT_TRUE(events.wait_for(step_event(id, "validation_started")));
  }
  kill_and_restart();

  const json loop = wait_final(*daemon_, id);
  EXPECT_EQ(loop["status"], "completed") << loop.dump(2);
  EXPECT_EQ(loop["iteration"], 1);
  ASSERT_EQ(loop["iterations"].size(), 1u);
  EXPECT_EQ(loop["iterations"][0]["validation"]["passed"], true);
  const auto steps = read_transcript(*daemon_, id);
  EXPECT_EQ(steps_of_kind(steps, "validation_started").size(), 2u) << "asked once, then again";
  EXPECT_EQ(steps_of_kind(steps, "validation").size(), 1u);
  EXPECT_EQ(steps_of_kind(steps, "committed").size(), 1u);
  EXPECT_EQ(steps_of_kind(steps, "model_turn").size(), 3u);
  expect_whole_journal(id, steps);
  EXPECT_EQ(branch_subjects(repo_.path, repo_.base_commit, "loop/" + id).size(), 1u);
}

}  // namespace
}  // namespace loopr::test
