// Key handling without a terminal: each binding changes UiState or yields
// the request looprd must get.
#include "tui/keys.hpp"

#include <gtest/gtest.h>

#include "tui/views.hpp"

namespace loopr::tui {
namespace {

using nlohmann::json;

struct KeysTest : ::testing::Test {
  void SetUp() override {
    Snapshot snapshot;
    const auto loop = [](std::string id, std::string type, std::string status, json parent,
                         json children) {
      return json{{"id", id},
                  {"type", type},
                  {"status", status},
                  {"parent_id", parent},
                  {"children", children},
                  {"created_at_ms", 1},
                  {"updated_at_ms", 1}};
    };
    snapshot.loops = json::array({loop("p1", "plan", "awaiting_approval", nullptr, {"p1-s1"}),
                                  loop("p1-s1", "spec", "running", "p1", json::array()),
                                  loop("c1", "code", "completed", nullptr, json::array())});
    snapshot.approvals = json::array({{{"id", "a-4"}, {"tool", "run_command"}}});
    state.apply_snapshot(snapshot, 0);
    ui.repo = "/src/app";
  }
  std::vector<Command> press(Key key) {
    return handle_key(ui, state, visible_rows(state, ui, {80, 24}, 0), key);
  }
  std::vector<Command> type(const std::string& text) {
    std::vector<Command> out;
    for (const char c : text)
      for (auto& command : press(Key::of(static_cast<char32_t>(c))))
        out.push_back(command);
    return out;
  }
  DaemonState state;
  UiState ui;
};

TEST_F(KeysTest, ArrowsAndVimKeysMoveTheCursor) {
  ui.loop_cursor = "p1";
  press(Key::of('j'));
  EXPECT_EQ(ui.loop_cursor, "p1-s1");
  press(Key::of(KeyCode::down));
  EXPECT_EQ(ui.loop_cursor, "c1");
  press(Key::of(KeyCode::down));
  EXPECT_EQ(ui.loop_cursor, "c1") << "the last row stays";
  press(Key::of('g'));
  EXPECT_EQ(ui.loop_cursor, "p1");
  press(Key::of('G'));
  EXPECT_EQ(ui.loop_cursor, "c1");
  press(Key::of(KeyCode::up));
  EXPECT_EQ(ui.loop_cursor, "p1-s1");
}

TEST_F(KeysTest, TabCyclesPanesEnterDrillsInEscGoesBack) {
  press(Key::of(KeyCode::tab));
  EXPECT_EQ(ui.pane, Pane::approvals);
  press(Key::of(KeyCode::tab));
  EXPECT_EQ(ui.pane, Pane::tools);
  press(Key::of(KeyCode::back_tab));
  EXPECT_EQ(ui.pane, Pane::approvals);
  press(Key::of('1'));
  ui.loop_cursor = "p1-s1";
  press(Key::of(KeyCode::enter));
  EXPECT_EQ(ui.pane, Pane::detail);
  EXPECT_EQ(ui.detail_loop, "p1-s1");
  press(Key::of(KeyCode::escape));
  EXPECT_EQ(ui.pane, Pane::loops);
  press(Key::of('q'));
  EXPECT_TRUE(ui.quit);
}

TEST_F(KeysTest, ApprovingACallAndDenyingWithAReason) {
  press(Key::of('2'));
  ui.approval_cursor = "call:a-4";
  auto commands = press(Key::of('a'));
  ASSERT_EQ(commands.size(), 1u);
  EXPECT_EQ(commands[0].method, "approval.approve");
  EXPECT_EQ(commands[0].params, (json{{"id", "a-4"}}));
  EXPECT_TRUE(press(Key::of('d')).empty());
  EXPECT_EQ(ui.prompt, Prompt::deny_reason);
  type("not now");
  press(Key::of(KeyCode::backspace));
  commands = press(Key::of(KeyCode::enter));
  ASSERT_EQ(commands.size(), 1u);
  EXPECT_EQ(commands[0].method, "approval.deny");
  EXPECT_EQ(commands[0].params, (json{{"id", "a-4"}, {"reason", "not no"}}));
  EXPECT_EQ(ui.prompt, Prompt::none);
}

TEST_F(KeysTest, AnApproveMeantForACallResolvedElsewhereNeverLandsOnTheNextOne) {
  state.apply_event(proto::Event{"approval.requested", {{"id", "a-5"}, {"tool", "build"}}}, 0);
  ui.pane = Pane::approvals;
  ui.approval_cursor = "call:a-4";
  // Someone else approves a-4; the next frame selects what is left.
  state.apply_event(proto::Event{"approval.resolved", {{"id", "a-4"}, {"approved", true}}}, 0);
  compose(state, ui, {80, 24}, 0);
  EXPECT_NE(ui.approval_cursor, "call:a-4");
  EXPECT_TRUE(press(Key::of('a')).empty()) << "the keypress was meant for a-4";
  EXPECT_NE(ui.message.find("resolved elsewhere"), std::string::npos) << ui.message;
  const auto again = press(Key::of('a'));  // deliberate, with a-5 on screen
  ASSERT_EQ(again.size(), 1u);
  EXPECT_EQ(again[0].method, "approval.approve");
  EXPECT_EQ(again[0].params, (json{{"id", "a-5"}}));
}

TEST_F(KeysTest, AnApprovalInTheSnapshotAndInAnEventIsListedOnce) {
  // Subscribed before the snapshot: the same request can come both ways.
  state.apply_event(proto::Event{"approval.requested", {{"id", "a-4"}, {"tool", "run_command"}}},
                    0);
  EXPECT_EQ(state.approvals().size(), 1u);
  state.apply_event(proto::Event{"approval.resolved", {{"id", "a-4"}, {"approved", true}}}, 0);
  EXPECT_TRUE(state.approvals().empty()) << "no ghost left waiting";
}

TEST_F(KeysTest, APlanIsApprovedRejectedOrIteratedWithFeedback) {
  press(Key::of('2'));
  ui.approval_cursor = "plan:p1";
  auto commands = press(Key::of('a'));
  ASSERT_EQ(commands.size(), 1u);
  EXPECT_EQ(commands[0].method, "plan.approve");
  EXPECT_EQ(commands[0].params, (json{{"id", "p1"}}));
  press(Key::of('i'));
  EXPECT_EQ(ui.prompt, Prompt::iterate_feedback);
  EXPECT_TRUE(press(Key::of(KeyCode::enter)).empty()) << "feedback is required";
  press(Key::of('i'));
  type("split spec two");
  commands = press(Key::of(KeyCode::enter));
  ASSERT_EQ(commands.size(), 1u);
  EXPECT_EQ(commands[0].method, "plan.iterate");
  EXPECT_EQ(commands[0].params, (json{{"id", "p1"}, {"feedback", "split spec two"}}));
  press(Key::of('x'));
  commands = press(Key::of(KeyCode::enter));
  ASSERT_EQ(commands.size(), 1u);
  EXPECT_EQ(commands[0].method, "plan.reject");
  EXPECT_EQ(commands[0].params, (json{{"id", "p1"}}));
}

TEST_F(KeysTest, ApprovingAPlanFromTheLoopsTree) {
  ui.loop_cursor = "p1";
  auto commands = press(Key::of('a'));
  ASSERT_EQ(commands.size(), 1u);
  EXPECT_EQ(commands[0].method, "plan.approve");
  ui.loop_cursor = "c1";
  EXPECT_TRUE(press(Key::of('a')).empty());
  EXPECT_TRUE(ui.message_is_error);
}

TEST_F(KeysTest, CancelAsksFirstPauseAndResumeDoNot) {
  ui.loop_cursor = "p1-s1";
  EXPECT_TRUE(press(Key::of('c')).empty());
  ASSERT_TRUE(ui.confirm.has_value());
  EXPECT_TRUE(press(Key::of('n')).empty()) << "anything but y keeps the loop";
  EXPECT_FALSE(ui.confirm.has_value());
  press(Key::of('c'));
  auto commands = press(Key::of('y'));
  ASSERT_EQ(commands.size(), 1u);
  EXPECT_EQ(commands[0].method, "loop.cancel");
  EXPECT_EQ(commands[0].params, (json{{"id", "p1-s1"}}));
  commands = press(Key::of('p'));
  ASSERT_EQ(commands.size(), 1u);
  EXPECT_EQ(commands[0].method, "loop.pause");
  commands = press(Key::of('r'));
  ASSERT_EQ(commands.size(), 1u);
  EXPECT_EQ(commands[0].method, "loop.resume");
  ui.loop_cursor = "c1";
  EXPECT_TRUE(press(Key::of('p')).empty()) << "a finished loop cannot be paused";
}

TEST_F(KeysTest, NewPlanFromThePromptLine) {
  press(Key::of('n'));
  EXPECT_EQ(ui.prompt, Prompt::new_plan);
  type("add a flag");
  press(Key::of(U'\u00e9'));
  const auto commands = press(Key::of(KeyCode::enter));
  ASSERT_EQ(commands.size(), 1u);
  EXPECT_EQ(commands[0].method, "loop.create_plan");
  EXPECT_EQ(commands[0].params,
            (json{{"description", "add a flag\xc3\xa9"}, {"repo", "/src/app"}}));
  press(Key::of('n'));
  type("abandoned");
  EXPECT_TRUE(press(Key::of(KeyCode::escape)).empty());
  EXPECT_EQ(ui.prompt, Prompt::none);
}

TEST_F(KeysTest, SearchFiltersTheTreeAndEscClearsIt) {
  press(Key::of('/'));
  type("c1");
  press(Key::of(KeyCode::enter));
  EXPECT_EQ(ui.loop_search, "c1");
  EXPECT_EQ(loop_rows(state, ui).size(), 1u);
  press(Key::of(KeyCode::escape));
  EXPECT_TRUE(ui.loop_search.empty());
}

TEST_F(KeysTest, CollapseFilterSortAndHelp) {
  ui.loop_cursor = "p1";
  press(Key::of('h'));
  EXPECT_EQ(ui.collapsed.count("p1"), 1u);
  press(Key::of('l'));
  EXPECT_EQ(ui.collapsed.count("p1"), 0u);
  press(Key::of(' '));
  EXPECT_EQ(ui.collapsed.count("p1"), 1u);
  press(Key::of('f'));
  EXPECT_EQ(ui.filter, StatusFilter::active);
  press(Key::of('s'));
  EXPECT_EQ(ui.sort, SortOrder::updated);
  press(Key::of('?'));
  EXPECT_TRUE(ui.help);
  press(Key::of('j'));
  EXPECT_TRUE(ui.help) << "the help scrolls";
  press(Key::of('z'));
  EXPECT_FALSE(ui.help);
  press(Key::of(KeyCode::ctrl_c));
  EXPECT_TRUE(ui.quit);
}

TEST_F(KeysTest, EveryBindingIsInTheHelp) {
  std::string help;
  for (const auto& line : help_lines(120))
    help += line.text() + "\n";
  for (const auto& binding : key_bindings())
    EXPECT_NE(help.find(binding.what), std::string::npos) << binding.what;
}

}  // namespace
}  // namespace loopr::tui
