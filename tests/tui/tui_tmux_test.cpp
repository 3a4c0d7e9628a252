// loopr-tui end to end in a real terminal: tmux (tests/tui/tmux_session.hpp)
// runs loopr-tui against the real looprd (DaemonHarness) with the scripted
// provider. Each test does what a person would and checks what they would
// see on the screen: a loop appears and finishes, its detail shows the
// model's text and a tool call's output and (D) its branch's diff, a code
// loop started from the TUI (N) appears selected and runs, a call is approved from the TUI
// and runs, a plan made and approved from the TUI grows its tree and completes, every pane stays
// readable at 80x24, and a killed and restarted looprd shows "reconnecting" and then the same
// loops.
#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>
#include <memory>
#include <sstream>
#include <thread>

#include "tests/daemon/loop_fixture.hpp"
#include "tests/tui/tmux_session.hpp"

namespace loopr::test {
namespace {

using nlohmann::json;
using namespace std::chrono_literals;

std::string bin_dir() {
  const char* dir = std::getenv("LOOPR_BIN_DIR");
  return dir != nullptr ? dir : "";
}

// The screen's line holding `word`, or "" when there is none.
std::string line_with(const std::string& screen, const std::string& word) {
  std::istringstream lines(screen);
  std::string line;
  while (std::getline(lines, line)) {
    const auto at = line.find(word);
    if (at == std::string::npos) continue;
    const auto end = at + word.size();
    if (end == line.size() || line[end] == ' ') return line;
  }
  return {};
}

// A predicate: some line holds `word` (as a whole cell) and `also`.
std::function<bool(const std::string&)> row_shows(const std::string& word,
                                                  const std::string& also) {
  return [=](const std::string& screen) {
    return line_with(screen, word).find(also) != std::string::npos;
  };
}

// A loop fixing the sample repository: text and a read, an edit, done.
std::vector<json> fixing_session() {
  return {turn({tool_call("r1", "read_file", {{"path", "answer.txt"}})},
               {{"text", "Reading the answer file first."}, {"usage", usage(1000, 20)}}),
          turn({tool_call("e1", "edit_file",
                          {{"path", "answer.txt"}, {"old_string", "41"}, {"new_string", "42"}})},
               {{"usage", usage(1100, 30)}}),
          turn({tool_call("d1", "complete_task", {{"summary", "answer.txt holds 42"}})},
               {{"usage", usage(1200, 10)}})};
}

class TuiTest : public ::testing::Test {
 protected:
  void start_daemon(const std::vector<json>& lines, const std::string& extra_toml = {}) {
    const std::string path = scripts_.path("session.jsonl");
    write_session(path, lines);
    DaemonOptions options;
    options.extra_toml = scripted_toml({{"scripted", path, 0}}) + extra_toml;
    daemon_ = std::make_unique<DaemonHarness>(options);
    repo_ = make_sample_repo(daemon_->worktree());
    daemon_->start();
  }

  void open_tui(int width = 120, int height = 40) {
    tmux_ = std::make_unique<TmuxSession>(
        std::vector<std::string>{bin_dir() + "/loopr-tui", "--socket", daemon_->socket_path(),
                                 "--repo", repo_.path},
        std::vector<std::string>{"TERM=screen-256color"}, width, height);
    ASSERT_TRUE(tmux_->started());
    const auto connected = tmux_->wait_for_text("connected", 10s);
    ASSERT_TRUE(connected.ok) << connected.screen << "\nlooprd's log:\n" << daemon_->log();
  }

  // Waits for `reached`; fails the test with the screen when it is not.
  std::string expect_screen(const std::function<bool(const std::string&)>& reached,
                            const std::string& what, std::chrono::milliseconds wait = 30s) {
    const auto result = tmux_->wait_for(reached, wait);
    EXPECT_TRUE(result.ok) << "never saw " << what << "; the screen:\n" << result.screen;
    return result.screen;
  }
  std::string expect_text(const std::string& text, std::chrono::milliseconds wait = 30s) {
    return expect_screen(
        [&](const std::string& screen) { return screen.find(text) != std::string::npos; },
        "\"" + text + "\"", wait);
  }

