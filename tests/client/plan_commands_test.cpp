// looprctl's plan commands, loops --tree and gc: the real binary against a
// FakeDaemon (what it sends, what it prints, its exit statuses).
#include <gtest/gtest.h>

#include <algorithm>
#include <memory>
#include <string_view>

#include "client/text_format.hpp"
#include "proto/control_messages.hpp"
#include "tests/client/fake_daemon.hpp"
#include "tests/client/loop_samples.hpp"
#include "tests/client/looprctl_fixture.hpp"
#include "tests/client/looprctl_run.hpp"

namespace loopr::test {
namespace {

using nlohmann::json;

const char* const kMarkdown =
    "# Plan: a --verbose flag\n"
    "\n"
    "## Specs\n"
    "1. **p1-s1** flag parsing \x1b[31m(red)\n"
    "2. **p1-s2** logging, after p1-s1\n";

// A plan p1 being carried out: two specs; the first has a merged phase (whose
// first code loop was invalidated by a re-run) and a running one, the second
// waits for the first. Listed out of tree order, as a daemon may.
json a_plan_tree() {
  json plan = a_plan_loop("p1", "plan", "waiting", "", {"p1-s1", "p1-s2"}, 1000);
  json s1 = a_plan_loop("p1-s1", "spec", "waiting", "p1", {"p1-s1-ph1", "p1-s1-ph2"}, 2000);
  json s2 = a_plan_loop("p1-s2", "spec", "queued", "p1", {}, 3000);
  s2["queue_reason"] = "waiting for p1-s1";
  s2["depends_on"] = {"p1-s1"};
  s2["iteration"] = 0;
  json ph1 = a_plan_loop("p1-s1-ph1", "phase", "completed", "p1-s1",
                         {"p1-s1-ph1-c1", "p1-s1-ph1-c2"}, 4000);
  ph1["merged"] = {{"into", "loop/p1-s1"}, {"commit", "1111111122222222"}};
  json c1 = a_plan_loop("p1-s1-ph1-c1", "code", "invalidated", "p1-s1-ph1", {}, 5000);
  c1["status_reason"] = "p1-s1-ph1 was re-run";
  json c2 = a_plan_loop("p1-s1-ph1-c2", "code", "completed", "p1-s1-ph1", {}, 6000);
  c2["merged"] = {{"into", "loop/p1-s1-ph1"}, {"commit", "3333333344444444"}};
  json ph2 = a_plan_loop("p1-s1-ph2", "phase", "waiting", "p1-s1", {"p1-s1-ph2-c1"}, 7000);
  json c3 = a_plan_loop("p1-s1-ph2-c1", "code", "running", "p1-s1-ph2", {}, 8000);
  c3["iteration"] = 3;
  return json::array({plan, c3, s2, ph2, c2, s1, c1, ph1});
}

json a_plan_get(const std::string& status) {
  json tree = a_plan_tree();
  json plan = tree[0];
  plan["status"] = status;
  tree.erase(tree.begin());
  return {{"plan", plan},
          {"artifact", {{"title", "a --verbose flag"}, {"specs", json::array()}}},
          {"markdown", kMarkdown},
          {"markdown_path", "/state/loops/p1/plan.md"},
          {"tree", tree},
          {"plan_budget",
           {{"limits", {{"usd", 20.0}}},
            {"used", {{"cost_usd", 1.25}, {"wall_clock_ms", 600000}}},
            {"left", {{"usd", 18.75}}}}}};
}

class PlanCommandsTest : public LooprctlFixture {
 protected:
  void SetUp() override {
    fake_.on("events.subscribe", [](const proto::Request& request) {
      return FakeReply::result(request, {{"topics", request.params["topics"]}});
    });
  }
};

// ---- plan ----

// The events of plan loop p1 from creation until it awaits approval, with
// another loop's mixed in.
FakeReply plan_written(const proto::Request& request, const std::string& last_status) {
  FakeReply reply = FakeReply::result(request, {{"loop", a_plan_loop("p1", "plan", "queued", "")}});
  reply.event("loop.created", {{"loop", a_plan_loop("p1", "plan", "queued", "")}})
      .event("loop.updated", {{"loop", a_plan_loop("p1", "plan", "running", "")}})
      .event("loop.iteration", {{"loop_id", "p1"}, {"iteration", 1}, {"phase", "started"}})
      .event("chat.chunk", {{"loop_id", "p1"},
                            {"iteration", 1},
                            {"sequence", 1},
                            {"text", "Reading the code first."}})
      .event("chat.chunk",
             {{"loop_id", "l-9"}, {"iteration", 1}, {"sequence", 1}, {"text", "NOT MINE"}})
      .event("tool.started", {{"call_id", "c-1"}, {"tool", "grep"}, {"loop_id", "p1"}})
      .event("tool.finished", {{"call_id", "c-1"},
                               {"tool", "grep"},
                               {"status", "success"},
                               {"ok", true},
                               {"duration_ms", 7},
                               {"loop_id", "p1"}})
      .event("loop.updated", {{"loop", a_plan_loop("p1", "plan", last_status, "")}});
  return reply;
}

TEST_F(PlanCommandsTest, PlanFollowsUntilAwaitingApprovalThenPrintsTheMarkdownAndWhatNext) {
  tree_.mkdir("work/app");
  fake_.on("loop.create_plan", [](const proto::Request& request) {
    return plan_written(request, "awaiting_approval");
  });
  fake_.answer("plan.get", a_plan_get("awaiting_approval"));
  CtlOptions options;
  options.cwd = tree_.path("work");
  const CtlRun run = ctl({"plan", "add a --verbose flag", "--repo", "app/", "--base", "main",
                          "--provider", "scripted", "--model", "m-1", "--budget-usd", "20"},
                         options);
  ASSERT_EQ(run.exit_code, 0) << run.out << run.err;
  EXPECT_TRUE(terminal_safe(run.out)) << run.out;

  const auto requests = fake_.requests();
  ASSERT_EQ(requests.size(), 4u);
  EXPECT_EQ(requests[1].method, "events.subscribe");
  EXPECT_EQ(requests[1].params,
            (json{{"topics", {"loop", "chat", "provider", "tool", "approval"}}}));
  EXPECT_EQ(requests[2].method, "loop.create_plan");
  EXPECT_EQ(requests[2].params, (json{{"description", "add a --verbose flag"},
                                      {"repo", tree_.path("work/app")},
                                      {"base", "main"},
                                      {"provider", "scripted"},
                                      {"model", "m-1"},
                                      {"plan_budget", {{"usd", 20.0}}}}));
  EXPECT_EQ(requests[3].method, "plan.get");
  EXPECT_EQ(requests[3].params, (json{{"id", "p1"}}));

  EXPECT_TRUE(contains(run.out, "plan p1: queued on branch loop/p1 in /src/.loopr-worktrees/p1"))
      << run.out;
  EXPECT_TRUE(contains(run.out, "== iteration 1 ==")) << run.out;
  EXPECT_TRUE(contains(run.out, "Reading the code first.\n")) << run.out;
  EXPECT_FALSE(contains(run.out, "NOT MINE")) << run.out;
  EXPECT_TRUE(contains(run.out, "  tool grep: success, 7 ms\n")) << run.out;
  EXPECT_TRUE(contains(run.out, "status: running")) << run.out;
  EXPECT_FALSE(contains(run.out, "status: awaiting_approval")) << run.out;
  EXPECT_TRUE(contains(run.out, "plan p1 awaits your approval\n")) << run.out;
  EXPECT_TRUE(contains(run.out,
                       "# Plan: a --verbose flag\n\n## Specs\n1. **p1-s1** flag parsing "
                       "\\x1b[31m(red)\n2. **p1-s2** logging, after p1-s1\n"))
      << run.out;
  EXPECT_TRUE(contains(run.out, "(the plan as Markdown: /state/loops/p1/plan.md)")) << run.out;
  // The Markdown comes before the hints, which end the output.
  const auto markdown_at = run.out.find("# Plan:");
  const auto approve_at = run.out.find("looprctl plan approve p1");
  ASSERT_NE(approve_at, std::string::npos) << run.out;
  EXPECT_LT(markdown_at, approve_at);
  EXPECT_TRUE(contains(run.out, "looprctl plan iterate p1 --feedback \"...\"")) << run.out;
  EXPECT_TRUE(contains(run.out, "looprctl plan reject p1 --reason \"...\"")) << run.out;
}

TEST_F(PlanCommandsTest, PlanThatFailsBeforeAwaitingApprovalExitsThreeWithTheReason) {
  fake_.on("loop.create_plan",
           [](const proto::Request& request) { return plan_written(request, "failed"); });
  json result = a_plan_get("failed");
  result["plan"]["status_reason"] = "max_iterations reached without a valid plan";
  result["markdown"] = nullptr;
  fake_.answer("plan.get", result);
  const CtlRun run = ctl({"plan", "--repo", "/src/app", "add a --verbose flag"});
  EXPECT_EQ(run.exit_code, 3) << run.out << run.err;
  EXPECT_TRUE(contains(run.out, "loop p1 failed: max_iterations reached without a valid plan"))
      << run.out;
  EXPECT_FALSE(contains(run.out, "looprctl plan approve")) << run.out;
}

TEST_F(PlanCommandsTest, PlanStopsAtAwaitingApprovalFromAStatusStepToo) {
  fake_.on("loop.create_plan", [](const proto::Request& request) {
    FakeReply reply =
        FakeReply::result(request, {{"loop", a_plan_loop("p1", "plan", "running", "")}});
    reply.event("loop.step", {{"loop_id", "p1"},
                              {"step", a_step(9, 1, "status", {{"status", "awaiting_approval"}})}});
    return reply;  // no loop.updated: the status step alone ends following
  });
  fake_.answer("plan.get", a_plan_get("awaiting_approval"));
  const CtlRun run = ctl({"plan", "--repo", "/src/app", "add a --verbose flag"});
  EXPECT_EQ(run.exit_code, 0) << run.out << run.err;
  EXPECT_TRUE(fake_.requests("loop.get").empty());
}

TEST_F(PlanCommandsTest, PlanWithJsonPrintsJsonLines) {
  fake_.on("loop.create_plan", [](const proto::Request& request) {
    return plan_written(request, "awaiting_approval");
  });
  fake_.answer("plan.get", a_plan_get("awaiting_approval"));
  const CtlRun run = ctl({"--json", "plan", "--repo", "/src/app", "add a --verbose flag"});
  // Headless: a person is needed to pass the gate.
  ASSERT_EQ(run.exit_code, 7) << run.err;
  const auto lines = lines_of(run.out);
  ASSERT_GE(lines.size(), 3u) << run.out;
  EXPECT_EQ(json::parse(lines.front()), (json{{"loop", a_plan_loop("p1", "plan", "queued", "")}}));
  EXPECT_EQ(json::parse(lines.back()), a_plan_get("awaiting_approval"));
  for (std::size_t i = 1; i + 1 < lines.size(); ++i) {
    const json event = json::parse(lines[i]);
    EXPECT_TRUE(event.contains("event")) << lines[i];
    EXPECT_FALSE(contains(lines[i], "l-9")) << lines[i];
  }
}

TEST_F(PlanCommandsTest, PlanNoFollowPrintsTheIdOrTheLoop) {
  fake_.answer("loop.create_plan", {{"loop", a_plan_loop("p1", "plan", "queued", "")}});
  CtlRun run = ctl({"plan", "--repo", "/src/app", "--no-follow", "add a --verbose flag"});
  ASSERT_EQ(run.exit_code, 0) << run.err;
  EXPECT_EQ(run.out, "p1\n");
  run = ctl({"--json", "plan", "--repo", "/src/app", "--no-follow", "add a --verbose flag"});
  ASSERT_EQ(run.exit_code, 0) << run.err;
  EXPECT_EQ(json::parse(run.out), a_plan_loop("p1", "plan", "queued", ""));
  EXPECT_TRUE(fake_.requests("events.subscribe").empty());
  EXPECT_TRUE(fake_.requests("plan.get").empty());
  const auto created = fake_.requests("loop.create_plan");
  ASSERT_EQ(created.size(), 2u);
  EXPECT_EQ(created[0].params,
            (json{{"description", "add a --verbose flag"}, {"repo", "/src/app"}}));
}

// ---- plan show ----

TEST_F(PlanCommandsTest, ShowPrintsTheMarkdownTheTreeAndTheBudget) {
  fake_.answer("plan.get", a_plan_get("waiting"));
  const CtlRun run = ctl({"plan", "show", "p1"});
  ASSERT_EQ(run.exit_code, 0) << run.err;
  EXPECT_EQ(params_of("plan.get"), (json{{"id", "p1"}}));
  EXPECT_TRUE(terminal_safe(run.out)) << run.out;
  const auto lines = lines_of(run.out);
  ASSERT_FALSE(lines.empty());
  EXPECT_EQ(lines[0], "plan p1  waiting");
  EXPECT_TRUE(contains(run.out, "## Specs\n1. **p1-s1** flag parsing \\x1b[31m(red)\n")) << run.out;
  // The tree: the plan is the root, every loop once.
  const auto header = run.out.find("ID ");
  ASSERT_NE(header, std::string::npos) << run.out;
  EXPECT_LT(run.out.find("# Plan:"), header);
  for (const char* row : {"\np1 ", "\n\xe2\x94\x9c\xe2\x94\x80 p1-s1 ",
                          "\n\xe2\x94\x82  \xe2\x94\x94\xe2\x94\x80 p1-s1-ph2 ",
                          "\n\xe2\x94\x94\xe2\x94\x80 p1-s2 "}) {
    EXPECT_EQ(count_of(run.out, row), 1u) << row << "\n" << run.out;
  }
  EXPECT_TRUE(contains(run.out, "queued (waiting for p1-s1)")) << run.out;
  EXPECT_TRUE(contains(run.out, "plan budget:\n")) << run.out;
  EXPECT_TRUE(contains(run.out, "$20.00")) << run.out;
  EXPECT_TRUE(contains(run.out, "$1.25")) << run.out;
  EXPECT_TRUE(contains(run.out, "$18.75")) << run.out;
  EXPECT_LT(header, run.out.find("plan budget:"));
  EXPECT_FALSE(contains(run.out, "looprctl plan approve")) << run.out;
}

TEST_F(PlanCommandsTest, ShowOfAPlanAwaitingApprovalSaysWhatNextAndJsonIsTheResult) {
  json result = a_plan_get("awaiting_approval");
  result["tree"] = json::array();
  result["plan_budget"] = {
      {"limits", json::object()}, {"used", json::object()}, {"left", json::object()}};
  fake_.answer("plan.get", result);
  CtlRun run = ctl({"plan", "show", "p1"});
  ASSERT_EQ(run.exit_code, 0) << run.err;
  EXPECT_TRUE(contains(run.out, "plan budget: no limits")) << run.out;
  EXPECT_TRUE(contains(run.out, "looprctl plan approve p1")) << run.out;
  run = ctl({"plan", "show", "p1", "--json"});
  ASSERT_EQ(run.exit_code, 0) << run.err;
  EXPECT_EQ(json::parse(run.out), result);
}

TEST_F(PlanCommandsTest, ShowBeforeThePlanIsWrittenPrintsTheDescription) {
  json result = a_plan_get("running");
  result["markdown"] = nullptr;
  result["artifact"] = nullptr;
  result["plan"]["task"] = "add a --verbose flag";
  fake_.answer("plan.get", result);
  const CtlRun run = ctl({"plan", "show", "p1"});
  ASSERT_EQ(run.exit_code, 0) << run.err;
  EXPECT_TRUE(contains(run.out, "no plan written yet; the description:\n  add a --verbose flag\n"))
      << run.out;
}

TEST_F(PlanCommandsTest, ShowOfAnUnknownPlanExitsOneWithTheDaemonsMessage) {
  fake_.on("plan.get", [](const proto::Request& request) {
    return FakeReply::error(request, 1001, "no plan 'p9'", {{"code", "not_found"}});
  });
  const CtlRun run = ctl({"plan", "show", "p9"});
  EXPECT_EQ(run.exit_code, 1);
  EXPECT_TRUE(contains(run.err, "no plan 'p9'")) << run.err;
}

// ---- plan approve | reject | iterate ----

TEST_F(PlanCommandsTest, ApproveRejectIterateSayWhatHappened) {
  fake_.answer("plan.approve", {{"plan", a_plan_loop("p1", "plan", "waiting", "")}});
  fake_.answer("plan.reject", {{"plan", a_plan_loop("p1", "plan", "rejected", "")}});
  fake_.answer("plan.iterate", {{"plan", a_plan_loop("p1", "plan", "running", "")},
                                {"invalidated", {"p1-s1", "p1-s1-ph1"}}});
  CtlRun run = ctl({"plan", "approve", "p1"});
  ASSERT_EQ(run.exit_code, 0) << run.err;
  EXPECT_EQ(run.out, "approved plan p1; it is now waiting\n");
  EXPECT_EQ(params_of("plan.approve"), (json{{"id", "p1"}}));
  EXPECT_TRUE(fake_.requests("events.subscribe").empty());

  run = ctl({"plan", "reject", "p1", "--reason", "too big"});
  ASSERT_EQ(run.exit_code, 0) << run.err;
  EXPECT_EQ(run.out, "rejected plan p1; it is now rejected\n");
  run = ctl({"plan", "reject", "p2"});
  ASSERT_EQ(run.exit_code, 0) << run.err;
  const auto rejects = fake_.requests("plan.reject");
  ASSERT_EQ(rejects.size(), 2u);
  EXPECT_EQ(rejects[0].params, (json{{"id", "p1"}, {"reason", "too big"}}));
  EXPECT_EQ(rejects[1].params, (json{{"id", "p2"}}));

  run = ctl({"plan", "iterate", "p1", "--feedback", "split the second spec"});
  ASSERT_EQ(run.exit_code, 0) << run.err;
  EXPECT_EQ(run.out,
            "plan p1 runs again with your feedback; it is now running; invalidated: p1-s1, "
            "p1-s1-ph1\n");
  EXPECT_EQ(params_of("plan.iterate"), (json{{"id", "p1"}, {"feedback", "split the second spec"}}));
}

TEST_F(PlanCommandsTest, IterateWithNothingInvalidatedAndJson) {
  const json result = {{"plan", a_plan_loop("p1", "plan", "running", "")},
                       {"invalidated", json::array()}};
  fake_.answer("plan.iterate", result);
  CtlRun run = ctl({"plan", "iterate", "p1", "--feedback", "fewer specs"});
  ASSERT_EQ(run.exit_code, 0) << run.err;
  EXPECT_EQ(run.out,
            "plan p1 runs again with your feedback; it is now running; nothing was invalidated\n");
  run = ctl({"--json", "plan", "iterate", "p1", "--feedback", "fewer specs"});
  ASSERT_EQ(run.exit_code, 0) << run.err;
  EXPECT_EQ(json::parse(run.out), result);
}

TEST_F(PlanCommandsTest, LoopRerunSaysWhatRunsAgainWhatWasInvalidatedAndWhatCameBack) {
  json spec = a_plan_loop("p1-s1", "spec", "running", "p1");
  spec["plan_id"] = "p1";
  fake_.answer("loop.rerun", {{"loop", spec},
                              {"invalidated", {"p1-s1-ph1", "p1-s1-ph1-c1"}},
                              {"revived", {"p1", "p1-s2"}}});
  CtlRun run = ctl({"loop", "rerun", "p1-s1", "--feedback", "two phases are enough"});
  ASSERT_EQ(run.exit_code, 0) << run.err;
  EXPECT_EQ(run.out,
            "loop p1-s1 runs again with your feedback; it is now running; invalidated: "
            "p1-s1-ph1, p1-s1-ph1-c1\nbrought back: p1, p1-s2\nfollow it: looprctl plan show "
            "p1\n");
  EXPECT_EQ(params_of("loop.rerun"),
            (json{{"id", "p1-s1"}, {"feedback", "two phases are enough"}}));

  // No feedback: none is sent; a loop outside a plan is followed by its logs.
  json code = a_plan_loop("c4", "code", "running", "");
  code["plan_id"] = "";
  fake_.answer("loop.rerun",
               {{"loop", code}, {"invalidated", json::array()}, {"revived", json::array()}});
  run = ctl({"loop", "rerun", "c4"});
  ASSERT_EQ(run.exit_code, 0) << run.err;
  EXPECT_EQ(run.out,
            "loop c4 runs again; it is now running; nothing was invalidated\nfollow it: looprctl "
            "loop logs c4 --follow\n");
  EXPECT_EQ(fake_.requests("loop.rerun").back().params, (json{{"id", "c4"}}));

  fake_.on("loop.rerun", [](const proto::Request& request) {
    return FakeReply::error(
        request, 1002, "p1-s1-ph1 ended failed and is not under p1-s2",
        {{"code", "invalid_state"}, {"hint", "re-run p1-s1-ph1 or a loop above it"}});
  });
  run = ctl({"loop", "rerun", "p1-s2"});
  EXPECT_EQ(run.exit_code, 1);
  EXPECT_TRUE(contains(run.err, "not under p1-s2")) << run.err;
  EXPECT_TRUE(contains(run.err, "re-run p1-s1-ph1")) << run.err;
}

TEST_F(PlanCommandsTest, ApproveOfAPlanNotAwaitingApprovalExitsOne) {
  fake_.on("plan.approve", [](const proto::Request& request) {
    return FakeReply::error(request, 1002, "plan p1 is running, not awaiting_approval",
                            {{"code", "invalid_state"}});
  });
  const CtlRun run = ctl({"plan", "approve", "p1"});
  EXPECT_EQ(run.exit_code, 1);
  EXPECT_TRUE(contains(run.err, "not awaiting_approval")) << run.err;
}

// The events of plan p1's tree after approval, with plan p2's mixed in, ending
// with the plan `final_status`.
FakeReply carried_out(const proto::Request& request, const std::string& final_status) {
  FakeReply reply =
      FakeReply::result(request, {{"plan", a_plan_loop("p1", "plan", "waiting", "")}});
  json s1 = a_plan_loop("p1-s1", "spec", "running", "p1");
  json s1_more_usage = s1;
  s1_more_usage["usage"]["output_tokens"] = 900;
  json s2 = a_plan_loop("p1-s2", "spec", "queued", "p1");
  s2["queue_reason"] = "waiting for p1-s1";
  json failed = a_plan_loop("p1-s2", "spec", "failed", "p1");
  failed["status_reason"] = "child p1-s2-ph1 failed\nmore detail";
  reply.event("plan.approved", {{"plan", a_plan_loop("p1", "plan", "waiting", "")}})
      .event("loop.updated", {{"loop", s1}})
      .event("loop.updated", {{"loop", s2}})
      .event("loop.updated", {{"loop", a_plan_loop("p2-s1", "spec", "running", "p2")}})
      .event("loop.updated", {{"loop", s1_more_usage}})
      .event("loop.updated", {{"loop", a_loop("l-9", "running")}})
      .event(
          "loop.merged",
          {{"loop_id", "p1-s1-ph1-c1"}, {"into", "loop/p1-s1-ph1"}, {"commit", "abcdef0123456789"}})
      .event("loop.merged",
             {{"loop_id", "p2-s1-ph1-c1"}, {"into", "loop/p2-s1-ph1"}, {"commit", "ffff"}})
      .event("loop.merge_conflict", {{"loop_id", "p1-s1"},
                                     {"into", "loop/p1"},
                                     {"files", {"src/a.c", "src/\x1b[2Jb.c"}},
                                     {"resolver_id", "p1-s1-m1"}})
      .event("loop.updated", {{"loop", a_plan_loop("p1-s1", "spec", "completed", "p1")}})
      .event("loop.updated",
             {{"loop", final_status == "completed" ? a_plan_loop("p1-s2", "spec", "completed", "p1")
                                                   : failed}});
  json plan = a_plan_loop("p1", "plan", final_status, "");
  if (final_status != "completed") plan["status_reason"] = "child p1-s2 failed";
  reply.event("loop.updated", {{"loop", plan}});
  return reply;
}

TEST_F(PlanCommandsTest, ApproveFollowPrintsEveryChangeOfThePlansTreeUntilItCompletes) {
  fake_.on("plan.approve",
           [](const proto::Request& request) { return carried_out(request, "completed"); });
  fake_.answer("plan.get", a_plan_get("completed"));
  const CtlRun run = ctl({"plan", "approve", "p1", "--follow"});
  ASSERT_EQ(run.exit_code, 0) << run.out << run.err;
  const auto requests = fake_.requests();
  ASSERT_EQ(requests.size(), 4u);
  EXPECT_EQ(requests[1].method, "events.subscribe");
  EXPECT_EQ(requests[1].params,
            (json{{"topics",
                   {"loop.updated", "loop.merged", "loop.merge_conflict", "plan", "approval"}}}));
  EXPECT_EQ(requests[2].method, "plan.approve");
  EXPECT_EQ(requests[3].method, "plan.get");
  const std::vector<std::string> expected = {
      "approved plan p1; it is now waiting",
      "(Ctrl-C stops following; the plan goes on)",
      "p1-s1: running",
      "p1-s2: queued (waiting for p1-s1)",
      "p1-s1-ph1-c1 merged into loop/p1-s1-ph1 at abcdef01",
      "p1-s1: merge conflict into loop/p1 (src/a.c, src/\\x1b[2Jb.c); resolving in p1-s1-m1",
      "p1-s1: completed",
      "p1-s2: completed",
      "p1: completed",
      "plan p1 completed",
      "bring it into your branch with: looprctl plan merge p1"};
  EXPECT_EQ(lines_of(run.out), expected) << run.out;
}

TEST_F(PlanCommandsTest, ApproveFollowOfAPlanThatFailsExitsThree) {
  fake_.on("plan.approve",
           [](const proto::Request& request) { return carried_out(request, "failed"); });
  json result = a_plan_get("failed");
  result["plan"]["status_reason"] = "child p1-s2 failed";
  fake_.answer("plan.get", result);
  const CtlRun run = ctl({"plan", "approve", "p1", "-f"});
  EXPECT_EQ(run.exit_code, 3) << run.out << run.err;
  EXPECT_TRUE(contains(run.out, "\np1-s2: failed (child p1-s2-ph1 failed...)\n")) << run.out;
  EXPECT_TRUE(contains(run.out, "\np1: failed (child p1-s2 failed)\n")) << run.out;
  EXPECT_TRUE(contains(run.out, "\nplan p1 failed (child p1-s2 failed)\n")) << run.out;
  EXPECT_FALSE(contains(run.out, "plan merge")) << run.out;
}

// --approve-plan: written, approved without asking, carried out, and the
// exit status is the plan's outcome.
TEST_F(PlanCommandsTest, ApprovePlanPassesTheGateAndExitsWithThePlansOutcome) {
  for (const auto& [outcome, expected] :
       std::vector<std::pair<std::string, int>>{{"completed", 0}, {"failed", 3}}) {
    fake_.on("loop.create_plan", [](const proto::Request& request) {
      return plan_written(request, "awaiting_approval");
    });
    fake_.on("plan.approve",
             [outcome](const proto::Request& request) { return carried_out(request, outcome); });
    // Asked once at the gate, then once the plan ended.
    auto asked = std::make_shared<int>(0);
    fake_.on("plan.get", [asked, outcome](const proto::Request& request) {
      return FakeReply::result(request, a_plan_get(++*asked == 1 ? "awaiting_approval" : outcome));
    });
    for (bool headless : {false, true}) {
      *asked = 0;
      std::vector<std::string> args = {"plan", "--repo", "/src/app", "--approve-plan", "x"};
      if (headless) args.insert(args.begin(), "--json");
      const std::size_t approvals_before = fake_.requests("plan.approve").size();
      const CtlRun run = ctl(args);
      EXPECT_EQ(run.exit_code, expected) << outcome << run.out << run.err;
      EXPECT_EQ(fake_.requests("plan.approve").size(), approvals_before + 1) << outcome;
      if (!headless) {
        EXPECT_TRUE(contains(run.out, "approving plan p1 (--approve-plan)")) << run.out;
        EXPECT_TRUE(contains(run.out, "plan p1 " + outcome)) << run.out;
      } else {
        for (const auto& line : lines_of(run.out))
          EXPECT_FALSE(json::parse(line, nullptr, false).is_discarded()) << line;
      }
    }
  }
  const CtlRun refused = ctl({"plan", "--repo", "/src/app", "--approve-plan", "--no-follow", "x"});
  EXPECT_EQ(refused.exit_code, 2) << refused.err;
}

// A headless run cannot answer an approval one of the plan's loops waits
// for: it stops there and exits 7; a person following is told how to answer
// it and follows on. Another plan's approval changes nothing.
TEST_F(PlanCommandsTest, ApproveFollowStopsHeadlessAtAnApprovalOfAnyLoopOfThePlan) {
  fake_.on("plan.approve", [](const proto::Request& request) {
    FakeReply reply =
        FakeReply::result(request, {{"plan", a_plan_loop("p1", "plan", "waiting", "")}});
    reply
        .event("approval.requested",
               {{"id", "a-8"}, {"tool", "run_command"}, {"loop_id", "p2-s1-ph1-c1"}})
        .event("approval.requested",
               {{"id", "a-9"}, {"tool", "run_command"}, {"loop_id", "p1-s1-ph1-c1"}})
        .event("loop.updated", {{"loop", a_plan_loop("p1", "plan", "completed", "")}});
    return reply;
  });
  fake_.answer("plan.get", a_plan_get("waiting"));
  const CtlRun headless = ctl({"--json", "plan", "approve", "p1", "--follow"});
  EXPECT_EQ(headless.exit_code, 7) << headless.out << headless.err;
  EXPECT_TRUE(contains(headless.out, "\"a-9\"")) << headless.out;
  EXPECT_FALSE(contains(headless.out, "loop.updated")) << "it stopped at the approval";
  EXPECT_TRUE(contains(headless.err, "waits for an approval")) << headless.err;

  fake_.answer("plan.get", a_plan_get("completed"));
  const CtlRun person = ctl({"plan", "approve", "p1", "--follow"});
  EXPECT_EQ(person.exit_code, 0) << person.out << person.err;
  EXPECT_TRUE(contains(person.out, "waiting for your approval: run_command (a-9)")) << person.out;
  EXPECT_FALSE(contains(person.out, "a-8")) << person.out;
}

TEST_F(PlanCommandsTest, ApproveFollowWithJsonPrintsThePlansEventsAsJsonLines) {
  fake_.on("plan.approve",
           [](const proto::Request& request) { return carried_out(request, "completed"); });
  fake_.answer("plan.get", a_plan_get("completed"));
  const CtlRun run = ctl({"--json", "plan", "approve", "p1", "--follow"});
  ASSERT_EQ(run.exit_code, 0) << run.err;
  const auto lines = lines_of(run.out);
  ASSERT_EQ(lines.size(), 11u) << run.out;
  EXPECT_EQ(json::parse(lines.front()), (json{{"plan", a_plan_loop("p1", "plan", "waiting", "")}}));
  EXPECT_EQ(json::parse(lines.back()), a_plan_get("completed"));
  for (std::size_t i = 1; i + 1 < lines.size(); ++i) {
    EXPECT_TRUE(json::parse(lines[i]).contains("event")) << lines[i];
    EXPECT_FALSE(contains(lines[i], "p2")) << lines[i];
    EXPECT_FALSE(contains(lines[i], "l-9")) << lines[i];
  }
}

// ---- plan merge ----

TEST_F(PlanCommandsTest, MergeSaysHowItMerged) {
  fake_.on("plan.merge", [](const proto::Request& request) {
    const bool ff = !request.params.contains("into");
    return FakeReply::result(request, {{"plan_id", "p1"},
                                       {"into", request.params.value("into", "main")},
                                       {"commit", "0123456789abcdef"},
                                       {"fast_forward", ff},
                                       {"already_merged", false}});
  });
  CtlRun run = ctl({"plan", "merge", "p1"});
  ASSERT_EQ(run.exit_code, 0) << run.err;
  EXPECT_EQ(run.out, "merged loop/p1 into main (fast-forward) at 01234567\n");
  run = ctl({"plan", "merge", "p1", "--into", "release"});
  ASSERT_EQ(run.exit_code, 0) << run.err;
  EXPECT_EQ(run.out, "merged loop/p1 into release (merge commit) at 01234567\n");
  const auto merges = fake_.requests("plan.merge");
  ASSERT_EQ(merges.size(), 2u);
  EXPECT_EQ(merges[0].params, (json{{"id", "p1"}}));
  EXPECT_EQ(merges[1].params, (json{{"id", "p1"}, {"into", "release"}}));
}

TEST_F(PlanCommandsTest, MergeOfAMergedPlanAndJson) {
  const json result = {{"plan_id", "p1"},
                       {"into", "main"},
                       {"commit", "0123456789abcdef"},
                       {"fast_forward", false},
                       {"already_merged", true}};
  fake_.answer("plan.merge", result);
  CtlRun run = ctl({"plan", "merge", "p1"});
  ASSERT_EQ(run.exit_code, 0) << run.err;
  EXPECT_EQ(run.out, "loop/p1 is already merged into main (at 01234567)\n");
  run = ctl({"plan", "merge", "p1", "--json"});
  ASSERT_EQ(run.exit_code, 0) << run.err;
  EXPECT_EQ(json::parse(run.out), result);
}

TEST_F(PlanCommandsTest, RefusedMergeExitsOneWithTheDaemonsWordsAndTheFiles) {
  fake_.on("plan.merge", [](const proto::Request& request) {
    return FakeReply::error(request, 1002, "main moved: the merge conflicts",
                            {{"code", "invalid_state"},
                             {"message", "main moved: the merge conflicts"},
                             {"hint", "merge by hand: git merge loop/p1"},
                             {"details", {{"files", {"src/a.c", "src/b\x1b.c"}}}}});
  });
  const CtlRun run = ctl({"plan", "merge", "p1"});
  EXPECT_EQ(run.exit_code, 1);
  EXPECT_TRUE(run.out.empty()) << run.out;
  EXPECT_TRUE(contains(run.err, "looprctl: main moved: the merge conflicts\n")) << run.err;
  EXPECT_TRUE(contains(run.err, "hint: merge by hand: git merge loop/p1\n")) << run.err;
  EXPECT_TRUE(contains(run.err, "conflicting files:\n  src/a.c\n  src/b\\x1b.c\n")) << run.err;
}

// ---- loops --tree ----

TEST_F(PlanCommandsTest, LoopsTreePrintsEachLoopUnderItsParent) {
  json loops = a_plan_tree();
  json failed = a_loop("l-3", "failed");
  failed["status_reason"] = "the same edit failed 3 times in a row, which is a loop health problem";
  failed["created_at_ms"] = 500;  // older than p1: the first root
  failed["updated_at_ms"] = 90'500;
  loops.push_back(failed);
  fake_.answer("loop.list", {{"loops", loops}});
  const CtlRun run = ctl({"loops", "--tree"});
  ASSERT_EQ(run.exit_code, 0) << run.err;
  EXPECT_EQ(params_of("loop.list"), (json{{"include_deleted", false}}));
  const auto lines = lines_of(run.out);
  ASSERT_EQ(lines.size(), 10u) << run.out;
  const std::vector<std::string> leads = {
      "ID",
      "l-3 ",
      "p1 ",
      "\xe2\x94\x9c\xe2\x94\x80 p1-s1 ",
      "\xe2\x94\x82  \xe2\x94\x9c\xe2\x94\x80 p1-s1-ph1 ",
      "\xe2\x94\x82  \xe2\x94\x82  \xe2\x94\x9c\xe2\x94\x80 p1-s1-ph1-c1 ",
      "\xe2\x94\x82  \xe2\x94\x82  \xe2\x94\x94\xe2\x94\x80 p1-s1-ph1-c2 ",
      "\xe2\x94\x82  \xe2\x94\x94\xe2\x94\x80 p1-s1-ph2 ",
      "\xe2\x94\x82     \xe2\x94\x94\xe2\x94\x80 p1-s1-ph2-c1 ",
      "\xe2\x94\x94\xe2\x94\x80 p1-s2 "};
  for (std::size_t i = 0; i < leads.size(); ++i) {
    EXPECT_EQ(lines[i].rfind(leads[i], 0), 0u) << i << ": " << lines[i] << "\n" << run.out;
  }
  for (const char* header : {"TYPE", "STATUS", "ITER", "ELAPSED", "TOKENS", "COST", "MERGED"})
    EXPECT_TRUE(contains(lines[0], header)) << lines[0];
  EXPECT_TRUE(contains(lines[1], "failed (the same edit failed 3 times in a row...)")) << lines[1];
  EXPECT_TRUE(contains(lines[1], "1.5 min")) << lines[1];
  EXPECT_TRUE(contains(lines[2], "plan ")) << lines[2];
  EXPECT_TRUE(contains(lines[2], "waiting")) << lines[2];
  EXPECT_TRUE(contains(lines[2], "2/50")) << lines[2];
  EXPECT_TRUE(contains(lines[2], "1 min")) << lines[2];
  EXPECT_TRUE(contains(lines[2], "12.3k")) << lines[2];
  EXPECT_TRUE(contains(lines[2], "$0.0123")) << lines[2];
  EXPECT_FALSE(contains(lines[2], "merged")) << lines[2];
  EXPECT_TRUE(contains(lines[4], "completed")) << lines[4];
  EXPECT_EQ(lines[4].substr(lines[4].size() - 6), "merged") << lines[4];
  EXPECT_TRUE(contains(lines[5], "invalidated")) << lines[5];
  EXPECT_FALSE(contains(lines[5], "re-run")) << lines[5];
  EXPECT_FALSE(contains(lines[5], "merged")) << lines[5];
  EXPECT_EQ(lines[6].substr(lines[6].size() - 6), "merged") << lines[6];
  EXPECT_TRUE(contains(lines[8], "running")) << lines[8];
  EXPECT_TRUE(contains(lines[8], "3/50")) << lines[8];
  EXPECT_TRUE(contains(lines[9], "queued (waiting for p1-s1)")) << lines[9];
  EXPECT_TRUE(contains(lines[9], "0/50")) << lines[9];
  // The columns line up, whatever the depth of the id.
  const auto column = [](const std::string& line, const std::string& word) {
    return client::code_points(std::string_view(line).substr(0, line.find(word)));
  };
  EXPECT_EQ(column(lines[0], "TYPE"), column(lines[2], "plan"));
  EXPECT_EQ(column(lines[0], "TYPE"), column(lines[3], "spec"));
  EXPECT_EQ(column(lines[0], "TYPE"), column(lines[5], "code"));
}

TEST_F(PlanCommandsTest, LoopsTreeSendsTheFiltersAndPrintsJson) {
  const json result = {{"loops", a_plan_tree()}};
  fake_.answer("loop.list", result);
  CtlRun run = ctl({"loops", "--tree", "--status", "awaiting_approval", "--json"});
  ASSERT_EQ(run.exit_code, 0) << run.err;
  EXPECT_EQ(json::parse(run.out), result);
  run = ctl({"loop", "list", "--tree", "--type", "plan"});
  ASSERT_EQ(run.exit_code, 0) << run.err;
  const auto lists = fake_.requests("loop.list");
  ASSERT_EQ(lists.size(), 2u);
  EXPECT_EQ(lists[0].params, (json{{"include_deleted", false}, {"status", "awaiting_approval"}}));
  EXPECT_EQ(lists[1].params, (json{{"include_deleted", false}, {"type", "plan"}}));
}

TEST_F(PlanCommandsTest, LoopsTreeWithoutAnySaysSo) {
  fake_.answer("loop.list", {{"loops", json::array()}});
  const CtlRun run = ctl({"loops", "--tree"});
  ASSERT_EQ(run.exit_code, 0) << run.err;
  EXPECT_EQ(run.out, "no loops\n");
}

// ---- gc ----

TEST_F(PlanCommandsTest, GcPrintsWhatItRemovedAndKept) {
  fake_.on("loop.gc", [](const proto::Request& request) {
    return FakeReply::result(
        request, {{"removed_worktrees",
                   {{{"id", "p1-s1-ph1-c1"}, {"worktree", "/src/.loopr-worktrees/p1-s1-ph1-c1"}},
                    {{"id", "l-3"}, {"worktree", "/src/.loopr-worktrees/l-3"}}}},
                  {"kept", {{{"id", "p2"}, {"reason", "its tree is still running"}}}}});
  });
  CtlRun run = ctl({"gc"});
  ASSERT_EQ(run.exit_code, 0) << run.err;
  const std::vector<std::string> expected = {
      "removed /src/.loopr-worktrees/p1-s1-ph1-c1 (p1-s1-ph1-c1)",
      "removed /src/.loopr-worktrees/l-3 (l-3)", "kept p2: its tree is still running",
      "removed 2 worktrees, kept 1"};
  EXPECT_EQ(lines_of(run.out), expected) << run.out;
  run = ctl({"gc", "--dry-run"});
  ASSERT_EQ(run.exit_code, 0) << run.err;
  EXPECT_TRUE(contains(run.out, "would remove /src/.loopr-worktrees/l-3 (l-3)\n")) << run.out;
  EXPECT_TRUE(
      contains(run.out, "would remove 2 worktrees, keep 1 (dry run: nothing was removed)\n"))
      << run.out;
  const auto gcs = fake_.requests("loop.gc");
  ASSERT_EQ(gcs.size(), 2u);
  EXPECT_EQ(gcs[0].params, (json{{"dry_run", false}}));
  EXPECT_EQ(gcs[1].params, (json{{"dry_run", true}}));
}

TEST_F(PlanCommandsTest, GcWithJsonPrintsTheResultAndAMalformedOneExitsFour) {
  const json result = {{"removed_worktrees", json::array()}, {"kept", json::array()}};
  fake_.answer("loop.gc", result);
  CtlRun run = ctl({"gc", "--json"});
  ASSERT_EQ(run.exit_code, 0) << run.err;
  EXPECT_EQ(json::parse(run.out), result);
  run = ctl({"gc"});
  EXPECT_EQ(run.out, "removed 0 worktrees, kept 0\n");
}

TEST_F(PlanCommandsTest, MalformedGcResultExitsFour) {
  fake_.answer("loop.gc", {{"removed_worktrees", "all of them"}});
  const CtlRun run = ctl({"gc"});
  EXPECT_EQ(run.exit_code, 4) << run.err;
}

// ---- usage and reachability ----

TEST_F(PlanCommandsTest, UsageMistakesExitTwoAndSendNothing) {
  expect_usage_errors(std::vector<std::vector<std::string>>{
      std::vector<std::string>{"plan"},
      {"plan", "add a flag"},
      {"plan", "--repo", "/src/app"},
      {"plan", "--repo", "/src/app", "  \n"},
      {"plan", "--repo", "/src/app", "--budget-usd", "0", "add a flag"},
      {"plan", "--repo", "/src/app", "--budget-usd", "nan", "add a flag"},
      {"plan", "show"},
      {"plan", "show", "p1", "--repo", "/src/app"},
      {"plan", "approve"},
      {"plan", "approve", "p1", "--no-follow"},
      {"plan", "reject"},
      {"plan", "iterate", "p1"},
      {"plan", "iterate", "p1", "--feedback", " "},
      {"plan", "merge"},
      {"plan", "merge", "p1", "--into"},
      {"gc", "--everything"},
      {"loops", "--tree", "--status", "sleeping"}});
}

TEST_F(PlanCommandsTest, UnreachableDaemonExitsThree) {
  const std::string socket = tree_.path("nobody.sock");
  for (const std::vector<std::string>& args :
       {std::vector<std::string>{"plan", "--repo", "/src/app", "add a flag"},
        {"plan", "show", "p1"},
        {"plan", "approve", "p1", "--follow"},
        {"plan", "iterate", "p1", "--feedback", "more"},
        {"plan", "merge", "p1"},
        {"loops", "--tree"},
        {"gc"}}) {
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

}  // namespace
}  // namespace loopr::test
