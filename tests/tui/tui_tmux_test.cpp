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

// A predicate: the screen holds every one of `texts`. A screen is drawn row
// by row and a capture may fall in between, so a test waits for the whole of
// what it then asserts, never for one string of it.
std::function<bool(const std::string&)> shows_all(std::vector<std::string> texts) {
  return [texts = std::move(texts)](const std::string& screen) {
    for (const std::string& text : texts)
      if (screen.find(text) == std::string::npos) return false;
    return true;
  };
}

// A predicate: every one of `parts` holds.
std::function<bool(const std::string&)> all_of(
    std::vector<std::function<bool(const std::string&)>> parts) {
  return [parts = std::move(parts)](const std::string& screen) {
    for (const auto& part : parts)
      if (!part(screen)) return false;
    return true;
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
  // Its row: completed, its type, its iteration/max.
  expect_screen(all_of({row_shows(id, "completed"), row_shows(id, "code"), row_shows(id, "/")}),
                id + " completed");

  tmux_->send_keys({"Enter"});
  // The text, the calls, the validation, and the read's output as the model
  // read it (the file's one line, numbered).
  expect_screen(shows_all({"Reading the answer file first.", "read_file {\"path\":\"answer.txt\"}",
                           "edit_file", "validation passed", "1|41", id + " code completed"}),
                "the loop's detail");

  // D: the branch's diff against its parent, read from looprd.
  tmux_->send_keys({"D"});
  expect_screen(all_of({[](const std::string& screen) { return !line_with(screen, "+42").empty(); },
                        shows_all({"-41", "answer.txt | 2 +-", "diff loop/" + id + " against"})}),
                "the branch's diff");
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
  // Its task (cut to the column's width at 120 columns) and its budget left.
  expect_screen(
      all_of({shows_all({"code loop c1 started", "LEFT"}), row_shows("c1", "make answer.txt")}),
      "c1 started, with its task and its budget left", 20s);
  // What it spent (3 scripted turns, $0.0108) is gone from its $1.00.
  expect_screen(all_of({row_shows("c1", "completed"), row_shows("c1", "$0.98")}),
                "c1 completed, $0.98 left");
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
  expect_screen(all_of({row_shows("call", "run_command"),
                        shows_all({"echo approved-from-the-tui", "1 call, 0 plans"})}),
                "the waiting call", 4s);
  tmux_->send_keys({"a"});
  call.join();
  EXPECT_EQ(result.value("ok", false), true) << result.dump();
  EXPECT_NE(result.dump().find("approved-from-the-tui"), std::string::npos) << result.dump();
  expect_text("nothing waits for you");
  tmux_->send_keys({"3"});
  expect_screen(row_shows("run_command", "success"), "the call in the tool calls pane");
}

// The Approvals pane says which approval rule made a call wait (issue 27).
TEST_F(TuiTest, AWaitingCallShowsTheApprovalRuleThatMadeItAsk) {
  start_daemon(fixing_session(),
               "[[approval.rules]]\ncommand = [\"echo\", \"ship\"]\ndecision = \"ask\"\n"
               "reason = \"shipping needs a person\"\n");
  open_tui();
  tmux_->send_keys({"2"});
  expect_text("nothing waits for you");
  json result;
  std::thread call([&] { result = daemon_->tool("run_command", {{"command", "echo ship it"}}); });
  expect_screen(all_of({row_shows("call", "run_command"),
                        shows_all({"waits by the rule at", "(ask [\"echo\",\"ship\"])",
                                   "shipping needs a person"})}),
                "the waiting call and its rule", 4s);
  tmux_->send_keys({"a"});
  call.join();
  EXPECT_EQ(result.value("ok", false), true) << result.dump();
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
  expect_screen(shows_all({"calc.sh: a sub operation, tested and documented", "0 calls, 1 plan"}),
                "the plan waiting for approval");
  tmux_->send_keys({"a"});
  expect_text("done: approve plan p1");
  tmux_->send_keys({"1"});
  expect_screen(all_of({row_shows("p1-s2", "spec"),
                        [](const std::string& screen) {
                          return !line_with(screen, "p1-s1").empty() &&
                                 !line_with(screen, "p1-s1-ph1").empty();
                        }}),
                "the plan's specs and phases", 60s);
  expect_screen(all_of({row_shows("p1", "completed"), row_shows("p1-s1", "completed"),
                        row_shows("p1-s2", "completed"), row_shows("p1-s1-ph1-c1", "completed"),
                        row_shows("p1-s2-ph3-c1", "completed")}),
                "p1 and its tree completed", 180s);
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
  expect_screen(
      [&](const std::string& s) {
        return s.find("looprd") != std::string::npos && s.find("1 Loops 1") != std::string::npos &&
               line_with(s, id).find("completed") != std::string::npos &&
               s.find("? help") != std::string::npos && s.find("STATUS") != std::string::npos &&
               s.find("lanes") != std::string::npos;
      },
      "the loops pane at 80x24");

  tmux_->send_keys({"Enter"});
  expect_screen(
      [&](const std::string& s) {
        return s.find(id + " code completed") != std::string::npos &&
               s.find("validation passed") != std::string::npos;
      },
      "the detail pane at 80x24");
  tmux_->send_keys({"Escape", "2"});
  expect_text("nothing waits for you");
  tmux_->send_keys({"3"});
  expect_screen(all_of({row_shows("read_file", "success"), shows_all({"DURATION"})}),
                "the tool calls pane at 80x24");
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
  // The last known loops stay on screen.
  expect_screen(all_of({shows_all({"reconnecting"}), row_shows(id, "completed")}),
                "reconnecting, with " + id + " still shown", 10s);
  daemon_->start();
  expect_screen(
      [&](const std::string& screen) {
        return screen.find("reconnecting") == std::string::npos &&
               screen.find("connected") != std::string::npos &&
               screen.find("1 Loops 1") != std::string::npos &&
               line_with(screen, id).find("completed") != std::string::npos;
      },
      "connected again with " + id, 20s);
  // Subscribed again: a loop made now appears without a key pressed.
  const std::string second = create_loop(*daemon_, repo_.path).value("id", "");
  ASSERT_FALSE(second.empty());
  expect_screen([&](const std::string& screen) { return !line_with(screen, second).empty(); },
                second + " appears after the reconnect", 20s);
}

}  // namespace
}  // namespace loopr::test