  TempTree scripts_;
  std::unique_ptr<DaemonHarness> daemon_;
  SampleRepo repo_;
  std::unique_ptr<TmuxSession> tmux_;
};

TEST_F(TuiTest, ALoopAppearsFinishesAndItsDetailShowsTheTextAndAToolCallsOutput) {
  start_daemon(fixing_session());
  open_tui();
  expect_text("no loops yet");
  const json loop = create_loop(*daemon_, repo_.path);
  const std::string id = loop.value("id", "");
  ASSERT_FALSE(id.empty());
  expect_screen(row_shows(id, "running"), id + " running", 20s);
  const std::string done = expect_screen(row_shows(id, "completed"), id + " completed");
  EXPECT_NE(line_with(done, id).find("code"), std::string::npos) << done;
  EXPECT_NE(line_with(done, id).find("/"), std::string::npos) << "iteration/max: " << done;

  tmux_->send_keys({"Enter"});
  const std::string detail = expect_text("Reading the answer file first.");
  EXPECT_NE(detail.find("read_file {\"path\":\"answer.txt\"}"), std::string::npos) << detail;
  EXPECT_NE(detail.find("edit_file"), std::string::npos) << detail;
  EXPECT_NE(detail.find("validation passed"), std::string::npos) << detail;
  // The read's output, as the model read it: the file's one line, numbered.
  EXPECT_NE(detail.find("1|41"), std::string::npos) << detail;
  EXPECT_NE(detail.find(id + " code completed"), std::string::npos) << detail;

  // D: the branch's diff against its parent, read from looprd.
  tmux_->send_keys({"D"});
  const std::string diff = expect_screen(
      [](const std::string& screen) { return !line_with(screen, "+42").empty(); }, "+42");
  EXPECT_NE(diff.find("-41"), std::string::npos) << diff;
  EXPECT_NE(diff.find("answer.txt | 2 +-"), std::string::npos) << diff;
  EXPECT_NE(diff.find("diff loop/" + id + " against"), std::string::npos) << diff;
  tmux_->send_keys({"D"});
  expect_text("Reading the answer file first.");

  tmux_->send_keys({"Escape"});
  expect_text("ELAPSED");
  tmux_->send_keys({"q"});
  expect_text("[loopr-tui exited with status 0]", 10s);
}

TEST_F(TuiTest, ACodeLoopStartedFromTheTuiAppearsSelectedAndRuns) {
  start_daemon(fixing_session(), "[budgets.loop]\nusd = 1.0\n");
  open_tui();
  expect_text("no loops yet");
  tmux_->send_keys({"N"});
  expect_text("new code loop in");
  tmux_->type("make answer.txt hold 42");
  tmux_->send_keys({"Enter"});
  expect_text("validation command");
  tmux_->type("sh test.sh");
  tmux_->send_keys({"Enter"});
  const std::string started = expect_text("code loop c1 started", 20s);
  // Its task (cut to the column's width at 120 columns) and its budget left.
  EXPECT_NE(line_with(started, "c1").find("make answer.txt"), std::string::npos) << started;
  EXPECT_NE(started.find("LEFT"), std::string::npos) << started;
  const std::string done = expect_screen(row_shows("c1", "completed"), "c1 completed");
  // What it spent (3 scripted turns, $0.0108) is gone from its $1.00.
  EXPECT_NE(line_with(done, "c1").find("$0.98"), std::string::npos) << done;
  // Enter opens the selected loop: the new one.
  tmux_->send_keys({"Enter"});
  expect_text("Reading the answer file first.");
  tmux_->send_keys({"q", "q"});
  expect_text("[loopr-tui exited with status 0]", 10s);
}

TEST_F(TuiTest, ACallIsApprovedFromTheTuiAndRuns) {
  start_daemon(fixing_session(), "[approval.lanes]\nnet = \"ask\"\n");
  open_tui();
  tmux_->send_keys({"2"});
  expect_text("nothing waits for you");
  json result;
  std::thread call([&] {
    result = daemon_->tool("run_command", {{"command", "echo approved-from-the-tui"}});
  });
  const std::string waiting =
      expect_screen(row_shows("call", "run_command"), "the waiting call", 4s);
  EXPECT_NE(waiting.find("echo approved-from-the-tui"), std::string::npos) << waiting;
  EXPECT_NE(waiting.find("1 call, 0 plans"), std::string::npos) << waiting;
  tmux_->send_keys({"a"});
  call.join();
  EXPECT_EQ(result.value("ok", false), true) << result.dump();
  EXPECT_NE(result.dump().find("approved-from-the-tui"), std::string::npos) << result.dump();
  expect_text("nothing waits for you");
  tmux_->send_keys({"3"});
  expect_screen(row_shows("run_command", "success"), "the call in the tool calls pane");
}

// examples/demo-plan/session.jsonl (the README's plan, p2 in the demo) as
// the plan p1 of a fresh daemon.
std::vector<json> demo_plan_session() {
  std::ifstream in(std::string(LOOPR_SOURCE_DIR) + "/examples/demo-plan/session.jsonl");
  std::vector<json> lines;
  std::string text;
  while (std::getline(in, text)) {
    if (text.empty()) continue;
    json line = json::parse(text);
    std::string loop = line.value("loop", "");
    if (loop.rfind("p2", 0) == 0) line["loop"] = "p1" + loop.substr(2);
    lines.push_back(line);
  }
  return lines;
}

TEST_F(TuiTest, APlanMadeAndApprovedFromTheTuiGrowsItsTreeAndCompletes) {
  const auto lines = demo_plan_session();
  ASSERT_GT(lines.size(), 10u) << "examples/demo-plan/session.jsonl not found";
  start_daemon(lines);
  // The demo plan works on examples/demo-loop/repo with add fixed.
  namespace fs = std::filesystem;
  for (const char* file : {"calc.sh", "test.sh", "README.md"})
    fs::copy_file(fs::path(LOOPR_SOURCE_DIR) / "examples/demo-loop/repo" / file,
                  fs::path(repo_.path) / file, fs::copy_options::overwrite_existing);
  {
    std::ifstream in(repo_.path + "/calc.sh");
    std::string calc((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
    const std::string wrong = "add) echo $((a - b))";
    const auto at = calc.find(wrong);
    ASSERT_NE(at, std::string::npos);
    calc.replace(at, wrong.size(), "add) echo $((a + b))");
    std::ofstream(repo_.path + "/calc.sh") << calc;
  }
  git(repo_.path, {"add", "-A"});
  ASSERT_EQ(git(repo_.path, {"-c", "user.name=t", "-c", "user.email=t@localhost", "commit", "-q",
                             "-m", "calc: add and mul"})
                .exit_code,
            0);

  open_tui();
  tmux_->send_keys({"n"});
  expect_text("new plan in " + repo_.path);
  tmux_->type("Add a sub operation to calc.sh with its tests, then document every operation.");
  tmux_->send_keys({"Enter"});
  expect_screen(row_shows("p1", "awaiting_approval"), "p1 awaiting approval", 60s);

  tmux_->send_keys({"2"});
  const std::string plan = expect_text("calc.sh: a sub operation, tested and documented");
  EXPECT_NE(plan.find("0 calls, 1 plan"), std::string::npos) << plan;
  tmux_->send_keys({"a"});
  expect_text("done: approve plan p1");
  tmux_->send_keys({"1"});
  const std::string tree = expect_screen(
      [](const std::string& screen) {
        return !line_with(screen, "p1-s1").empty() && !line_with(screen, "p1-s2").empty() &&
               !line_with(screen, "p1-s1-ph1").empty();
      },
      "the plan's specs and phases", 60s);
  EXPECT_NE(line_with(tree, "p1-s2").find("spec"), std::string::npos) << tree;
  const std::string done = expect_screen(row_shows("p1", "completed"), "p1 completed", 180s);
  for (const char* id : {"p1-s1", "p1-s2", "p1-s1-ph1-c1", "p1-s2-ph3-c1"})
    EXPECT_NE(line_with(done, id).find("completed"), std::string::npos) << id << "\n" << done;
}

TEST_F(TuiTest, EveryPaneStaysReadableAt80x24) {
  start_daemon(fixing_session());
  open_tui();
  const json loop = create_loop(*daemon_, repo_.path);
  const std::string id = loop.value("id", "");
  expect_screen(row_shows(id, "completed"), id + " completed");
  tmux_->resize(80, 24);
  // Laid out again for 80 columns: TASK is the first column to go.
  const auto small = tmux_->wait_for(
      [](const std::string& screen) {
        return screen.find("STATUS") != std::string::npos &&
               screen.find("TASK") == std::string::npos;
      },
      10s);
  ASSERT_TRUE(small.ok) << small.screen;
  std::string screen = expect_screen(
      [&](const std::string& s) {
        return s.find("looprd") != std::string::npos && s.find("1 Loops 1") != std::string::npos &&
               line_with(s, id).find("completed") != std::string::npos &&
               s.find("? help") != std::string::npos;
      },
      "the loops pane at 80x24");
  EXPECT_NE(screen.find("STATUS"), std::string::npos) << screen;
  EXPECT_NE(screen.find("lanes"), std::string::npos) << screen;

  tmux_->send_keys({"Enter"});
  screen = expect_screen(
      [&](const std::string& s) {
        return s.find(id + " code completed") != std::string::npos &&
               s.find("validation passed") != std::string::npos;
      },
      "the detail pane at 80x24");
  tmux_->send_keys({"Escape", "2"});
  expect_text("nothing waits for you");
  tmux_->send_keys({"3"});
  screen = expect_screen(row_shows("read_file", "success"), "the tool calls pane at 80x24");
  EXPECT_NE(screen.find("DURATION"), std::string::npos) << screen;
  // Each help page is waited for whole (its title and a row near its end):
  // the overlay is drawn row by row, and a capture may fall in between.
  tmux_->send_keys({"?"});
  expect_screen(
      [](const std::string& s) {
        return s.find("keys (any other key closes this help)") != std::string::npos &&
               s.find("next pane") != std::string::npos;
      },
      "the help's first page at 80x24");
  tmux_->send_keys({"NPage"});  // the rest of the help
  expect_screen(
      [](const std::string& s) {
        return s.find("approve the call or the plan") != std::string::npos &&
               s.find("follow new lines") != std::string::npos;
      },
      "the rest of the help at 80x24");
}

TEST_F(TuiTest, AKilledAndRestartedDaemonShowsReconnectingThenTheSameLoops) {
  start_daemon(fixing_session());
  open_tui();
  const json loop = create_loop(*daemon_, repo_.path);
  const std::string id = loop.value("id", "");
  expect_screen(row_shows(id, "completed"), id + " completed");
  daemon_->stop(9);
  const std::string lost = expect_text("reconnecting", 10s);
  EXPECT_NE(line_with(lost, id).find("completed"), std::string::npos)
      << "the last known loops stay on screen\n"
      << lost;
  daemon_->start();
  const std::string back = expect_screen(
      [&](const std::string& screen) {
        return screen.find("reconnecting") == std::string::npos &&
               screen.find("connected") != std::string::npos &&
               line_with(screen, id).find("completed") != std::string::npos;
      },
      "connected again with " + id, 20s);
  EXPECT_NE(back.find("1 Loops 1"), std::string::npos) << back;
  // Subscribed again: a loop made now appears without a key pressed.
  const std::string second = create_loop(*daemon_, repo_.path).value("id", "");
  ASSERT_FALSE(second.empty());
  expect_screen([&](const std::string& screen) { return !line_with(screen, second).empty(); },
                second + " appears after the reconnect", 20s);
}

}  // namespace
}  // namespace loopr::test
