// Loops end to end: the real looprd with its lane runners, real git, and the
// scripted provider playing the model. Each test names the behaviour it
// proves and checks it through loop.get, loop.transcript, events and git.
#include <gtest/gtest.h>

#include <chrono>
#include <filesystem>
#include <memory>

#include "tests/daemon/loop_fixture.hpp"

namespace loopr::test {
namespace {

using nlohmann::json;
using namespace std::chrono_literals;
using Clock = std::chrono::steady_clock;

using Session = ScriptedSession;

// The three turns that solve the sample project: read, edit, complete.
std::vector<json> solving_turns(const std::string& from = "41") {
  return {turn({read_call("r1")}, {{"text", "Reading the answer."}, {"usage", usage(1000, 20)}}),
          turn({edit_call("e1", from, "42")}, {{"usage", usage(1100, 30)}}),
          turn({complete_call("c1")}, {{"usage", usage(1200, 10)}})};
}

class LoopTest : public ::testing::Test {
 protected:
  // Starts looprd with one scripted provider per session (the first is the
  // default) and the sample project in its worktree root.
  void start(const std::vector<Session>& sessions, const std::string& extra_toml = {}) {
    daemon_ = start_scripted_looprd(scripts_, sessions, extra_toml, repo_);
  }

  json create(json params = json::object()) { return create_loop(*daemon_, repo_.path, params); }

  // The loop's tool_results steps, in order.
  std::vector<json> results_of(const std::string& id) {
    std::vector<json> out;
    for (const json& step : steps_of_kind(read_transcript(*daemon_, id), "tool_results"))
      out.push_back(step["data"]);
    return out;
  }

