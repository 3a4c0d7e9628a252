// looprctl's loop commands: the real binary against a FakeDaemon (what it
// sends, what it prints, its exit statuses), and the pure rendering and
// following parts in process.
#include <fcntl.h>
#include <gtest/gtest.h>
#include <poll.h>
#include <spawn.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <csignal>
#include <cstring>
#include <sstream>

#include "client/control_client.hpp"
#include "client/loop_follow.hpp"
#include "client/loop_view.hpp"
#include "proto/control_messages.hpp"
#include "tests/client/fake_daemon.hpp"
#include "tests/client/loop_samples.hpp"
#include "tests/client/looprctl_fixture.hpp"
#include "tests/client/looprctl_run.hpp"
#include "tests/support/temp_tree.hpp"

namespace loopr::test {
namespace {

using nlohmann::json;

class LoopCommandsTest : public LooprctlFixture {};

// ---- loops ----

TEST_F(LoopCommandsTest, LoopsPrintsATableWithHostileStringsEscaped) {
  json hostile = a_loop("l-2\x1b]0;owned\x07", "failed");
  hostile["task"] = "\x1b[2Jclear the screen\nsecond line";
  hostile["type"] =
      "co\xc2\x9b"
      "de";
  fake_.answer("loop.list", {{"loops", {a_loop("l-1", "running"), hostile}}});
  const CtlRun run = ctl({"loops"});
  ASSERT_EQ(run.exit_code, 0) << run.err;
  EXPECT_EQ(params_of("loop.list"), (json{{"include_deleted", false}}));
  const auto lines = lines_of(run.out);
  ASSERT_EQ(lines.size(), 3u) << run.out;
  for (const char* header : {"ID", "TYPE", "STATUS", "ITER", "TOKENS", "COST", "UPDATED", "TASK"}) {
    EXPECT_TRUE(contains(lines[0], header)) << lines[0];
  }
  EXPECT_TRUE(contains(lines[1], "l-1")) << lines[1];
  EXPECT_TRUE(contains(lines[1], "running")) << lines[1];
  EXPECT_TRUE(contains(lines[1], "2/50")) << lines[1];
  EXPECT_TRUE(contains(lines[1], "12.3k")) << lines[1];
  EXPECT_TRUE(contains(lines[1], "$0.0123")) << lines[1];
  EXPECT_TRUE(contains(lines[1], "make the tests pass")) << lines[1];
  EXPECT_TRUE(terminal_safe(run.out)) << run.out;
  EXPECT_TRUE(contains(lines[2], "l-2\\x1b]0;owned\\x07")) << lines[2];
  EXPECT_TRUE(contains(lines[2], "\\x1b[2Jclear the screen...")) << lines[2];
  EXPECT_TRUE(contains(lines[2], "co\\x9bde")) << lines[2];
  EXPECT_FALSE(contains(run.out, "second line")) << run.out;
}

TEST_F(LoopCommandsTest, LoopsSendsTheFiltersAndPrintsJson) {
  const json result = {{"loops", json::array()}};
  fake_.answer("loop.list", result);
  const CtlRun run = ctl({"loops", "--status", "running", "--type", "code", "--all", "--json"});
  ASSERT_EQ(run.exit_code, 0) << run.err;
  EXPECT_EQ(params_of("loop.list"),
            (json{{"include_deleted", true}, {"status", "running"}, {"type", "code"}}));
  EXPECT_EQ(json::parse(run.out), result);
}

TEST_F(LoopCommandsTest, LoopsWithoutAnySaysSo) {
  fake_.answer("loop.list", {{"loops", json::array()}});
  const CtlRun run = ctl({"loops"});
  ASSERT_EQ(run.exit_code, 0) << run.err;
  EXPECT_EQ(run.out, "no loops\n");
}

TEST_F(LoopCommandsTest, MalformedLoopListExitsFour) {
  fake_.answer("loop.list", {{"loops", "many"}});
  const CtlRun run = ctl({"loops"});
  EXPECT_EQ(run.exit_code, 4) << run.err;
}

// ---- loop show ----

TEST_F(LoopCommandsTest, ShowPrintsStatusWhereUsageBudgetIterationsAndValidation) {
  json loop = a_loop("l-3", "stuck");
  loop["status_reason"] = "the same edit failed 3 times\x1b[31m";
  // As looprd sends it: limits and left name usd and wall_clock_s, used is
  // a usage object.
  loop["budget"] = {{"limits", {{"usd", 5.0}, {"tool_calls", 200}, {"wall_clock_s", 3600}}},
                    {"used", loop["usage"]},
                    {"left", {{"usd", 4.9877}, {"tool_calls", 191}, {"wall_clock_s", 3505}}}};
  loop["notes"] = {"read the tests first\nthen \x1b[1mfix", "done"};
  loop["deleted"] = true;
  loop["iterations"] = {
      {{"iteration", 1},
       {"started_at_ms", 1000},
       {"ended_at_ms", 61000},
       {"model_turns", 3},
       {"tool_calls", 7},
       {"commit", "abcdef0123456789"},
       {"changed", 2},
       {"validation", {{"passed", false}, {"exit_code", 2}, {"output", "x"}}}},
      {{"iteration", 2}, {"model_turns", "bogus"}, {"commit", nullptr}, {"validation", nullptr}}};
  loop["last_validation"] = {{"iteration", 1},
                             {"passed", false},
                             {"exit_code", 2},
                             {"output", "FAIL test_a\n\x1b[2Jboom\n"}};
  fake_.answer("loop.get", {{"loop", loop}});
  const CtlRun run = ctl({"loop", "show", "l-3"});
  ASSERT_EQ(run.exit_code, 0) << run.err;
  EXPECT_EQ(params_of("loop.get"), (json{{"id", "l-3"}}));
  EXPECT_TRUE(terminal_safe(run.out)) << run.out;
  for (const char* part : {"loop l-3  stuck",
                           "the same edit failed 3 times\\x1b[31m",
                           "make the tests pass",
                           "/src/app",
                           "loop/l-3",
                           "/src/.loopr-worktrees/l-3",
                           "9f1c2d3e4f5a",
                           "anthropic / claude-sonnet-4-5",
                           "make test",
                           "2 of 50",
                           "input 12,000, output 300, cache read 0, cache write 0",
                           "$0.0123",
                           "$5.00",
                           "$4.99",
                           "191",
                           "abcdef01",
                           "fail (exit 2)",
                           "1 min",
                           "last validation (iteration 1): validation failed (exit 2)",
                           "  | FAIL test_a",
                           "  | \\x1b[2Jboom",
                           "git -C /src/app diff 9f1c2d3e4f5a..loop/l-3"}) {
    EXPECT_TRUE(contains(run.out, part)) << part << "\n" << run.out;
  }
}

// The repository's own commands and worktree preparation (issue 25), as
// the loop recorded them: only what is set is printed.
TEST_F(LoopCommandsTest, ShowPrintsTheRepositorysCommandsAndWorktreePreparation) {
  json loop = a_loop("l-4", "running");
  loop["repo_settings"] = {
      {"commands", {{"build", ""}, {"test", "npx nyc tape test/*.js"}, {"lint", "eslint ."}}},
      {"prep", {{"include", {"node_modules", ".env"}}, {"setup", "npm ci --offline"}}}};
  fake_.answer("loop.get", {{"loop", loop}});
  const CtlRun run = ctl({"loop", "show", "l-4"});
  ASSERT_EQ(run.exit_code, 0) << run.err;
  for (const char* part : {"commands:  test `npx nyc tape test/*.js`, lint `eslint .`",
                           "include:   node_modules, .env", "setup:     npm ci --offline"}) {
    EXPECT_TRUE(contains(run.out, part)) << part << "\n" << run.out;
  }
  EXPECT_FALSE(contains(run.out, "build `")) << run.out;

  json plain = a_loop("l-5", "running");
  fake_.answer("loop.get", {{"loop", plain}});
  const CtlRun without = ctl({"loop", "show", "l-5"});
  EXPECT_FALSE(contains(without.out, "commands:")) << without.out;
}

// [validation] protected_paths (issue 27): the patterns and the latest
// attempts on them, each escaped for the terminal.
TEST_F(LoopCommandsTest, ShowPrintsTheProtectedPathsAndTheAttemptsOnThem) {
  json loop = a_loop("l-6", "completed");
  loop["protected"] = {{"paths", {"test.sh", "tests/**"}},
                       {"event_count", 2},
                       {"events",
                        {{{"iteration", 1},
                          {"action", "refused"},
                          {"tool", "edit_file"},
                          {"path", "test.sh"},
                          {"pattern", "test.sh"}},
                         {{"iteration", 1},
                          {"action", "put back"},
                          {"path", "tests/\x1b[2Ja"},
                          {"change", "added"}}}}};
  fake_.answer("loop.get", {{"loop", loop}});
  const CtlRun run = ctl({"loop", "show", "l-6"});
  ASSERT_EQ(run.exit_code, 0) << run.err;
  EXPECT_TRUE(terminal_safe(run.out)) << run.out;
  for (const char* part : {"protected: test.sh, tests/** (2 attempts)",
                           "  iteration 1: edit_file test.sh refused (test.sh)",
                           "  iteration 1: tests/\\x1b[2Ja added, put back"}) {
    EXPECT_TRUE(contains(run.out, part)) << part << "\n" << run.out;
  }
  json untouched = a_loop("l-7", "running");
  untouched["protected"] = {{"paths", {"tests"}}, {"event_count", 0}, {"events", json::array()}};
  fake_.answer("loop.get", {{"loop", untouched}});
  EXPECT_TRUE(contains(ctl({"loop", "show", "l-7"}).out, "protected: tests (never touched)"));
  fake_.answer("loop.get", {{"loop", a_loop("l-8", "running")}});
  EXPECT_FALSE(contains(ctl({"loop", "show", "l-8"}).out, "protected:"));
}

TEST_F(LoopCommandsTest, ShowOfAnUnknownLoopExitsOneWithTheDaemonsMessage) {
  fake_.on("loop.get", [](const proto::Request& request) {
    return FakeReply::error(request, 1001, "no loop 'l-404'", {{"code", "not_found"}});
  });
  const CtlRun run = ctl({"loop", "show", "l-404"});
  EXPECT_EQ(run.exit_code, 1);
  EXPECT_TRUE(contains(run.err, "no loop 'l-404'")) << run.err;
}

// ---- loop run ----

TEST_F(LoopCommandsTest, RunDetachSendsTheOptionsWithAnAbsoluteRepoAndPrintsTheId) {
  tree_.mkdir("work/app");
  fake_.on("loop.create", [](const proto::Request& request) {
    return FakeReply::result(request, {{"loop", a_loop("l-7", "running")}});
  });
  CtlOptions options;
  options.cwd = tree_.path("work");
  const CtlRun run = ctl({"loop", "run", "--repo", "app/./", "--provider", "scripted", "--model",
                          "m-1", "--base", "HEAD~1", "--max-iterations", "7", "--budget-usd", "2.5",
                          "--validate", "make check", "--detach", "fix the build"},
                         options);
  ASSERT_EQ(run.exit_code, 0) << run.err;
  EXPECT_EQ(run.out, "l-7\n");
  EXPECT_EQ(params_of("loop.create"), (json{{"type", "code"},
                                            {"task", "fix the build"},
                                            {"repo", tree_.path("work/app")},
                                            {"provider", "scripted"},
                                            {"model", "m-1"},
                                            {"base", "HEAD~1"},
                                            {"max_iterations", 7},
                                            {"budget", {{"usd", 2.5}}},
                                            {"validate", "make check"}}));
  EXPECT_TRUE(fake_.requests("events.subscribe").empty());
}

// --include-uncommitted and --validate-timeout reach loop.create; the
// uncommitted paths a loop leaves out are said on stderr (stdout keeps the
// id alone for scripts).
TEST_F(LoopCommandsTest, RunSendsIncludeUncommittedAndTheValidateTimeoutAndSaysWhatIsLeftOut) {
  tree_.mkdir("app");
  fake_.on("loop.create", [](const proto::Request& request) {
    json loop = a_loop("l-7", "running");
    loop["uncommitted"] = {{"included", false}, {"paths", {"answer.txt", "extra.txt"}}};
    return FakeReply::result(request, {{"loop", loop}});
  });
  CtlRun run = ctl({"loop", "run", "--repo", tree_.path("app"), "--validate-timeout", "30",
                    "--detach", "fix it"});
  ASSERT_EQ(run.exit_code, 0) << run.err;
  EXPECT_EQ(run.out, "l-7\n");
  EXPECT_EQ(params_of("loop.create")["validate_timeout_s"], 30);
  EXPECT_FALSE(params_of("loop.create").contains("include_uncommitted"));
  EXPECT_NE(run.err.find("left out: uncommitted changes of your checkout (answer.txt, extra.txt)"),
            std::string::npos)
      << run.err;
  EXPECT_NE(run.err.find("--include-uncommitted"), std::string::npos) << run.err;

  run = ctl(
      {"loop", "run", "--repo", tree_.path("app"), "--include-uncommitted", "--detach", "fix it"});
  ASSERT_EQ(run.exit_code, 0) << run.err;
  const json second = fake_.requests("loop.create").back().params;
  EXPECT_EQ(second["include_uncommitted"], true);
  EXPECT_FALSE(second.contains("validate_timeout_s"));
}

TEST_F(LoopCommandsTest, AValidateTimeoutOutsideOneSecondToADayIsAUsageError) {
  tree_.mkdir("app");
  expect_usage_errors(
      {{"loop", "run", "--repo", tree_.path("app"), "--validate-timeout", "0", "x"},
       {"loop", "run", "--repo", tree_.path("app"), "--validate-timeout", "86401", "x"},
       {"plan", "--repo", tree_.path("app"), "--validate-timeout", "-1", "x"}});
}

TEST_F(LoopCommandsTest, RunDetachWithJsonPrintsTheLoop) {
  fake_.answer("loop.create", {{"loop", a_loop("l-7", "queued")}});
  const CtlRun run = ctl({"--json", "loop", "run", "--repo", "/src/app", "--detach", "task"});
  ASSERT_EQ(run.exit_code, 0) << run.err;
  EXPECT_EQ(json::parse(run.out), a_loop("l-7", "queued"));
  EXPECT_EQ(params_of("loop.create"),
            (json{{"type", "code"}, {"task", "task"}, {"repo", "/src/app"}}));
}

// The events a loop l-7 sends from creation to its end `final_status`, with
// another loop's events mixed in.
FakeReply run_to(const proto::Request& request, const std::string& final_status) {
  FakeReply reply = FakeReply::result(request, {{"loop", a_loop("l-7", "queued")}});
  reply.event("loop.created", {{"loop", a_loop("l-7", "queued")}})
      .event("loop.updated", {{"loop", a_loop("l-7", "running")}})
      .event("loop.iteration", {{"loop_id", "l-7"}, {"iteration", 1}, {"phase", "started"}})
      .event("loop.step",
             {{"loop_id", "l-7"},
              {"step", a_step(2, 1, "iteration_started", {{"system", "s"}, {"prompt", "p"}})}})
      .event("chat.chunk",
             {{"loop_id", "l-9"}, {"iteration", 1}, {"sequence", 1}, {"text", "NOT MINE"}})
      .event("chat.chunk", {{"loop_id", "l-7"},
                            {"iteration", 1},
                            {"sequence", 1},
                            {"text", "Let me read \x1b[1mthe"}})
      .event("chat.chunk",
             {{"loop_id", "l-7"}, {"iteration", 1}, {"sequence", 1}, {"text", " tests."}})
      .event("loop.step",
             {{"loop_id", "l-7"},
              {"step", a_step(3, 1, "model_turn", model_turn(1, "Let me read the tests."))}})
      .event("tool.started", {{"call_id", "c-1"}, {"tool", "read_file"}, {"loop_id", "l-7"}})
      .event("tool.started", {{"call_id", "c-2"}, {"tool", "grep_other"}, {"loop_id", "l-9"}})
      .event("tool.finished", {{"call_id", "c-1"},
                               {"tool", "read_file"},
                               {"status", "success"},
                               {"ok", true},
                               {"duration_ms", 12},
                               {"loop_id", "l-7"}})
      .event("tool.finished", {{"call_id", "c-2"},
                               {"tool", "grep_other"},
                               {"status", "success"},
                               {"ok", true},
                               {"duration_ms", 1},
                               {"loop_id", "l-9"}})
      .event("provider.retry", {{"loop_id", "l-7"},
                                {"provider", "anthropic"},
                                {"attempt", 1},
                                {"max_retries", 5},
                                {"delay_ms", 1500},
                                {"reason", "overloaded (529)"}})
      .event("loop.step",
             {{"loop_id", "l-7"},
              {"step", a_step(4, 1, "committed", {{"commit", "0123456789ab"}, {"changed", 3}})}})
      .event("loop.iteration",
             {{"loop_id", "l-7"},
              {"iteration", 1},
              {"phase", "validated"},
              {"validation",
               {{"passed", false}, {"exit_code", 1}, {"output", "line 1\nline 2\nFAILED: x\n"}}}})
      .event("loop.step", {{"loop_id", "l-7"},
                           {"step", a_step(5, 1, "validation",
                                           {{"passed", false},
                                            {"exit_code", 1},
                                            {"output", "line 1\nline 2\nFAILED: x\n"}})}})
      .event("loop.iteration", {{"loop_id", "l-7"}, {"iteration", 2}, {"phase", "started"}})
      .event("loop.iteration", {{"loop_id", "l-7"},
                                {"iteration", 2},
                                {"phase", "validated"},
                                {"validation", {{"passed", true}, {"exit_code", 0}}}})
      .event("loop.updated", {{"loop", a_loop("l-9", "completed")}});
  json last = a_loop("l-7", final_status);
  reply.event("loop.updated", {{"loop", last}});
  return reply;
}

TEST_F(LoopCommandsTest, RunFollowsTheLoopToCompletionAndExitsZero) {
  fake_.on("events.subscribe", [](const proto::Request& request) {
    return FakeReply::result(request, {{"topics", request.params["topics"]}});
  });
  fake_.on("loop.create",
           [](const proto::Request& request) { return run_to(request, "completed"); });
  json done = a_loop("l-7", "completed");
  done["status_reason"] = "validation passed";
  fake_.answer("loop.get", {{"loop", done}});
  const CtlRun run = ctl({"loop", "run", "--repo", "/src/app", "make the tests pass"});
  ASSERT_EQ(run.exit_code, 0) << run.out << run.err;
  EXPECT_TRUE(terminal_safe(run.out)) << run.out;

  const auto requests = fake_.requests();
  ASSERT_GE(requests.size(), 4u);
  EXPECT_EQ(requests[1].method, "events.subscribe");
  EXPECT_EQ(requests[1].params,
            (json{{"topics", {"loop", "chat", "provider", "tool", "approval"}}}));
  EXPECT_EQ(requests[2].method, "loop.create");
  EXPECT_EQ(requests[3].method, "loop.get");

  EXPECT_TRUE(contains(run.out, "loop l-7: queued on branch loop/l-7")) << run.out;
  EXPECT_EQ(count_of(run.out, "== iteration 1 =="), 1u) << run.out;
  EXPECT_EQ(count_of(run.out, "== iteration 2 =="), 1u) << run.out;
  EXPECT_TRUE(contains(run.out, "Let me read \\x1b[1mthe tests.\n")) << run.out;
  EXPECT_EQ(count_of(run.out, "Let me read"), 1u) << run.out;
  EXPECT_FALSE(contains(run.out, "NOT MINE")) << run.out;
  EXPECT_FALSE(contains(run.out, "grep_other")) << run.out;
  EXPECT_TRUE(contains(run.out, "  tool read_file: success, 12 ms\n")) << run.out;
  EXPECT_TRUE(contains(run.out, "provider anthropic: retry 1/5 in 1.5 s: overloaded (529)"))
      << run.out;
  EXPECT_TRUE(contains(run.out, "committed 01234567 (3 changed)")) << run.out;
  EXPECT_EQ(count_of(run.out, "validation failed (exit 1)"), 1u) << run.out;
  EXPECT_TRUE(contains(run.out, "  | FAILED: x\n")) << run.out;
  EXPECT_TRUE(contains(run.out, "validation passed (exit 0)")) << run.out;
  EXPECT_TRUE(contains(run.out, "status: running")) << run.out;
  // The summary, from loop.get.
  for (const char* part :
       {"loop l-7 completed: validation passed", "iterations: 2 of 50",
        "input 12,000, output 300, cache read 0, cache write 0", "cost:       $0.0123",
        "branch:     loop/l-7", "git -C /src/app diff 9f1c2d3e4f5a..loop/l-7",
        "looprctl loop show l-7"}) {
    EXPECT_TRUE(contains(run.out, part)) << part << "\n" << run.out;
  }
}

TEST_F(LoopCommandsTest, RunOfALoopThatFailsExitsThree) {
  fake_.answer("events.subscribe", {{"topics", json::array()}});
  fake_.on("loop.create", [](const proto::Request& request) { return run_to(request, "failed"); });
  json failed = a_loop("l-7", "failed");
  failed["status_reason"] = "max_iterations reached";
  fake_.answer("loop.get", {{"loop", failed}});
  const CtlRun run = ctl({"loop", "run", "--repo", "/src/app", "make the tests pass"});
  EXPECT_EQ(run.exit_code, 3) << run.out << run.err;
  EXPECT_TRUE(contains(run.out, "loop l-7 failed: max_iterations reached")) << run.out;
}

// Headless runs branch on the exit status: one per outcome.
TEST_F(LoopCommandsTest, RunExitsWithOneStatusPerOutcome) {
  const std::vector<std::pair<std::string, int>> outcomes = {
      {"completed", 0}, {"failed", 3}, {"stuck", 4}, {"budget_exhausted", 5}, {"cancelled", 6}};
  for (const auto& [status, expected] : outcomes) {
    fake_.answer("events.subscribe", {{"topics", json::array()}});
    fake_.on("loop.create",
             [status](const proto::Request& request) { return run_to(request, status); });
    fake_.answer("loop.get", {{"loop", a_loop("l-7", status)}});
    for (bool headless : {false, true}) {
      std::vector<std::string> args = {"loop", "run", "--repo", "/src/app", "task"};
      if (headless) args.insert(args.begin(), "--json");
      const CtlRun run = ctl(args);
      EXPECT_EQ(run.exit_code, expected) << status << (headless ? " --json" : "") << run.err;
    }
  }
}

// Nobody can answer an approval in a headless run: it stops following at
// the first approval one of its loop's calls waits for, and exits 7; a person
// at the terminal is told how to answer it, and it follows on.
TEST_F(LoopCommandsTest, AHeadlessRunExitsSevenWhenACallWaitsForApproval) {
  fake_.answer("events.subscribe", {{"topics", json::array()}});
  fake_.on("loop.create", [](const proto::Request& request) {
    FakeReply reply = FakeReply::result(request, {{"loop", a_loop("l-7", "running")}});
    reply
        .event("approval.requested", {{"id", "a-9"},
                                      {"call_id", "c-1"},
                                      {"tool", "run_command"},
                                      {"loop_id", "l-8"}})  // another loop's: ignored
        .event("approval.requested",
               {{"id", "a-3"}, {"call_id", "c-2"}, {"tool", "run_command"}, {"loop_id", "l-7"}})
        .event("loop.updated", {{"loop", a_loop("l-7", "completed")}});
    return reply;
  });
  fake_.answer("loop.get", {{"loop", a_loop("l-7", "running")}});
  const CtlRun headless = ctl({"--json", "loop", "run", "--repo", "/src/app", "task"});
  EXPECT_EQ(headless.exit_code, 7) << headless.out << headless.err;
  EXPECT_TRUE(contains(headless.out, "\"a-3\"")) << headless.out;
  EXPECT_FALSE(contains(headless.out, "\"completed\"")) << "it stopped at the approval";
  EXPECT_TRUE(contains(headless.err, "waits for an approval")) << headless.err;

  fake_.answer("loop.get", {{"loop", a_loop("l-7", "completed")}});
  const CtlRun person = ctl({"loop", "run", "--repo", "/src/app", "task"});
  EXPECT_EQ(person.exit_code, 0) << person.out << person.err;
  EXPECT_TRUE(contains(person.out, "waiting for your approval: run_command (a-3)")) << person.out;
  EXPECT_TRUE(contains(person.out, "looprctl approve a-3")) << person.out;
  EXPECT_FALSE(contains(person.out, "a-9")) << person.out;
}

TEST_F(LoopCommandsTest, RunWithJsonPrintsJsonLines) {
  fake_.answer("events.subscribe", {{"topics", json::array()}});
  fake_.on("loop.create", [](const proto::Request& request) { return run_to(request, "stuck"); });
  fake_.answer("loop.get", {{"loop", a_loop("l-7", "stuck")}});
  const CtlRun run = ctl({"--json", "loop", "run", "--repo", "/src/app", "task"});
  EXPECT_EQ(run.exit_code, 4) << run.err;  // stuck
  const auto lines = lines_of(run.out);
  ASSERT_GE(lines.size(), 3u) << run.out;
  std::vector<json> parsed;
  for (const auto& line : lines)
    parsed.push_back(json::parse(line));
  EXPECT_EQ(parsed.front()["loop"]["id"], "l-7");
  EXPECT_EQ(parsed.back(), (json{{"loop", a_loop("l-7", "stuck")}}));
  for (std::size_t i = 1; i + 1 < parsed.size(); ++i) {
    EXPECT_TRUE(parsed[i].contains("event")) << lines[i];
    EXPECT_FALSE(contains(lines[i], "l-9")) << lines[i];
  }
}

TEST_F(LoopCommandsTest, RunOfALoopThatEndedBeforeCreateAnsweredDoesNotWait) {
  fake_.answer("events.subscribe", {{"topics", json::array()}});
  fake_.on("loop.create", [](const proto::Request& request) {
    FakeReply reply = FakeReply::result(request, {{"loop", a_loop("l-7", "running")}});
    reply.event_first("loop.updated", {{"loop", a_loop("l-7", "completed")}});
    return reply;
  });
  fake_.answer("loop.get", {{"loop", a_loop("l-7", "completed")}});
  const CtlRun run = ctl({"loop", "run", "--repo", "/src/app", "task"});
  EXPECT_EQ(run.exit_code, 0) << run.err;
  EXPECT_TRUE(contains(run.out, "loop l-7 completed")) << run.out;
}

TEST_F(LoopCommandsTest, RunEndsUnreachableWhenTheDaemonGoesAway) {
  fake_.answer("events.subscribe", {{"topics", json::array()}});
  fake_.on("loop.create", [](const proto::Request& request) {
    FakeReply reply = FakeReply::result(request, {{"loop", a_loop("l-7", "running")}});
    reply.close_connection = true;
    return reply;
  });
  const CtlRun run = ctl({"loop", "run", "--repo", "/src/app", "task"});
  // An error, not an outcome: 3 would say the loop failed.
  EXPECT_EQ(run.exit_code, 1) << run.err;
  EXPECT_TRUE(contains(run.err, "looprctl:")) << run.err;
}

// Spawns looprctl, waits until its stdout shows `ready`, sends SIGINT, and
// collects the rest.
CtlRun interrupt_when(const std::vector<std::string>& args, const std::string& ready,
                      const CtlOptions& options) {
  int out_pipe[2], err_pipe[2];
  if (::pipe2(out_pipe, O_CLOEXEC) != 0 || ::pipe2(err_pipe, O_CLOEXEC) != 0) {
    throw std::runtime_error("pipe2 failed");
  }
  posix_spawn_file_actions_t actions;
  posix_spawn_file_actions_init(&actions);
  posix_spawn_file_actions_addopen(&actions, 0, "/dev/null", O_RDONLY, 0);
  posix_spawn_file_actions_adddup2(&actions, out_pipe[1], 1);
  posix_spawn_file_actions_adddup2(&actions, err_pipe[1], 2);
  std::vector<std::string> argv_text = {bin_path("looprctl")};
  argv_text.insert(argv_text.end(), args.begin(), args.end());
  std::vector<char*> argv;
  for (auto& arg : argv_text)
    argv.push_back(arg.data());
  argv.push_back(nullptr);
  std::vector<std::string> env_text = {"LOOPR_CONFIG_DIR=" + options.config_dir,
                                       "LOOPR_STATE_DIR=" + options.state_dir,
                                       "PATH=/usr/bin:/bin"};
  std::vector<char*> env;
  for (auto& variable : env_text)
    env.push_back(variable.data());
  env.push_back(nullptr);
  pid_t pid = -1;
  const int rc =
      ::posix_spawn(&pid, argv_text[0].c_str(), &actions, nullptr, argv.data(), env.data());
  posix_spawn_file_actions_destroy(&actions);
  ::close(out_pipe[1]);
  ::close(err_pipe[1]);
  if (rc != 0) throw std::runtime_error(std::string("spawn failed: ") + std::strerror(rc));

  CtlRun run;
  char buffer[4096];
  bool interrupted = false;
  // A looprctl that never shows `ready` is killed after a generous limit, so
  // the test fails instead of hanging.
  const auto give_up = std::chrono::steady_clock::now() + std::chrono::seconds(60);
  for (;;) {
    pollfd readable{out_pipe[0], POLLIN, 0};
    const int polled = ::poll(&readable, 1, 100);
    if (polled < 0 && errno != EINTR) break;
    if (polled <= 0) {
      if (std::chrono::steady_clock::now() > give_up) ::kill(pid, SIGKILL);
      continue;
    }
    const ssize_t n = ::read(out_pipe[0], buffer, sizeof buffer);
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0) break;
    run.out.append(buffer, static_cast<std::size_t>(n));
    if (!interrupted && contains(run.out, ready)) {
      ::kill(pid, SIGINT);
      interrupted = true;
    }
  }
  for (ssize_t n; (n = ::read(err_pipe[0], buffer, sizeof buffer)) > 0;)
    run.err.append(buffer, static_cast<std::size_t>(n));
  ::close(out_pipe[0]);
  ::close(err_pipe[0]);
  int status = 0;
  while (::waitpid(pid, &status, 0) < 0 && errno == EINTR) {
  }
  run.exit_code = WIFEXITED(status) ? WEXITSTATUS(status) : 128 + WTERMSIG(status);
  return run;
}

TEST_F(LoopCommandsTest, CtrlCWhileFollowingDetachesAndExitsZero) {
  fake_.answer("events.subscribe", {{"topics", json::array()}});
  fake_.on("loop.create", [](const proto::Request& request) {
    FakeReply reply = FakeReply::result(request, {{"loop", a_loop("l-7", "running")}});
    reply.event("chat.chunk",
                {{"loop_id", "l-7"}, {"iteration", 1}, {"sequence", 1}, {"text", "half a line"}});
    return reply;  // and nothing more: the loop goes on
  });
  start();
  const CtlRun run =
      interrupt_when({"--socket", fake_.socket_path(), "loop", "run", "--repo", "/src/app", "task"},
                     "half a line", hermetic());
  EXPECT_EQ(run.exit_code, 0) << run.out << run.err;
  EXPECT_TRUE(contains(run.out, "half a line\n")) << run.out;
  EXPECT_TRUE(contains(run.err,
                       "detached; the loop goes on \xe2\x80\x94 follow it with: looprctl loop "
                       "logs l-7 --follow"))
      << run.err;
  EXPECT_TRUE(fake_.requests("loop.cancel").empty());
}

// ---- usage and reachability ----

TEST_F(LoopCommandsTest, UsageMistakesExitTwoAndSendNothing) {
  expect_usage_errors(std::vector<std::vector<std::string>>{
      std::vector<std::string>{"loop"},
      {"loop", "run", "--repo", "/src/app"},
      {"loop", "run", "--repo", "/src/app", "   "},
      {"loop", "run", "task"},
      {"loop", "run", "--repo", "/src/app", "--budget-usd", "lots", "task"},
      {"loop", "run", "--repo", "/src/app", "--budget-usd", "-1", "task"},
      {"loop", "run", "--repo", "/src/app", "--budget-usd", "0", "task"},
      {"loop", "run", "--repo", "/src/app", "--budget-usd", "nan", "task"},
      {"loop", "run", "--repo", "/src/app", "--budget-usd", "inf", "task"},
      {"loop", "run", "--repo", "/src/app", "--max-iterations", "0", "task"},
      {"loops", "--status", "sleeping"},
      {"loop", "show"},
      {"loop", "logs", "l-1", "--iteration", "-1"},
      {"loop", "pause"},
      {"loop", "delete", "l-1", "--everything"},
      {"loop", "export"}});
}

TEST_F(LoopCommandsTest, UnreachableDaemonExitsThree) {
  const std::string socket = tree_.path("nobody.sock");
  for (const std::vector<std::string>& args :
       {std::vector<std::string>{"loop", "run", "--repo", "/src/app", "task"},
        {"loop", "run", "--repo", "/src/app", "--detach", "task"},
        {"loops"},
        {"loop", "show", "l-1"},
        {"loop", "logs", "l-1", "--follow"},
        {"loop", "cancel", "l-1"},
        {"loop", "export", "l-1"}}) {
    std::vector<std::string> full = {"--socket", socket};
    full.insert(full.end(), args.begin(), args.end());
    const CtlRun run = run_looprctl(full, hermetic());
    // A command that follows a loop or plan to its end exits with the
    // outcome, where 3 means failed: any error is 1 there.
    const bool follows_to_the_end =
        (args[0] == "loop" && args[1] == "run" &&
         std::find(args.begin(), args.end(), "--detach") == args.end()) ||
        (args[0] == "plan" && args[1] == "--repo") || (args[0] == "plan" && args[1] == "approve");
    EXPECT_EQ(run.exit_code, follows_to_the_end ? 1 : 3) << args[1] << "\n" << run.err;
    EXPECT_TRUE(contains(run.err, socket)) << run.err;
  }
}

// ---- loop logs ----

TEST_F(LoopCommandsTest, LogsPagesAcrossMoreAndRendersEachKind) {
  fake_.on("loop.transcript", [](const proto::Request& request) {
    if (!request.params.contains("after")) {
      return FakeReply::result(
          request,
          {{"loop_id", "l-5"},
           {"steps",
            {a_step(1, 0, "created", {{"spec", {{"type", "code"}, {"task", "fix it"}}}}),
             a_step(2, 1, "iteration_started", {{"system", "s"}, {"prompt", "p"}}),
             a_step(3, 1, "model_turn",
                    model_turn(1, "I will \x1b[5mfix it.\nSecond line.",
                               {{{"id", "t1"},
                                 {"name", "edit_file"},
                                 {"arguments", {{"path", "a.c"}, {"old", "x"}, {"new", "y"}}}}}))}},
           {"more", true}});
    }
    if (request.params["after"] == 3) {
      return FakeReply::result(
          request,
          {{"loop_id", "l-5"},
           {"steps",
            {a_step(4, 1, "tool_calls_started",
                    {{"calls",
                      {{{"id", "t1"}, {"name", "edit_file"}, {"arguments", {{"path", "a.c"}}}}}}}),
             a_step(5, 1, "tool_results",
                    {{"results",
                      {{{"call_id", "t1"},
                        {"name", "edit_file"},
                        {"ok", false},
                        {"status", "failed"},
                        {"content", "no_match: x\nl2\nl3\nl4\nl5"},
                        {"is_error", true}}}},
                     {"note", "\x1b[0mcareful"},
                     {"ends_iteration", ""}})}},
           {"more", true}});
    }
    return FakeReply::result(
        request,
        {{"loop_id", "l-5"},
         {"steps",
          {a_step(6, 1, "note", {{"text", "you edited the same file 3 times"}}),
           a_step(7, 1, "committed", {{"commit", "fedcba9876543210"}, {"changed", {"a.c"}}}),
           a_step(8, 1, "validation_started", {{"command", "make test"}}),
           a_step(9, 1, "validation",
                  {{"passed", true}, {"exit_code", 0}, {"output", ""}, {"duration_ms", 1200}}),
           a_step(10, 1, "status", {{"status", "completed"}, {"reason", "validation passed"}}),
           a_step(11, 1, "mystery", {{"x", 1}})}},
         {"more", false}});
  });
  const CtlRun run = ctl({"loop", "logs", "l-5"});
  ASSERT_EQ(run.exit_code, 0) << run.err;
  const auto pages = fake_.requests("loop.transcript");
  ASSERT_EQ(pages.size(), 3u);
  EXPECT_EQ(pages[0].params, (json{{"id", "l-5"}}));
  EXPECT_EQ(pages[1].params, (json{{"id", "l-5"}, {"after", 3}}));
  EXPECT_EQ(pages[2].params, (json{{"id", "l-5"}, {"after", 5}}));
  EXPECT_TRUE(terminal_safe(run.out)) << run.out;
  const std::vector<std::string> expected = {"created: code loop: fix it",
                                             "== iteration 1 ==",
                                             "I will \\x1b[5mfix it.",
                                             "Second line.",
                                             R"(  -> edit_file {"path":"a.c"})",
                                             "  <- edit_file: error (failed)",
                                             "     | no_match: x",
                                             "     | l2",
                                             "     | l3",
                                             "     | ...",
                                             "note: \\x1b[0mcareful",
                                             "note: you edited the same file 3 times",
                                             "committed fedcba98 (1 files changed)",
                                             "validating: make test",
                                             "validation passed (exit 0, 1.2 s)",
                                             "status: completed (validation passed)",
                                             R"([mystery] {"x":1})"};
  EXPECT_EQ(lines_of(run.out), expected) << run.out;
  EXPECT_TRUE(fake_.requests("events.subscribe").empty());
}

TEST_F(LoopCommandsTest, LogsThatNeverAdvanceExitFour) {
  fake_.answer("loop.transcript", {{"loop_id", "l-5"}, {"steps", json::array()}, {"more", true}});
  const CtlRun run = ctl({"loop", "logs", "l-5"});
  EXPECT_EQ(run.exit_code, 4) << run.err;
}

TEST_F(LoopCommandsTest, LogsOfOneIterationAsJsonLines) {
  fake_.answer(
      "loop.transcript",
      {{"loop_id", "l-5"},
       {"steps", {a_step(2, 2, "note", {{"text", "a"}}), a_step(3, 2, "note", {{"text", "b"}})}},
       {"more", false}});
  const CtlRun run = ctl({"--json", "loop", "logs", "l-5", "--iteration", "2"});
  ASSERT_EQ(run.exit_code, 0) << run.err;
  EXPECT_EQ(params_of("loop.transcript"), (json{{"id", "l-5"}, {"iteration", 2}}));
  const auto lines = lines_of(run.out);
  ASSERT_EQ(lines.size(), 2u) << run.out;
  EXPECT_EQ(json::parse(lines[0]), a_step(2, 2, "note", {{"text", "a"}}));
}

TEST_F(LoopCommandsTest, LogsFollowSubscribesFirstThenPrintsNewStepsOnceUntilTheEnd) {
  fake_.on("events.subscribe", [](const proto::Request& request) {
    return FakeReply::result(request, {{"topics", request.params["topics"]}});
  });
  fake_.answer("loop.get", {{"loop", a_loop("l-5", "running")}});
  fake_.on("loop.transcript", [](const proto::Request& request) {
    FakeReply reply = FakeReply::result(
        request, {{"loop_id", "l-5"},
                  {"steps",
                   {a_step(1, 1, "iteration_started", {{"system", "s"}, {"prompt", "p"}}),
                    a_step(2, 1, "model_turn", model_turn(1, "stored text"))}},
                  {"more", false}});
    // Stored meanwhile: pushed as events too.
    reply.event_first(
        "loop.step",
        {{"loop_id", "l-5"}, {"step", a_step(2, 1, "model_turn", model_turn(1, "stored text"))}});
    reply.event_first(
        "chat.chunk",
        {{"loop_id", "l-5"}, {"iteration", 1}, {"sequence", 1}, {"text", "stored text"}});
    // New.
    reply
        .event("chat.chunk",
               {{"loop_id", "l-5"}, {"iteration", 1}, {"sequence", 2}, {"text", "live "}})
        .event("chat.chunk",
               {{"loop_id", "l-5"}, {"iteration", 1}, {"sequence", 2}, {"text", "text"}})
        .event("loop.step", {{"loop_id", "l-5"},
                             {"step", a_step(3, 1, "model_turn", model_turn(2, "live text"))}})
        .event("loop.step", {{"loop_id", "l-5"}, {"step", a_step(4, 1, "note", {{"text", "hm"}})}})
        .event("loop.step",
               {{"loop_id", "l-5"},
                {"step", a_step(5, 1, "status", {{"status", "cancelled"}, {"reason", "by user"}})}})
        .event("loop.updated", {{"loop", a_loop("l-5", "cancelled")}});
    return reply;
  });
  const CtlRun run = ctl({"loop", "logs", "l-5", "--follow"});
  ASSERT_EQ(run.exit_code, 0) << run.err;
  const auto requests = fake_.requests();
  ASSERT_GE(requests.size(), 4u);
  EXPECT_EQ(requests[1].method, "events.subscribe");
  EXPECT_EQ(requests[1].params,
            (json{{"topics", {"loop", "chat", "provider"}}, {"loop_id", "l-5"}}));
  EXPECT_EQ(requests[2].method, "loop.get");
  EXPECT_EQ(requests[3].method, "loop.transcript");
  const std::vector<std::string> expected = {"== iteration 1 ==", "stored text", "live text",
                                             "note: hm", "status: cancelled (by user)"};
  EXPECT_EQ(lines_of(run.out), expected) << run.out;
}

TEST_F(LoopCommandsTest, LogsFollowOfAnEndedLoopPrintsTheJournalAndReturns) {
  fake_.answer("events.subscribe", {{"topics", json::array()}});
  fake_.answer("loop.get", {{"loop", a_loop("l-5", "completed")}});
  fake_.answer(
      "loop.transcript",
      {{"loop_id", "l-5"}, {"steps", {a_step(1, 1, "note", {{"text", "done"}})}}, {"more", false}});
  const CtlRun run = ctl({"loop", "logs", "l-5", "-f"});
  ASSERT_EQ(run.exit_code, 0) << run.err;
  EXPECT_EQ(run.out, "note: done\n");
}

// ---- pause, resume, cancel, delete, export ----

TEST_F(LoopCommandsTest, PauseResumeCancelPrintTheNewStatus) {
  fake_.answer("events.subscribe", {{"topics", json::array({"loop"})}});
  fake_.answer("loop.pause", {{"loop", a_loop("l-1", "running")}});
  fake_.answer("loop.resume", {{"loop", a_loop("l-1", "running")}});
  fake_.answer("loop.cancel", {{"loop", a_loop("l-1", "cancelled")}});
  CtlRun run = ctl({"loop", "pause", "l-1"});
  ASSERT_EQ(run.exit_code, 0) << run.err;
  EXPECT_EQ(run.out, "loop l-1: running (it pauses after the current model turn)\n");
  EXPECT_EQ(params_of("loop.pause"), (json{{"id", "l-1"}}));
  run = ctl({"loop", "resume", "l-1"});
  EXPECT_EQ(run.out, "loop l-1: running\n");
  run = ctl({"loop", "cancel", "l-1", "--json"});
  ASSERT_EQ(run.exit_code, 0) << run.err;
  EXPECT_EQ(json::parse(run.out), (json{{"loop", a_loop("l-1", "cancelled")}}));
}

// loop.cancel answers while the loop's current call is still being stopped:
// looprctl waits for the status the loop ends in (subscribed first) and
// prints that, not "running".
TEST_F(LoopCommandsTest, CancelPrintsTheStatusTheLoopEndsIn) {
  fake_.on("events.subscribe", [](const proto::Request& request) {
    return FakeReply::result(request, {{"topics", request.params["topics"]}});
  });
  fake_.on("loop.cancel", [](const proto::Request& request) {
    FakeReply reply = FakeReply::result(request, {{"loop", a_loop("l-8", "running")}});
    reply.event("loop.updated", {{"loop", a_loop("l-9", "cancelled")}})
        .event("loop.updated", {{"loop", a_loop("l-8", "running")}})
        .event("loop.updated", {{"loop", a_loop("l-8", "cancelled")}});
    return reply;
  });
  const CtlRun run = ctl({"loop", "cancel", "l-8"});
  ASSERT_EQ(run.exit_code, 0) << run.err;
  EXPECT_EQ(run.out, "loop l-8: cancelled\n");
  const auto requests = fake_.requests();
  ASSERT_GE(requests.size(), 3u);
  EXPECT_EQ(requests[1].method, "events.subscribe");
  EXPECT_EQ(requests[1].params, (json{{"topics", {"loop"}}, {"loop_id", "l-8"}}));
  EXPECT_EQ(requests[2].method, "loop.cancel");
}

TEST_F(LoopCommandsTest, DeleteMapsItsFlags) {
  fake_.on("loop.delete", [](const proto::Request& request) {
    return FakeReply::result(request, {{"id", request.params["id"]},
                                       {"deleted", true},
                                       {"worktree_removed", request.params["remove_worktree"]},
                                       {"branch_removed", request.params["remove_branch"]}});
  });
  CtlRun run = ctl({"loop", "delete", "l-1", "--worktree"});
  ASSERT_EQ(run.exit_code, 0) << run.err;
  EXPECT_EQ(run.out, "deleted loop l-1; worktree removed, branch kept\n");
  run = ctl({"loop", "delete", "l-2", "--branch"});
  ASSERT_EQ(run.exit_code, 0) << run.err;
  run = ctl({"loop", "delete", "l-3"});
  ASSERT_EQ(run.exit_code, 0) << run.err;
  const auto requests = fake_.requests("loop.delete");
  ASSERT_EQ(requests.size(), 3u);
  EXPECT_EQ(requests[0].params,
            (json{{"id", "l-1"}, {"remove_worktree", true}, {"remove_branch", false}}));
  EXPECT_EQ(requests[1].params,
            (json{{"id", "l-2"}, {"remove_worktree", false}, {"remove_branch", true}}));
  EXPECT_EQ(requests[2].params,
            (json{{"id", "l-3"}, {"remove_worktree", false}, {"remove_branch", false}}));
}

TEST_F(LoopCommandsTest, DeleteOfARunningLoopExitsOne) {
  fake_.on("loop.delete", [](const proto::Request& request) {
    return FakeReply::error(request, 1002, "loop l-1 is running; cancel it first");
  });
  const CtlRun run = ctl({"loop", "delete", "l-1"});
  EXPECT_EQ(run.exit_code, 1);
  EXPECT_TRUE(contains(run.err, "cancel it first")) << run.err;
}

TEST_F(LoopCommandsTest, ExportPrintsOneCompactTurnPerLineEvenWithJson) {
  const json turns = {
      {{"text", "a\nb"}, {"tool_calls", json::array()}, {"stop_reason", "end_turn"}},
      {{"text", "\x1b"}, {"tool_calls", {{{"id", "t"}, {"name", "x"}}}}}};
  fake_.answer("loop.export", {{"turns", turns}});
  for (const bool with_json : {false, true}) {
    std::vector<std::string> args = {"loop", "export", "l-1"};
    if (with_json) args.insert(args.begin(), "--json");
    const CtlRun run = ctl(args);
    ASSERT_EQ(run.exit_code, 0) << run.err;
    const auto lines = lines_of(run.out);
    ASSERT_EQ(lines.size(), 2u) << run.out;
    EXPECT_EQ(json::parse(lines[0]), turns[0]);
    EXPECT_EQ(json::parse(lines[1]), turns[1]);
    EXPECT_TRUE(terminal_safe(run.out)) << run.out;
  }
}

// ---- in process: following, rendering ----

TEST(LoopFollow, AsksLoopGetWhenTheEventsAreQuiet) {
  FakeDaemon fake;
  fake.answer("events.subscribe", {{"topics", json::array()}});
  fake.answer("loop.get", {{"loop", a_loop("l-1", "budget_exhausted")}});
  fake.start();
  auto client = client::ControlClient::open(fake.socket_path());
  ASSERT_TRUE(client) << client.error().message;
  ASSERT_TRUE(client->call("events.subscribe", {{"topics", {"loop"}}}));
  std::ostringstream out;
  std::ostringstream err;
  client::LoopPrinter printer("l-1", client::FollowStyle::live, false, out);
  auto status =
      client::follow_loop(*client, printer, client::FollowOptions{client::Milliseconds(20)}, err);
  ASSERT_TRUE(status) << status.error().message;
  EXPECT_EQ(*status, "budget_exhausted");
  EXPECT_EQ(fake.requests("loop.get").size(), 1u);
}

TEST(LoopFollow, StreamedTextIsEndedBeforeTheNextLine) {
  std::ostringstream out;
  volatile std::sig_atomic_t mid_line = 0;
  client::LoopPrinter printer("l-1", client::FollowStyle::live, false, out);
  printer.set_mid_line_flag(&mid_line);
  printer.event(
      {"chat.chunk", {{"loop_id", "l-1"}, {"iteration", 1}, {"sequence", 1}, {"text", "abc"}}});
  EXPECT_EQ(mid_line, 1);
  printer.event({"tool.finished", {{"loop_id", "l-1"}, {"tool", "t"}, {"ok", false}}});
  EXPECT_EQ(mid_line, 0);
  EXPECT_EQ(out.str(), "abc\n  tool t: failed, -\n");
  EXPECT_EQ(printer.event({"loop.updated", {{"loop", {{"id", "l-1"}, {"status", "stuck"}}}}}),
            std::optional<std::string>("stuck"));
}

TEST(LoopView, FinalStatuses) {
  for (const char* status : {"completed", "failed", "cancelled", "budget_exhausted", "stuck",
                             "rejected", "invalidated", "blocked"})
    EXPECT_TRUE(client::is_final_status(status)) << status;
  for (const char* status :
       {"queued", "running", "paused", "awaiting_approval", "waiting", "", "weird"})
    EXPECT_FALSE(client::is_final_status(status)) << status;
}

TEST(LoopView, Figures) {
  EXPECT_EQ(client::format_usd(0.0123), "$0.0123");
  EXPECT_EQ(client::format_usd(12.345), "$12.35");
  EXPECT_EQ(client::format_usd("1"), "-");
  EXPECT_EQ(client::format_usd(-1), "-");
  EXPECT_EQ(client::format_count(1234567), "1,234,567");
  EXPECT_EQ(client::format_count(-1234), "-1,234");
  EXPECT_EQ(client::format_count(999), "999");
  EXPECT_EQ(client::format_count(nullptr), "-");
  EXPECT_EQ(client::format_token_total(json{{"input_tokens", 950}}), "950");
  EXPECT_EQ(
      client::format_token_total(json{{"input_tokens", 4'000'000}, {"output_tokens", 100'000}}),
      "4.1M");
  EXPECT_EQ(client::format_token_total(json::array()), "-");
  EXPECT_EQ(client::format_age(1000, 181'000), "3 min ago");
  EXPECT_EQ(client::format_age("x", 5), "-");
  EXPECT_EQ(client::short_commit("0123456789"), "01234567");
  EXPECT_EQ(client::short_commit(5), "-");
}

TEST(LoopView, TextHelpers) {
  EXPECT_EQ(client::first_line("one\ntwo", 40), "one...");
  EXPECT_EQ(client::first_line("one\n", 40), "one");
  EXPECT_EQ(client::first_line("abcdefghij", 6), "abc...");
  EXPECT_EQ(client::cut("\x1b[1m", 40), "\\x1b[1m");
  EXPECT_EQ(client::last_lines("a\nb\nc\n", 2), (std::vector<std::string_view>{"b", "c"}));
  EXPECT_EQ(client::last_lines("a", 5), (std::vector<std::string_view>{"a"}));
  EXPECT_TRUE(client::last_lines("", 5).empty());
  EXPECT_EQ(client::shell_word("/src/app"), "/src/app");
  EXPECT_EQ(client::shell_word("/my repo/it's"), R"('/my repo/it'\''s')");
  EXPECT_EQ(client::shell_word("a\x1b"), "'a\\x1b'");
}

TEST(LoopView, AnyShapeRendersWithoutThrowing) {
  const std::vector<json> shapes = {
      nullptr,
      1,
      "text",
      json::array({1, "x"}),
      json::object(),
      {{"id", {1, 2}},
       {"usage", "lots"},
       {"iterations", 3},
       {"budget", {{"limits", 5}}},
       {"last_validation", {1}}},
      {{"kind", "model_turn"}, {"data", {{"turn", 5}}}},
      {{"kind", "tool_results"}, {"data", {{"results", {1, nullptr}}}}},
      {{"kind", "tool_calls_started"}, {"data", {{"calls", "x"}}}},
      {{"kind", "validation"}, {"data", "no"}}};
  for (const json& shape : shapes) {
    std::ostringstream out;
    EXPECT_NO_THROW(client::print_loop_table(json::array({shape}), 0, out)) << shape;
    EXPECT_NO_THROW(client::print_loop_details(shape, 0, out)) << shape;
    EXPECT_NO_THROW(client::print_loop_summary(shape, out)) << shape;
    EXPECT_NO_THROW(client::print_step(shape, true, out)) << shape;
    client::LoopPrinter printer("l-1", client::FollowStyle::journal, false, out);
    EXPECT_NO_THROW(printer.step(shape)) << shape;
    EXPECT_NO_THROW(printer.event({"loop.step", {{"loop_id", "l-1"}, {"step", shape}}})) << shape;
    EXPECT_NO_THROW(printer.event({"chat.chunk", shape})) << shape;
  }
}

}  // namespace
}  // namespace loopr::test
