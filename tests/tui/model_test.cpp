// The TUI's model without a terminal: DaemonState from snapshots and events,
// LoopDetail from a journal and live events (coalesced, capped, replayed in
// order), and the screens compose() lays out from them.
#include <gtest/gtest.h>

#include <string>

#include "tests/tui/screen_text.hpp"
#include "tui/daemon_state.hpp"
#include "tui/loop_detail.hpp"
#include "tui/text_width.hpp"
#include "tui/views.hpp"

namespace loopr::tui {
namespace {

using nlohmann::json;
using test::screen_text;

json loop(const std::string& id, const std::string& status, json extra = json::object()) {
  json out = {{"id", id},
              {"type", "code"},
              {"status", status},
              {"task", "task of " + id},
              {"iteration", 1},
              {"max_iterations", 10},
              {"parent_id", nullptr},
              {"children", json::array()},
              {"usage", {{"input_tokens", 1000}, {"output_tokens", 200}, {"cost_usd", 0.25}}},
              {"created_at_ms", 1000},
              {"updated_at_ms", 2000}};
  for (const auto& [key, value] : extra.items())
    out[key] = value;
  return out;
}

proto::Event event(std::string name, json data) {
  return proto::Event{std::move(name), std::move(data)};
}

// A plan with a spec and a code loop under it, and a loose code loop.
DaemonState plan_state() {
  DaemonState state;
  Snapshot snapshot;
  snapshot.daemon_version = "0.1.0";
  snapshot.loops = json::array(
      {loop("p1", "awaiting_approval",
            {{"type", "plan"}, {"children", {"p1-s1"}}, {"plan_id", "p1"}}),
       loop("p1-s1", "running",
            {{"type", "spec"}, {"parent_id", "p1"}, {"children", {"p1-s1-ph1"}}}),
       loop("p1-s1-ph1", "queued",
            {{"type", "phase"}, {"parent_id", "p1-s1"}, {"queue_reason", "waiting for a slot"}}),
       loop("c2", "completed", {{"created_at_ms", 500}})});
  snapshot.approvals = json::array({{{"id", "a-1"},
                                     {"call_id", "c-9"},
                                     {"tool", "run_command"},
                                     {"lane", "net"},
                                     {"tier", "privileged"},
                                     {"args", {{"command", "make"}}},
                                     {"worktree", "/w"},
                                     {"expires_at_ms", 100000}}});
  snapshot.metrics = {
      {"uptime_ms", 65000},
      {"lanes",
       {{{"lane", "no-net"}, {"state", "ready"}, {"slots", 4}, {"in_flight", 1}, {"queued", 0}},
        {{"lane", "heavy"}, {"state", "ready"}, {"slots", 1}, {"in_flight", 1}, {"queued", 2}}}},
      {"calls", {{{"tool", "read_file"}, {"count", 10}}}}};
  state.apply_snapshot(snapshot, 0);
  state.set_link(LinkState::connected);
  return state;
}

TEST(DaemonState, SnapshotThenEventsKeepTheNewestLoop) {
  DaemonState state = plan_state();
  ASSERT_EQ(state.loops().size(), 4u);
  state.apply_event(
      event("loop.updated", {{"loop", loop("c2", "failed", {{"updated_at_ms", 1500}})}}), 0);
  EXPECT_EQ(state.find_loop("c2")->at("status"), "completed") << "an older update is ignored";
  state.apply_event(
      event("loop.updated", {{"loop", loop("c2", "failed", {{"updated_at_ms", 3000}})}}), 0);
  EXPECT_EQ(state.find_loop("c2")->at("status"), "failed");
  state.apply_event(event("loop.created", {{"loop", loop("c3", "running")}}), 0);
  EXPECT_EQ(state.loops().size(), 5u);
  EXPECT_EQ(state.loops().back()["id"], "c3");
}

TEST(DaemonState, ApprovalsComeAndGoAndPlansAwaitingAreCounted) {
  DaemonState state = plan_state();
  EXPECT_EQ(state.approvals().size(), 1u);
  EXPECT_EQ(state.plans_awaiting().size(), 1u);
  state.apply_event(event("approval.requested", {{"id", "a-2"}, {"tool", "build"}}), 0);
  EXPECT_EQ(state.approvals().size(), 2u);
  state.apply_event(event("approval.resolved", {{"id", "a-1"}, {"approved", true}}), 0);
  ASSERT_EQ(state.approvals().size(), 1u);
  EXPECT_EQ(state.approvals()[0]["id"], "a-2");
  state.apply_event(
      event("plan.awaiting_approval",
            {{"plan", loop("p1", "awaiting_approval", {{"type", "plan"}, {"updated_at_ms", 5000}})},
             {"markdown", "# Plan\n- spec one"}}),
      0);
  ASSERT_NE(state.plan_markdown("p1"), nullptr);
  EXPECT_EQ(*state.plan_markdown("p1"), "# Plan\n- spec one");
}

TEST(DaemonState, CallsPerSecondComeFromMetricsDeltas) {
  DaemonState state = plan_state();
  EXPECT_FALSE(state.calls_per_second().has_value());
  state.apply_metrics({{"calls", {{{"tool", "read_file"}, {"count", 30}}}}}, 2000);
  ASSERT_TRUE(state.calls_per_second().has_value());
  EXPECT_DOUBLE_EQ(*state.calls_per_second(), 10.0);
}

TEST(DaemonState, ToolCallsAreRecordedAndCapped) {
  DaemonState state;
  for (std::size_t i = 0; i < DaemonState::kMaxToolCalls + 50; ++i) {
    const std::string id = "c-" + std::to_string(i);
    state.apply_event(
        event("tool.started", {{"call_id", id}, {"tool", "grep"}, {"lane", "no-net"}}), 0);
    state.apply_event(event("tool.output", {{"call_id", id}, {"data", "xyz"}}), 0);
    state.apply_event(
        event("tool.finished",
              {{"call_id", id}, {"status", "success"}, {"ok", true}, {"duration_ms", 3}}),
        0);
  }
  ASSERT_EQ(state.tool_calls().size(), DaemonState::kMaxToolCalls);
  EXPECT_EQ(state.tool_calls().back().call_id, "c-549");
  EXPECT_EQ(state.tool_calls().back().status, "success");
  EXPECT_EQ(state.tool_calls().back().duration_ms, 3);
  EXPECT_EQ(state.tool_calls().back().output_bytes, 3u);
}

TEST(DaemonState, SpendTodayCountsLoopsUpdatedSinceMidnight) {
  const json loops = json::array({loop("a", "running", {{"updated_at_ms", 5000}}),
                                  loop("b", "completed", {{"updated_at_ms", 100}})});
  const SpendToday today = spend_today(loops, 1000);
  EXPECT_EQ(today.loops, 1u);
  EXPECT_DOUBLE_EQ(today.tokens, 1200);
  EXPECT_DOUBLE_EQ(today.cost_usd, 0.25);
}

json step(std::int64_t id, std::int64_t iteration, const std::string& kind, json data) {
  return {{"id", id},
          {"iteration", iteration},
          {"kind", kind},
          {"data", data},
          {"at_ms", 1000 + id * 10}};
}

TEST(LoopDetail, ChunksCoalesceAndTheFinalTurnReplacesThem) {
  LoopDetail detail("c1");
  detail.load_transcript(json::array({step(1, 1, "iteration_started", {{"prompt", "x"}})}));
  for (const char* piece : {"Reading ", "the ", "file."})
    detail.apply_event(event(
        "chat.chunk", {{"loop_id", "c1"}, {"iteration", 1}, {"sequence", 0}, {"text", piece}}));
  detail.apply_event(event(
      "chat.chunk", {{"loop_id", "other"}, {"iteration", 1}, {"sequence", 0}, {"text", "NO"}}));
  ASSERT_EQ(detail.entries().size(), 2u);
  EXPECT_EQ(detail.entries()[1].text, "Reading the file.");
  EXPECT_TRUE(detail.entries()[1].streaming);
  detail.apply_event(
      event("loop.step",
            {{"loop_id", "c1"},
             {"step", step(2, 1, "model_turn",
                           {{"sequence", 0}, {"turn", {{"text", "Reading the file now."}}}})}}));
  ASSERT_EQ(detail.entries().size(), 2u);
  EXPECT_EQ(detail.entries()[1].text, "Reading the file now.");
  EXPECT_FALSE(detail.entries()[1].streaming);
}

TEST(LoopDetail, ToolCallsGetStatusDurationOutputAndLiveOutput) {
  LoopDetail detail("c1");
  detail.load_transcript(json::array());
  detail.apply_event(event(
      "loop.step",
      {{"loop_id", "c1"},
       {"step",
        step(5, 1, "tool_calls_started",
             {{"calls", {{{"id", "t1"}, {"name", "build"}, {"arguments", json::object()}}}}})}}));
  detail.apply_event(
      event("tool.started", {{"call_id", "c-7"}, {"tool", "build"}, {"loop_id", "c1"}}));
  detail.apply_event(event("tool.output", {{"call_id", "c-7"}, {"data", "compiling\n"}}));
  ASSERT_EQ(detail.entries().size(), 1u);
  EXPECT_EQ(detail.entries()[0].router_call_id, "c-7");
  EXPECT_EQ(detail.entries()[0].output, "compiling\n");
  EXPECT_EQ(detail.entries()[0].status, "running");
  detail.apply_event(
      event("tool.finished",
            {{"call_id", "c-7"}, {"loop_id", "c1"}, {"status", "success"}, {"duration_ms", 42}}));
  detail.apply_event(event("loop.step", {{"loop_id", "c1"},
                                         {"step", step(6, 1, "tool_results",
                                                       {{"results",
                                                         {{{"call_id", "t1"},
                                                           {"name", "build"},
                                                           {"ok", true},
                                                           {"status", "success"},
                                                           {"content", "built ok"}}}}})}}));
  EXPECT_EQ(detail.entries()[0].status, "success");
  EXPECT_EQ(detail.entries()[0].duration_ms, 42);
  EXPECT_EQ(detail.entries()[0].output, "built ok");
}

TEST(LoopDetail, ResultsStoredAsJsonTextShowTheirUsefulFields) {
  LoopDetail detail("c1");
  const auto results = [](std::string content) {
    return json{{"results",
                 {{{"call_id", "t"}, {"ok", true}, {"status", "success"}, {"content", content}}}}};
  };
  const auto call = [](std::int64_t id) {
    return step(id, 1, "tool_calls_started",
                {{"calls", {{{"id", "t"}, {"name", "x"}, {"arguments", json::object()}}}}});
  };
  detail.load_transcript(json::array(
      {call(1), step(2, 1, "tool_results", results(R"({"content":"     1|41\n","total_lines":1})")),
       call(3),
       step(4, 1, "tool_results", results(R"({"stdout":"hi\n","stderr":"","exit_code":0})")),
       call(5),
       step(6, 1, "tool_results",
            results(R"({"error":{"code":"no_match","message":"not found","hint":"read it"}})")),
       call(7), step(8, 1, "tool_results", results("plain text"))}));
  ASSERT_EQ(detail.entries().size(), 4u);
  EXPECT_EQ(detail.entries()[0].output, "     1|41\n");
  EXPECT_EQ(detail.entries()[1].output, "hi\nexit code 0");
  EXPECT_EQ(detail.entries()[2].output, "error: no_match: not found\nhint: read it");
  EXPECT_EQ(detail.entries()[3].output, "plain text");
}

TEST(LoopDetail, LiveOutputKeepsItsTailWithinTheCap) {
  LoopDetail detail("c1");
  detail.load_transcript(json::array());
  detail.apply_event(
      event("tool.started", {{"call_id", "c-1"}, {"tool", "run_command"}, {"loop_id", "c1"}}));
  const std::string chunk(4096, 'x');
  for (int i = 0; i < 1000; ++i)
    detail.apply_event(event("tool.output", {{"call_id", "c-1"}, {"data", chunk}}));
  detail.apply_event(event("tool.output", {{"call_id", "c-1"}, {"data", "THE END"}}));
  ASSERT_EQ(detail.entries().size(), 1u);
  EXPECT_LE(detail.entries()[0].output.size(), LoopDetail::kMaxOutputBytes);
  EXPECT_TRUE(detail.entries()[0].output_truncated);
  EXPECT_EQ(detail.entries()[0].output.substr(detail.entries()[0].output.size() - 7), "THE END");
}

TEST(LoopDetail, EventsBeforeTheTranscriptAreReplayedOnceInOrder) {
  LoopDetail detail("c1");
  detail.apply_event(
      event("loop.step", {{"loop_id", "c1"}, {"step", step(2, 1, "note", {{"text", "second"}})}}));
  detail.apply_event(
      event("loop.step", {{"loop_id", "c1"}, {"step", step(3, 1, "note", {{"text", "third"}})}}));
  EXPECT_TRUE(detail.entries().empty());
  detail.load_transcript(json::array(
      {step(1, 1, "note", {{"text", "first"}}), step(2, 1, "note", {{"text", "second"}})}));
  ASSERT_EQ(detail.entries().size(), 3u);
  EXPECT_EQ(detail.entries()[0].text, "note: first");
  EXPECT_EQ(detail.entries()[1].text, "note: second");
  EXPECT_EQ(detail.entries()[2].text, "note: third");
}

TEST(LoopDetail, EntriesAreCappedAndTheDropCounted) {
  LoopDetail detail("c1");
  json steps = json::array();
  for (std::int64_t i = 1; i <= static_cast<std::int64_t>(LoopDetail::kMaxEntries) + 10; ++i)
    steps.push_back(step(i, 1, "note", {{"text", std::to_string(i)}}));
  detail.load_transcript(steps);
  EXPECT_EQ(detail.entries().size(), LoopDetail::kMaxEntries);
  EXPECT_EQ(detail.dropped_entries(), 10u);
}

TEST(LoopDetail, ValidationsArePerIteration) {
  LoopDetail detail("c1");
  detail.load_transcript(json::array(
      {step(1, 1, "validation_started", {{"command", "sh test.sh"}}),
       step(2, 1, "validation", {{"passed", false}, {"exit_code", 1}, {"output", "FAIL"}}),
       step(3, 2, "validation_started", {{"command", "sh test.sh"}}),
       step(4, 2, "validation", {{"passed", true}, {"exit_code", 0}, {"output", "ok"}})}));
  ASSERT_EQ(detail.entries().size(), 2u);
  EXPECT_EQ(detail.entries()[0].passed, false);
  EXPECT_EQ(detail.entries()[0].iteration, 1);
  EXPECT_EQ(detail.entries()[1].passed, true);
  EXPECT_EQ(detail.entries()[1].iteration, 2);
}

TEST(Views, LoopsTreeShowsThePlanUnderItsRootAndCollapses) {
  DaemonState state = plan_state();
  UiState ui;
  auto rows = loop_rows(state, ui);
  ASSERT_EQ(rows.size(), 4u);
  EXPECT_EQ(rows[0].id, "c2");  // oldest root first
  EXPECT_EQ(rows[1].id, "p1");
  EXPECT_EQ(rows[2].id, "p1-s1");
  EXPECT_EQ(rows[2].depth, 1u);
  EXPECT_EQ(rows[3].id, "p1-s1-ph1");
  ui.collapsed.insert("p1-s1");
  rows = loop_rows(state, ui);
  ASSERT_EQ(rows.size(), 3u);
  EXPECT_TRUE(rows[2].collapsed);
  ui.filter = StatusFilter::finished;
  rows = loop_rows(state, ui);
  ASSERT_EQ(rows.size(), 1u);
  EXPECT_EQ(rows[0].id, "c2");
  ui.filter = StatusFilter::all;
  ui.sort = SortOrder::status;  // awaiting approval first
  rows = loop_rows(state, ui);
  EXPECT_EQ(rows[0].id, "p1");
}

TEST(Views, TheScreenFitsEverySizeAndShowsTheHeader) {
  DaemonState state = plan_state();
  for (const ScreenSize size :
       {ScreenSize{80, 24}, ScreenSize{120, 40}, ScreenSize{40, 10}, ScreenSize{200, 60}}) {
    for (const Pane pane : {Pane::loops, Pane::approvals, Pane::tools}) {
      UiState ui;
      ui.pane = pane;
      const Lines screen = compose(state, ui, size, 3000);
      ASSERT_EQ(screen.size(), size.height);
      for (const auto& line : screen)
        EXPECT_LE(display_width(line.text()), size.width) << line.text();
    }
  }
  UiState ui;
  const std::string text = screen_text(compose(state, ui, {120, 40}, 3000));
  EXPECT_NE(text.find("looprd 0.1.0"), std::string::npos) << text;
  EXPECT_NE(text.find("up 1.1 min"), std::string::npos) << text;
  EXPECT_NE(text.find("connected"), std::string::npos) << text;
  EXPECT_NE(text.find("heavy ready 1/1 +2 queued"), std::string::npos) << text;
  EXPECT_NE(text.find("1 call, 1 plan"), std::string::npos) << text;
  EXPECT_NE(text.find("p1-s1-ph1"), std::string::npos) << text;
  EXPECT_NE(text.find("queued (waiting for a slot)"), std::string::npos) << text;
  EXPECT_NE(text.find("awaiting_approval"), std::string::npos) << text;
}

TEST(Views, ApprovalsShowTheCallAndThePlansMarkdown) {
  DaemonState state = plan_state();
  state.set_plan_markdown("p1", "# Add sub\n\n- spec one: sub\n- spec two: docs");
  UiState ui;
  ui.pane = Pane::approvals;
  std::string text = screen_text(compose(state, ui, {80, 24}, 3000));
  EXPECT_NE(text.find("run_command"), std::string::npos) << text;
  EXPECT_NE(text.find("\"command\": \"make\""), std::string::npos) << text;
  ui.approval_cursor = "plan:p1";
  text = screen_text(compose(state, ui, {80, 24}, 3000));
  EXPECT_NE(text.find("Add sub"), std::string::npos) << text;
  EXPECT_NE(text.find("- spec two: docs"), std::string::npos) << text;
}

// A validation that finds the heavy slot busy (tool.queued) shows its place
// in the loop's detail header until it prints or finishes.
TEST(Views, AValidationWaitingForItsLaneShowsItsPlace) {
  DaemonState state = plan_state();
  state.apply_event(
      event("tool.started",
            {{"call_id", "c-20"}, {"tool", "validate"}, {"lane", "heavy"}, {"loop_id", "c2"}}),
      0);
  state.apply_event(event("tool.queued", {{"call_id", "c-20"},
                                          {"tool", "validate"},
                                          {"lane", "heavy"},
                                          {"loop_id", "c2"},
                                          {"ahead", 2},
                                          {"slots", 1},
                                          {"running", 1}}),
                    0);
  ASSERT_NE(state.waiting_call("c2"), nullptr);
  EXPECT_EQ(state.waiting_call("c2")->waiting_ahead, 2);
  state.open_detail("c2");
  state.detail()->load_transcript(json::array());
  UiState ui;
  ui.pane = Pane::detail;
  ui.detail_loop = "c2";
  std::string text = screen_text(compose(state, ui, {80, 24}, 3000));
  EXPECT_NE(text.find("validate is waiting for a heavy slot (2 ahead)"), std::string::npos) << text;
  state.apply_event(event("tool.output", {{"call_id", "c-20"}, {"data", "building\n"}}), 0);
  EXPECT_EQ(state.waiting_call("c2"), nullptr);
  text = screen_text(compose(state, ui, {80, 24}, 3000));
  EXPECT_EQ(text.find("waiting for a heavy slot"), std::string::npos) << text;
}

TEST(Views, DetailFoldsLongOutputAndFollowsTheEnd) {
  DaemonState state = plan_state();
  state.open_detail("c2");
  std::string output;
  for (int i = 1; i <= 30; ++i)
    output += "line " + std::to_string(i) + "\n";
  state.detail()->load_transcript(json::array(
      {step(1, 1, "iteration_started", json::object()),
       step(2, 1, "model_turn", {{"sequence", 0}, {"turn", {{"text", "I will read it."}}}}),
       step(
           3, 1, "tool_calls_started",
           {{"calls", {{{"id", "r"}, {"name", "read_file"}, {"arguments", {{"path", "a.txt"}}}}}}}),
       step(4, 1, "tool_results",
            {{"results",
              {{{"call_id", "r"}, {"ok", true}, {"status", "success"}, {"content", output}}}}})}));
  UiState ui;
  ui.pane = Pane::detail;
  ui.detail_loop = "c2";
  std::string text = screen_text(compose(state, ui, {80, 24}, 3000));
  EXPECT_NE(text.find("I will read it."), std::string::npos) << text;
  EXPECT_NE(text.find("read_file {\"path\":\"a.txt\"}"), std::string::npos) << text;
  EXPECT_NE(text.find("more lines (o unfolds)"), std::string::npos) << text;
  EXPECT_EQ(text.find("line 30"), std::string::npos) << text;
  ui.fold_output = false;
  text = screen_text(compose(state, ui, {80, 24}, 3000));
  EXPECT_NE(text.find("line 30"), std::string::npos) << "following shows the end:\n" << text;
}

TEST(Views, BudgetLeftIsAColumnThatFitsAt80Columns) {
  DaemonState state;
  Snapshot snapshot;
  const auto budget = [](json limits, json left) {
    return json{{"budget", {{"limits", limits}, {"used", json::object()}, {"left", left}}}};
  };
  snapshot.loops = json::array(
      {loop("c1", "running", budget({{"usd", 1.0}}, {{"usd", 0.75}})),
       loop("c2", "running", budget(json::object(), json::object())),
       loop("c3", "running",
            budget({{"usd", 1.0}, {"tool_calls", 20}}, {{"usd", 0.9}, {"tool_calls", 2}})),
       loop("c4", "budget_exhausted", budget({{"usd", 1.0}}, {{"usd", 0}}))});
  state.apply_snapshot(snapshot, 0);
  UiState ui;
  ui.loop_cursor = "c2";
  const auto cell_line = [&](const Lines& lines, const std::string& id) -> const Line* {
    for (const auto& line : lines)
      if (line.text().rfind("  " + id + " ", 0) == 0) return &line;
    return nullptr;
  };
  for (const std::size_t width : {80u, 120u}) {
    const Lines screen = compose(state, ui, {width, 24}, 3000);
    const std::string text = screen_text(screen);
    for (const auto& line : screen)
      EXPECT_LE(display_width(line.text()), width) << text;
    EXPECT_NE(text.find("LEFT"), std::string::npos) << text;
    EXPECT_NE(text.find("COST"), std::string::npos) << text;
    ASSERT_NE(cell_line(screen, "c1"), nullptr) << text;
    EXPECT_NE(cell_line(screen, "c1")->text().find("$0.7500"), std::string::npos) << text;
    EXPECT_NE(cell_line(screen, "c2")->text().find("\xe2\x80\x94"), std::string::npos)
        << "unlimited: " << text;
    EXPECT_NE(cell_line(screen, "c3")->text().find("2 calls"), std::string::npos)
        << "the tightest limit: " << text;
    bool warned = false;
    for (const auto& span : cell_line(screen, "c3")->spans)
      warned =
          warned || (span.text.find("2 calls") != std::string::npos && span.style == Style::warn);
    EXPECT_TRUE(warned) << text;
    if (width == 80) {
      EXPECT_EQ(text.find("ELAPSED"), std::string::npos) << "dropped first: " << text;
      EXPECT_EQ(text.find("TASK"), std::string::npos) << text;
    } else {
      EXPECT_NE(text.find("TASK"), std::string::npos) << text;
      EXPECT_NE(text.find("ELAPSED"), std::string::npos) << text;
    }
  }
  // Without limits to count down there is no LEFT column, and at 80
  // columns its room goes to the ids (a code loop under a phase is 23 wide).
  DaemonState plain = plan_state();
  const std::string text = screen_text(compose(plain, ui, {80, 24}, 3000));
  EXPECT_EQ(text.find("LEFT"), std::string::npos) << text;
  EXPECT_NE(text.find("COST"), std::string::npos) << text;
  EXPECT_NE(text.find("ID                       TYPE"), std::string::npos) << text;
}

TEST(Views, TheHeaderShowsTheWorkersAndWhenNatsIsAway) {
  DaemonState state = plan_state();
  state.apply_metrics(
      {{"lanes", {{{"lane", "heavy"}, {"state", "ready"}, {"slots", 1}, {"in_flight", 0}}}},
       {"cluster",
        {{"configured", true},
         {"state", "connected"},
         {"in_flight", 2},
         {"queued", 1},
         {"workers",
          {{{"id", "b"}, {"labels", json::array()}},
           {{"id", "gpu-box"}, {"labels", {"gpu", "arch=x86"}}}}}}}},
      0);
  UiState ui;
  std::string text = screen_text(compose(state, ui, {160, 40}, 3000));
  EXPECT_NE(text.find("workers 2 b gpu-box[gpu,arch=x86] 2 running +1 queued"), std::string::npos)
      << text;
  state.apply_metrics({{"cluster",
                        {{"configured", true},
                         {"state", "unreachable"},
                         {"last_error", "no servers available"},
                         {"workers", json::array()}}}},
                      0);
  text = screen_text(compose(state, ui, {160, 40}, 3000));
  EXPECT_NE(text.find("workers NATS unreachable (no servers available), running here"),
            std::string::npos)
      << text;
  // Without [cluster], nothing is said of workers.
  state.apply_metrics({{"cluster", {{"configured", false}}}}, 0);
  text = screen_text(compose(state, ui, {160, 40}, 3000));
  EXPECT_EQ(text.find("workers"), std::string::npos) << text;
}

TEST(Views, ReconnectingIsShownInTheHeader) {
  DaemonState state = plan_state();
  state.set_link(LinkState::reconnecting, "no socket");
  UiState ui;
  const std::string text = screen_text(compose(state, ui, {80, 24}, 3000));
  EXPECT_NE(text.find("reconnecting"), std::string::npos) << text;
  EXPECT_NE(text.find("c2"), std::string::npos) << "the last known loops stay on screen";
}

}  // namespace
}  // namespace loopr::tui