  TempTree scripts_;
  std::unique_ptr<DaemonHarness> daemon_;
  SampleRepo repo_;
};

// ---- iterations and validation -------------------------------------------------

TEST_F(LoopTest, SolvesTheTaskInOneIterationAndCommitsTheEditOnItsBranch) {
  start({{"scripted", solving_turns()}});
  const json created = create();
  const std::string id = created["id"];
  EXPECT_EQ(created["branch"], "loop/" + id);
  EXPECT_EQ(created["base_commit"], repo_.base_commit);
  EXPECT_EQ(created["model"], kTestModel);

  const json loop = wait_final(*daemon_, id);
  EXPECT_EQ(loop["status"], "completed") << loop.dump(2);
  EXPECT_EQ(loop["iteration"], 1);
  ASSERT_EQ(loop["iterations"].size(), 1u);
  EXPECT_EQ(loop["iterations"][0]["validation"]["passed"], true);
  EXPECT_EQ(loop["iterations"][0]["changed"], true);
  EXPECT_EQ(loop["last_validation"]["passed"], true);
  EXPECT_NE(loop["last_validation"]["output"].get<std::string>().find("PASS"), std::string::npos);

  // Tokens are the turns' usage; the cost is theirs at the configured price.
  const json& used = loop["usage"];
  EXPECT_EQ(used["model_turns"], 3);
  EXPECT_EQ(used["tool_calls"], 3);
  EXPECT_EQ(used["input_tokens"], 3300);
  EXPECT_EQ(used["output_tokens"], 60);
  EXPECT_NEAR(used["cost_usd"].get<double>(),
              (3300 * kInputUsdPerMtok + 60 * kOutputUsdPerMtok) * 1e-6, 1e-9);
  EXPECT_EQ(loop["priced"], true);
  EXPECT_EQ(loop["budget"]["used"]["input_tokens"], 3300);

  // The branch holds one commit, and its diff is exactly the edit.
  const auto subjects = branch_subjects(repo_.path, repo_.base_commit, "loop/" + id);
  ASSERT_EQ(subjects.size(), 1u);
  EXPECT_NE(subjects[0].find("iteration 1"), std::string::npos) << subjects[0];
  const std::string diff = branch_diff(repo_.path, repo_.base_commit, "loop/" + id);
  EXPECT_NE(diff.find("diff --git a/answer.txt b/answer.txt"), std::string::npos) << diff;
  EXPECT_NE(diff.find("\n-41\n+42\n"), std::string::npos) << diff;
  EXPECT_EQ(diff.find("diff --git", diff.find("answer.txt") + 1), std::string::npos)
      << "only answer.txt changed:\n"
      << diff;
  // The repository's own checkout is untouched.
  EXPECT_EQ(file_text(repo_.path + "/answer.txt"), "41\n");

  // The journal: created, the iteration, three turns, each call started and
  // answered, then commit, validation and the final status.
  const auto steps = read_transcript(*daemon_, id, 4);
  std::vector<std::string> kinds;
  for (const json& step : steps)
    kinds.push_back(step["kind"]);
  const std::vector<std::string> expected = {"created",
                                             "iteration_started",
                                             "model_turn",
                                             "tool_calls_started",
                                             "tool_results",
                                             "model_turn",
                                             "tool_calls_started",
                                             "tool_results",
                                             "model_turn",
                                             "tool_calls_started",
                                             "tool_results",
                                             "committed",
                                             "validation_started",
                                             "validation",
                                             "status"};
  EXPECT_EQ(kinds, expected);
  EXPECT_EQ(steps.back()["data"]["status"], "completed");
}

TEST_F(LoopTest, AFailedValidationIsTheNextIterationsFeedback) {
  start({{"scripted",
          {turn({read_call("r1")}), turn({edit_call("e1", "41", "43")}),
           turn({complete_call("c1")}), turn({read_call("r2")}),
           turn({edit_call("e2", "43", "42")}), turn({complete_call("c2")})}}});
  const std::string id = create()["id"];
  const json loop = wait_final(*daemon_, id);
  EXPECT_EQ(loop["status"], "completed") << loop.dump(2);
  EXPECT_EQ(loop["iteration"], 2);
  ASSERT_EQ(loop["iterations"].size(), 2u);
  EXPECT_EQ(loop["iterations"][0]["validation"]["passed"], false);
  EXPECT_EQ(loop["iterations"][0]["validation"]["exit_code"], 1);
  EXPECT_EQ(loop["iterations"][1]["validation"]["passed"], true);

  // Iteration 2 starts from a fresh context that carries the failure.
  const auto started = steps_of_kind(read_transcript(*daemon_, id), "iteration_started");
  ASSERT_EQ(started.size(), 2u);
  const std::string first = started[0]["data"]["prompt"];
  const std::string second = started[1]["data"]["prompt"];
  EXPECT_EQ(first.find("FAIL"), std::string::npos) << first;
  EXPECT_NE(second.find("FAIL: answer.txt says 43, want 42"), std::string::npos) << second;
  EXPECT_NE(second.find("sh test.sh"), std::string::npos) << second;
  EXPECT_NE(second.find("Iteration 1: changed files; validation failed"), std::string::npos)
      << second;

  const auto subjects = branch_subjects(repo_.path, repo_.base_commit, "loop/" + id);
  ASSERT_EQ(subjects.size(), 2u);
  EXPECT_NE(subjects[0].find("iteration 1"), std::string::npos);
  EXPECT_NE(subjects[1].find("iteration 2"), std::string::npos);
  EXPECT_NE(branch_diff(repo_.path, repo_.base_commit, "loop/" + id).find("\n-41\n+42\n"),
            std::string::npos);
}

TEST_F(LoopTest, StopsAsFailedAfterMaxIterationsWithTheLastValidationOutput) {
  start({{"scripted",
          {turn({read_call("r1")}), turn({edit_call("e1", "41", "43")}),
           turn({}, {{"text", "I am done."}}), turn({read_call("r2")}),
           turn({edit_call("e2", "43", "44")}), turn({complete_call("c2")})}}});
  const std::string id = create({{"max_iterations", 2}})["id"];
  const json loop = wait_final(*daemon_, id);
  EXPECT_EQ(loop["status"], "failed") << loop.dump(2);
  EXPECT_EQ(loop["iteration"], 2);
  const std::string reason = loop["status_reason"];
  EXPECT_NE(reason.find("max_iterations"), std::string::npos) << reason;
  EXPECT_NE(reason.find("FAIL: answer.txt says 44, want 42"), std::string::npos) << reason;
  EXPECT_EQ(loop["usage"]["model_turns"], 6);
  EXPECT_EQ(branch_subjects(repo_.path, repo_.base_commit, "loop/" + id).size(), 2u);
}

// ---- budgets -------------------------------------------------------------------

TEST_F(LoopTest, AUsdBudgetStopsTheLoopBeforeACallThatCouldOverrunIt) {
  // At $15 per million output tokens and max_tokens 1000, the first call may
  // cost about $0.02 and fits $0.05; after it spent $0.045, the next may not.
  start({{"scripted",
          {turn({read_call("r1")}, {{"usage", usage(1000, 3000)}}), turn({read_call("r2")})},
          1000}});
  const std::string id = create({{"budget", {{"usd", 0.05}}}})["id"];
  const json loop = wait_final(*daemon_, id);
  EXPECT_EQ(loop["status"], "budget_exhausted") << loop.dump(2);
  const std::string reason = loop["status_reason"];
  EXPECT_NE(reason.find("loop.usd"), std::string::npos) << reason;
  EXPECT_EQ(loop["usage"]["model_turns"], 1);
  EXPECT_NEAR(loop["usage"]["cost_usd"].get<double>(),
              (1000 * kInputUsdPerMtok + 3000 * kOutputUsdPerMtok) * 1e-6, 1e-9);
  EXPECT_LE(loop["usage"]["cost_usd"].get<double>(), 0.05);
  EXPECT_EQ(loop["budget"]["limits"]["usd"], 0.05);
}

TEST_F(LoopTest, AToolCallBudgetStopsTheLoopBeforeTheCallsThatPassIt) {
  start({{"scripted",
          {turn({read_call("r1"), read_call("r2", "test.sh")}),
           turn({read_call("r3", "docs/guide.md")})}}});
  const std::string id = create({{"budget", {{"tool_calls", 2}}}})["id"];
  const json loop = wait_final(*daemon_, id);
  EXPECT_EQ(loop["status"], "budget_exhausted") << loop.dump(2);
  EXPECT_NE(loop["status_reason"].get<std::string>().find("loop.tool_calls"), std::string::npos)
      << loop["status_reason"];
  EXPECT_EQ(loop["usage"]["tool_calls"], 2);
  EXPECT_EQ(loop["usage"]["model_turns"], 2);
  // The third call never started.
  const auto steps = read_transcript(*daemon_, id);
  EXPECT_EQ(steps_of_kind(steps, "tool_calls_started").size(), 1u);
}

TEST_F(LoopTest, AnOutputTokenBudgetChecksTheWorstCaseBeforeTheCall) {
  // max_tokens 1000: after 600 output tokens, a 1500 budget cannot take
  // another call that may produce 1000, so it is not made.
  start({{"scripted",
          {turn({read_call("r1")}, {{"usage", usage(100, 600)}}),
           turn({read_call("r2")}, {{"usage", usage(100, 10)}})},
          1000}});
  const std::string id = create({{"budget", {{"output_tokens", 1500}}}})["id"];
  const json loop = wait_final(*daemon_, id);
  EXPECT_EQ(loop["status"], "budget_exhausted") << loop.dump(2);
  const std::string reason = loop["status_reason"];
  EXPECT_NE(reason.find("loop.output_tokens"), std::string::npos) << reason;
  EXPECT_NE(reason.find("1000"), std::string::npos) << reason;
  EXPECT_EQ(loop["usage"]["model_turns"], 1);
  EXPECT_EQ(loop["usage"]["output_tokens"], 600);
  EXPECT_EQ(daemon_->call("loop.export", {{"id", id}})["turns"].size(), 1u);
}

// The per-iteration turn limit ends the iteration with a handoff, not the
// loop (issue 24): the model is asked for a note (one more turn, no tools
// run), the iteration is committed and not validated, and the next one
// starts from a fresh context carrying the note.
TEST_F(LoopTest, ATurnsPerIterationLimitEndsTheIterationWithAHandoffAndTheLoopGoesOn) {
  start({{"scripted",
          {turn({read_call("r1")}), turn({read_call("r2", "test.sh")}),
           turn({read_call("r3", "docs/guide.md")},
                {{"text", "HANDOFF: answer.txt holds 41; test.sh wants 42."}}),
           turn({read_call("r4"), edit_call("e1", "41", "42")}), turn({complete_call("c1")})}}});
  const std::string id = create({{"budget", {{"turns_per_iteration", 2}}}})["id"];
  const json loop = wait_final(*daemon_, id);
  EXPECT_EQ(loop["status"], "completed") << loop.dump(2);
  EXPECT_EQ(loop["iteration"], 2);
  EXPECT_EQ(loop["handoffs"], 1);
  EXPECT_EQ(loop["usage"]["model_turns"], 5);
  // The third turn was the handoff: its call was not run.
  const auto steps = read_transcript(*daemon_, id);
  const auto handoffs = steps_of_kind(steps, "handoff");
  ASSERT_EQ(handoffs.size(), 1u);
  EXPECT_EQ(handoffs[0]["data"]["reason"], "turn_limit");
  EXPECT_EQ(handoffs[0]["data"]["by"], "model");
  EXPECT_EQ(handoffs[0]["data"]["note"], "HANDOFF: answer.txt holds 41; test.sh wants 42.");
  EXPECT_EQ(steps_of_kind(steps, "validation_started").size(), 1u);  // only iteration 2's
  const auto iterations = steps_of_kind(steps, "iteration_started");
  ASSERT_EQ(iterations.size(), 2u);
  EXPECT_NE(iterations[1]["data"]["prompt"].get<std::string>().find(
                "# Handoff from the last iteration\n\nHANDOFF: answer.txt holds 41"),
            std::string::npos)
      << iterations[1]["data"]["prompt"];
  const json shown = get_loop(*daemon_, id);
  EXPECT_EQ(shown["iterations"][0]["handoff"]["reason"], "turn_limit") << shown.dump(2);
  EXPECT_TRUE(shown["iterations"][0]["validation"].is_null());
}

TEST_F(LoopTest, AWallClockBudgetCountsTheTimeOfASlowModelCall) {
  start({{"scripted", {turn({read_call("r1")}, {{"delay_ms", 1200}}), turn({read_call("r2")})}}});
  const std::string id = create({{"budget", {{"wall_clock_s", 1}}}})["id"];
  const json loop = wait_final(*daemon_, id);
  EXPECT_EQ(loop["status"], "budget_exhausted") << loop.dump(2);
  EXPECT_NE(loop["status_reason"].get<std::string>().find("loop.wall_clock_s"), std::string::npos)
      << loop["status_reason"];
  EXPECT_GE(loop["usage"]["wall_clock_ms"].get<std::int64_t>(), 1000);
  EXPECT_EQ(loop["usage"]["model_turns"], 1);
}

// ---- malformed and unknown calls ---------------------------------------------------

TEST_F(LoopTest, MalformedArgumentsGetResultsThatSayWhatIsWrongAndTheLoopRecovers) {
  start({{"scripted",
          {turn({tool_call("m1", "read_file", "{\"path\": \"answer.txt\"")}),
           turn({tool_call("m2", "read_file", {{"path", 7}})}), turn({read_call("r1")}),
           turn({edit_call("e1", "41", "42")}), turn({complete_call("c1")})}}});
  const std::string id = create()["id"];
  const json loop = wait_final(*daemon_, id);
  EXPECT_EQ(loop["status"], "completed") << loop.dump(2);
  EXPECT_EQ(loop["iteration"], 1);

  const auto results = results_of(id);
  ASSERT_GE(results.size(), 2u);
  // Each result is the error the model reads: {"error": {code, message, hint}}.
  auto error_of = [](const json& result) {
    const json content = json::parse(result["content"].get<std::string>(), nullptr, false);
    return content.is_object() ? content.value("error", json::object()) : json::object();
  };
  const json& not_json = results[0]["results"][0];
  EXPECT_EQ(not_json["call_id"], "m1");
  EXPECT_EQ(not_json["is_error"], true);
  EXPECT_EQ(not_json["status"], "invalid");
  const json not_json_error = error_of(not_json);
  EXPECT_EQ(not_json_error["code"], "invalid_arguments") << not_json.dump();
  EXPECT_NE(not_json_error.value("message", "").find("invalid JSON"), std::string::npos)
      << not_json.dump();

  const json& wrong_type = results[1]["results"][0];
  EXPECT_EQ(wrong_type["call_id"], "m2");
  EXPECT_EQ(wrong_type["is_error"], true);
  EXPECT_EQ(wrong_type["status"], "invalid");
  const json wrong_type_error = error_of(wrong_type);
  EXPECT_EQ(wrong_type_error["code"], "invalid_arguments") << wrong_type.dump();
  const std::string message = wrong_type_error.value("message", "");
  EXPECT_NE(message.find("path: expected a string"), std::string::npos) << message;
  // Two malformed calls in a row stay under the default limit of three.
  for (std::size_t i = 0; i + 1 < results.size(); ++i)
    EXPECT_EQ(results[i]["ends_iteration"], json("")) << results[i].dump();
  EXPECT_EQ(results.back()["ends_iteration"], "complete_task");
}

// SECURITY class 28: a model's arguments nested far deeper than any schema
// (a recursive parser would overflow its stack) are a tool error like any
// other malformed call; looprd lives and the loop goes on.
TEST_F(LoopTest, HostilelyNestedArgumentsAreAToolErrorAndTheLoopGoesOn) {
  const std::string nested = std::string(200000, '[') + std::string(200000, ']');
  start({{"scripted",
          {turn({tool_call("deep", "read_file", nested)}), turn({read_call("r1")}),
           turn({edit_call("e1", "41", "42")}), turn({complete_call("c1")})}}});
  const std::string id = create()["id"];
  const json loop = wait_final(*daemon_, id);
  EXPECT_EQ(loop["status"], "completed") << loop.dump(2);
  const auto results = results_of(id);
  ASSERT_FALSE(results.empty());
  const json& deep = results[0]["results"][0];
  EXPECT_EQ(deep["call_id"], "deep");
  EXPECT_EQ(deep["status"], "invalid");
  EXPECT_NE(deep["content"].get<std::string>().find("deeper than"), std::string::npos)
      << deep.dump().substr(0, 500);
}

TEST_F(LoopTest, MalformedCallsUpToTheLimitInARowEndTheIteration) {
  start({{"scripted",
          {turn({tool_call("m1", "read_file", "not json"), tool_call("m2", "edit_file", {})}),
           turn({read_call("r1")}), turn({edit_call("e1", "41", "42")}),
           turn({complete_call("c1")})}}},
        "[loop_health]\nmalformed_call_limit = 2\n");
  const std::string id = create()["id"];
  const json loop = wait_final(*daemon_, id);
  EXPECT_EQ(loop["status"], "completed") << loop.dump(2);
  EXPECT_EQ(loop["iteration"], 2);
  EXPECT_EQ(loop["iterations"][0]["validation"]["passed"], false);
  EXPECT_EQ(loop["iterations"][0]["changed"], false);

  const auto steps = read_transcript(*daemon_, id);
  const auto results = steps_of_kind(steps, "tool_results");
  ASSERT_FALSE(results.empty());
  EXPECT_EQ(results[0]["iteration"], 1);
  const std::string ends = results[0]["data"]["ends_iteration"];
  EXPECT_NE(ends.find("malformed_call_limit"), std::string::npos) << ends;
  const auto started = steps_of_kind(steps, "iteration_started");
  ASSERT_EQ(started.size(), 2u);
  const std::string prompt = started[1]["data"]["prompt"];
  EXPECT_NE(prompt.find("malformed tool calls in a row"), std::string::npos) << prompt;
}

TEST_F(LoopTest, ACallOfAToolTheLoopDoesNotOfferIsAnErrorNamingTheToolsAndTheLoopGoesOn) {
  start({{"scripted",
          {turn({tool_call("w1", "web_fetch", {{"url", "https://example.com/"}}),
                 tool_call("x1", "frobnicate", {{"level", 11}})}),
           turn({read_call("r1")}), turn({edit_call("e1", "41", "42")}),
           turn({complete_call("c1")})}}});
  const std::string id = create()["id"];
  const json loop = wait_final(*daemon_, id);
  EXPECT_EQ(loop["status"], "completed") << loop.dump(2);
  EXPECT_EQ(loop["iteration"], 1);

  const auto results = results_of(id);
  ASSERT_FALSE(results.empty());
  ASSERT_EQ(results[0]["results"].size(), 2u);
  for (const json& result : results[0]["results"]) {
    EXPECT_EQ(result["is_error"], true);
    const std::string text = result["content"];
    EXPECT_NE(text.find("read_file, write_file, edit_file"), std::string::npos) << text;
    EXPECT_NE(text.find("complete_task"), std::string::npos) << text;
  }
  EXPECT_NE(results[0]["results"][0]["content"].get<std::string>().find("web_fetch"),
            std::string::npos);
  EXPECT_NE(results[0]["results"][1]["content"].get<std::string>().find("frobnicate"),
            std::string::npos);
}

// ---- loop health ---------------------------------------------------------------------

TEST_F(LoopTest, ALoopRepeatingTheSameCallGetsANoteThenAFreshContextThenStopsAsStuck) {
  std::vector<json> turns;
  for (int i = 0; i < 6; ++i)
    turns.push_back(turn({read_call("r" + std::to_string(i))}));
  start({{"scripted", turns}}, "[loop_health]\nrepeated_call_limit = 2\n");
  const std::string id = create()["id"];
  const json loop = wait_final(*daemon_, id);
  EXPECT_EQ(loop["status"], "stuck") << loop.dump(2);
  const std::string reason = loop["status_reason"];
  EXPECT_NE(reason.find("read_file"), std::string::npos) << reason;
  EXPECT_NE(reason.find("answer.txt"), std::string::npos) << reason;
  EXPECT_NE(reason.find("same result 2 times"), std::string::npos) << reason;
  EXPECT_NE(reason.find("after a note and a fresh context"), std::string::npos) << reason;
  EXPECT_EQ(loop["iteration"], 2);
  EXPECT_EQ(loop["usage"]["model_turns"], 6);

  const auto steps = read_transcript(*daemon_, id);
  const auto notes = steps_of_kind(steps, "note");
  ASSERT_EQ(notes.size(), 2u);
  EXPECT_EQ(notes[0]["iteration"], 1);
  EXPECT_NE(notes[0]["data"]["text"].get<std::string>().find("try something different"),
            std::string::npos);
  EXPECT_EQ(notes[1]["iteration"], 1);
  EXPECT_NE(notes[1]["data"]["text"].get<std::string>().find("fresh context"), std::string::npos);
  // The note reached the model with the results of its call.
  const auto results = steps_of_kind(steps, "tool_results");
  ASSERT_EQ(results.size(), 6u);
  EXPECT_EQ(results[1]["data"]["note"], notes[0]["data"]["text"]);
  EXPECT_NE(results[1]["data"]["note"].get<std::string>().find("Repeating it"), std::string::npos);
  EXPECT_NE(results[3]["data"]["ends_iteration"].get<std::string>().find("fresh context"),
            std::string::npos);
  const auto started = steps_of_kind(steps, "iteration_started");
  ASSERT_EQ(started.size(), 2u);
  EXPECT_NE(started[1]["data"]["prompt"].get<std::string>().find("went round in circles"),
            std::string::npos);
}

TEST_F(LoopTest, IterationsThatChangeNothingAndFailAlikeGetANoteThenAFreshContextThenStuck) {
  // Each iteration the model only talks: nothing changes, validation fails
  // the same way every time.
  std::vector<json> turns;
  for (int i = 0; i < 4; ++i)
    turns.push_back(json{{"text", "It looks fine to me."}});
  start({{"scripted", turns}}, "[loop_health]\nunchanged_iteration_limit = 1\n");
  const std::string id = create()["id"];
  const json loop = wait_final(*daemon_, id);
  EXPECT_EQ(loop["status"], "stuck") << loop.dump(2);
  const std::string reason = loop["status_reason"];
  EXPECT_NE(reason.find("changed nothing and failed validation the same way"), std::string::npos)
      << reason;
  EXPECT_NE(reason.find("after a note and a fresh context"), std::string::npos) << reason;
  EXPECT_EQ(loop["iteration"], 4);

  const auto started = steps_of_kind(read_transcript(*daemon_, id), "iteration_started");
  ASSERT_EQ(started.size(), 4u);
  const std::string third = started[2]["data"]["prompt"];
  EXPECT_NE(third.find("Try a different approach"), std::string::npos) << third;
  EXPECT_NE(third.find("Iteration 2: changed nothing"), std::string::npos) << third;
  const std::string fourth = started[3]["data"]["prompt"];
  EXPECT_NE(fourth.find("progress notes were dropped"), std::string::npos) << fourth;
  EXPECT_EQ(fourth.find("Iteration 2: changed nothing"), std::string::npos) << fourth;
  for (std::size_t i = 0; i < 4; ++i)
    EXPECT_EQ(loop["iterations"][i]["changed"], false);
}

// ---- pause, resume, cancel --------------------------------------------------------------

TEST_F(LoopTest, PauseTakesEffectBetweenTurnsAndResumeCompletesTheLoop) {
  std::vector<json> turns = solving_turns();
  turns[0]["delay_ms"] = 400;
  start({{"scripted", turns}});
  EventLog events(*daemon_, {"loop"});
  const std::string id = create()["id"];
  ASSERT_TRUE(events.wait_for(step_event(id, "iteration_started")));
  const json paused_reply = daemon_->call("loop.pause", {{"id", id}});
  EXPECT_EQ(paused_reply["pause_requested"], true);
  const auto paused = events.wait_for(status_event(id, "paused"));
  ASSERT_TRUE(paused) << daemon_->log();

  // It paused at a turn boundary: the turn in flight finished, its call was
  // answered, and no further model call was made.
  json loop = get_loop(*daemon_, id);
  EXPECT_EQ(loop["status"], "paused");
  EXPECT_EQ(loop["usage"]["model_turns"], 1);
  auto steps = read_transcript(*daemon_, id);
  ASSERT_GE(steps.size(), 2u);
  EXPECT_EQ(steps.back()["kind"], "status");
  EXPECT_EQ(steps.back()["data"]["status"], "paused");
  EXPECT_EQ(steps[steps.size() - 2]["kind"], "tool_results");
  // A paused loop is not finished: it cannot be deleted.
  EXPECT_EQ(rpc_error_code(*daemon_, "loop.delete", {{"id", id}}), 1002);

  daemon_->call("loop.resume", {{"id", id}});
  loop = wait_final(*daemon_, id);
  EXPECT_EQ(loop["status"], "completed") << loop.dump(2);
  EXPECT_EQ(loop["usage"]["model_turns"], 3);
  steps = read_transcript(*daemon_, id);
  const auto statuses = steps_of_kind(steps, "status");
  ASSERT_EQ(statuses.size(), 3u);
  EXPECT_EQ(statuses[0]["data"]["status"], "paused");
  EXPECT_EQ(statuses[1]["data"]["status"], "running");
  EXPECT_EQ(statuses[2]["data"]["status"], "completed");
}

TEST_F(LoopTest, CancelAbortsAModelCallInFlight) {
  start({{"scripted", {turn({read_call("r1")}, {{"delay_ms", 20000}})}}});
  EventLog events(*daemon_, {"loop"});
  const std::string id = create()["id"];
  ASSERT_TRUE(events.wait_for(step_event(id, "iteration_started")));
  const auto asked = Clock::now();
  daemon_->call("loop.cancel", {{"id", id}});
  const json loop = wait_final(*daemon_, id, 5s);
  EXPECT_LT(Clock::now() - asked, 3s);
  EXPECT_EQ(loop["status"], "cancelled") << loop.dump(2);
  EXPECT_EQ(loop["usage"]["model_turns"], 0);
  EXPECT_EQ(rpc_error_code(*daemon_, "loop.cancel", {{"id", id}}), 1002);
}

TEST_F(LoopTest, CancelStopsARunningCommandPromptly) {
  start({{"scripted", {turn({tool_call("s1", "run_command", {{"command", "sleep 30"}})})}}});
  EventLog events(*daemon_, {"loop", "tool"});
  const std::string id = create()["id"];
  ASSERT_TRUE(events.wait_for(tool_event(id, "tool.started", "run_command"))) << daemon_->log();
  const auto asked = Clock::now();
  daemon_->call("loop.cancel", {{"id", id}});
  const auto finished = events.wait_for(tool_event(id, "tool.finished", "run_command"), 10s);
  ASSERT_TRUE(finished);
  EXPECT_EQ(events.events()[*finished].data["status"], "cancelled");
  const json loop = wait_final(*daemon_, id, 10s);
  EXPECT_LT(Clock::now() - asked, 5s);
  EXPECT_EQ(loop["status"], "cancelled") << loop.dump(2);
  EXPECT_EQ(loop["status_reason"], "cancelled by the user");
}

// ---- parallel read-only calls ------------------------------------------------------------

TEST_F(LoopTest, ReadOnlyCallsOfOneTurnRunInParallelAndAnswerInCallOrder) {
  start({{"scripted",
          {turn({read_call("p1", "src/alpha.txt"), tool_call("p2", "grep", {{"pattern", "answer"}}),
                 tool_call("p3", "glob", {{"pattern", "docs/*.md"}}),
                 read_call("p4", "src/beta.txt")}),
           turn({read_call("r1")}), turn({edit_call("e1", "41", "42")}),
           turn({complete_call("c1")})}}});
  EventLog events(*daemon_, {"tool"});
  const std::string id = create()["id"];
  const json loop = wait_final(*daemon_, id);
  EXPECT_EQ(loop["status"], "completed") << loop.dump(2);

  // Every read-only call of the turn had started before the first finished.
  ASSERT_TRUE(events.wait_for(tool_event(id, "tool.finished", "glob")));
  std::size_t started = 0;
  for (const proto::Event& event : events.events()) {
    if (event.data.value("loop_id", "") != id) continue;
    if (event.event == "tool.finished") break;
    if (event.event == "tool.started") ++started;
  }
  EXPECT_EQ(started, 4u) << "tool events before the first tool.finished";

  const auto results = results_of(id);
  ASSERT_FALSE(results.empty());
  const json& first = results[0]["results"];
  ASSERT_EQ(first.size(), 4u);
  const std::vector<std::string> ids = {"p1", "p2", "p3", "p4"};
  const std::vector<std::string> names = {"read_file", "grep", "glob", "read_file"};
  for (std::size_t i = 0; i < 4; ++i) {
    EXPECT_EQ(first[i]["call_id"], ids[i]);
    EXPECT_EQ(first[i]["name"], names[i]);
    EXPECT_EQ(first[i]["ok"], true) << first[i].dump();
  }
  EXPECT_NE(first[0]["content"].get<std::string>().find("alpha one"), std::string::npos);
  EXPECT_NE(first[1]["content"].get<std::string>().find("guide.md"), std::string::npos);
  EXPECT_NE(first[2]["content"].get<std::string>().find("docs/notes.md"), std::string::npos);
  EXPECT_NE(first[3]["content"].get<std::string>().find("beta two"), std::string::npos);
}

// ---- list, export, delete, errors ---------------------------------------------------------

TEST_F(LoopTest, ListFiltersByStatusAndTypeAndHidesDeletedLoops) {
  start({{"scripted", solving_turns()}, {"failing", {turn({}, {{"text", "No idea."}})}}});
  const std::string done = create()["id"];
  const std::string failed = create({{"provider", "failing"}, {"max_iterations", 1}})["id"];
  EXPECT_EQ(wait_final(*daemon_, done)["status"], "completed");
  EXPECT_EQ(wait_final(*daemon_, failed)["status"], "failed");

  auto ids_of = [](const json& result) {
    std::vector<std::string> ids;
    for (const json& loop : result["loops"])
      ids.push_back(loop["id"]);
    return ids;
  };
  EXPECT_EQ(ids_of(daemon_->call("loop.list")), (std::vector<std::string>{done, failed}));
  EXPECT_EQ(ids_of(daemon_->call("loop.list", {{"status", "completed"}})),
            std::vector<std::string>{done});
  EXPECT_EQ(ids_of(daemon_->call("loop.list", {{"status", "failed"}})),
            std::vector<std::string>{failed});
  EXPECT_TRUE(ids_of(daemon_->call("loop.list", {{"status", "running"}})).empty());
  EXPECT_EQ(ids_of(daemon_->call("loop.list", {{"type", "code"}})).size(), 2u);
  EXPECT_TRUE(ids_of(daemon_->call("loop.list", {{"type", "plan"}})).empty());
  EXPECT_TRUE(rpc_error_code(*daemon_, "loop.list", {{"status", "sleepy"}}).has_value());

  const json deleted = daemon_->call("loop.delete", {{"id", failed}});
  EXPECT_EQ(deleted["deleted"], true);
  EXPECT_EQ(deleted["worktree_removed"], false);
  EXPECT_EQ(ids_of(daemon_->call("loop.list")), std::vector<std::string>{done});
  EXPECT_EQ(ids_of(daemon_->call("loop.list", {{"include_deleted", true}})),
            (std::vector<std::string>{done, failed}));
}

TEST_F(LoopTest, AnExportedSessionReplaysTheLoop) {
  start({{"scripted",
          {turn({read_call("r1")}, {{"text", "Looking."}}), turn({edit_call("e1", "41", "43")}),
           turn({complete_call("c1")}), turn({read_call("r2")}),
           turn({edit_call("e2", "43", "42")}), turn({complete_call("c2")})}},
         {"replay", {}}});
  const std::string first = create()["id"];
  const json original = wait_final(*daemon_, first);
  ASSERT_EQ(original["status"], "completed");

  const json exported = daemon_->call("loop.export", {{"id", first}});
  EXPECT_EQ(exported["loop_id"], first);
  const json& turns = exported["turns"];
  ASSERT_EQ(turns.size(), 6u);
  EXPECT_EQ(turns[0]["text"], "Looking.");
  EXPECT_EQ(turns[0]["tool_calls"][0]["name"], "read_file");
  EXPECT_EQ(turns[4]["tool_calls"][0]["id"], "e2");

  // The "replay" provider is built on first use, so its session can be
  // written now: the export, one turn a line.
  write_session(scripts_.path("replay.jsonl"), std::vector<json>(turns.begin(), turns.end()));
  const std::string second = create({{"provider", "replay"}})["id"];
  const json replayed = wait_final(*daemon_, second);
  EXPECT_EQ(replayed["status"], "completed") << replayed.dump(2);
  EXPECT_EQ(replayed["iteration"], original["iteration"]);
  EXPECT_EQ(replayed["usage"]["model_turns"], original["usage"]["model_turns"]);
  EXPECT_EQ(replayed["usage"]["tool_calls"], original["usage"]["tool_calls"]);
  EXPECT_EQ(replayed["usage"]["output_tokens"], original["usage"]["output_tokens"]);
  for (std::size_t i = 0; i < 2; ++i) {
    for (const char* key : {"passed", "exit_code"}) {
      EXPECT_EQ(replayed["iterations"][i]["validation"][key],
                original["iterations"][i]["validation"][key])
          << "iteration " << i + 1 << " " << key;
    }
  }
  // What each validation printed is in the journal's validation steps.
  const auto first_validations = steps_of_kind(read_transcript(*daemon_, first), "validation");
  const auto second_validations = steps_of_kind(read_transcript(*daemon_, second), "validation");
  ASSERT_EQ(first_validations.size(), 2u);
  ASSERT_EQ(second_validations.size(), 2u);
  for (std::size_t i = 0; i < 2; ++i) {
    EXPECT_EQ(second_validations[i]["data"]["output"], first_validations[i]["data"]["output"])
        << "iteration " << i + 1;
  }
  EXPECT_EQ(branch_diff(repo_.path, repo_.base_commit, "loop/" + second),
            branch_diff(repo_.path, repo_.base_commit, "loop/" + first));
  const json again = daemon_->call("loop.export", {{"id", second}})["turns"];
  ASSERT_EQ(again.size(), turns.size());
  for (std::size_t i = 0; i < turns.size(); ++i)
    EXPECT_EQ(again[i]["tool_calls"], turns[i]["tool_calls"]) << "turn " << i;
}

TEST_F(LoopTest, DeleteRemovesAFinishedLoopsWorktreeAndBranchAndRefusesARunningLoop) {
  start(
      {{"scripted", solving_turns()}, {"slow", {turn({read_call("r1")}, {{"delay_ms", 20000}})}}});
  const json finished = create();
  const std::string id = finished["id"];
  const std::string worktree = finished["worktree"];
  ASSERT_EQ(wait_final(*daemon_, id)["status"], "completed");
  ASSERT_TRUE(std::filesystem::exists(worktree));
  ASSERT_TRUE(branch_exists(repo_.path, "loop/" + id));

  const json deleted = daemon_->call(
      "loop.delete", {{"id", id}, {"remove_worktree", true}, {"remove_branch", true}});
  EXPECT_EQ(deleted["deleted"], true);
  EXPECT_EQ(deleted["worktree_removed"], true);
  EXPECT_EQ(deleted["branch_removed"], true);
  EXPECT_FALSE(std::filesystem::exists(worktree));
  EXPECT_FALSE(branch_exists(repo_.path, "loop/" + id));
  EXPECT_EQ(git(repo_.path, {"worktree", "list", "--porcelain"}).out.find(worktree),
            std::string::npos);
  // The record stays, marked deleted.
  EXPECT_EQ(get_loop(*daemon_, id)["deleted"], true);

  const std::string running = create({{"provider", "slow"}})["id"];
  EXPECT_EQ(rpc_error_code(*daemon_, "loop.delete", {{"id", running}, {"remove_worktree", true}}),
            1002);
  EXPECT_EQ(get_loop(*daemon_, running)["status"], "running");
  daemon_->call("loop.cancel", {{"id", running}});
  EXPECT_EQ(wait_final(*daemon_, running)["status"], "cancelled");
}

TEST_F(LoopTest, UnknownLoopIdsAre1001) {
  start({{"scripted", solving_turns()}});
  for (const char* method : {"loop.get", "loop.transcript", "loop.export", "loop.pause",
                             "loop.resume", "loop.cancel", "loop.delete"}) {
    EXPECT_EQ(rpc_error_code(*daemon_, method, {{"id", "c999"}}), 1001) << method;
  }
}

}  // namespace
}  // namespace loopr::test
