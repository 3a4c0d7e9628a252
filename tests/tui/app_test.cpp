// The App between the link and the screen, without either: the requests a
// key and the panes make, and what the replies do to the screen.
#include "tui/app.hpp"

#include <gtest/gtest.h>

#include <string>

#include "tests/tui/screen_text.hpp"
#include "tui/text_width.hpp"
#include "tui/views.hpp"

namespace loopr::tui {
namespace {

using nlohmann::json;
using test::screen_text;

json code_loop(const std::string& id, const std::string& status) {
  return {{"id", id},           {"type", "code"},       {"status", status},
          {"task", "fix it"},   {"parent_id", nullptr}, {"children", json::array()},
          {"created_at_ms", 1}, {"updated_at_ms", 1}};
}

LinkMessage reply(Command command, bool ok, json result, std::string error = {}) {
  LinkMessage message;
  message.kind = LinkMessage::Kind::reply;
  message.command = std::move(command);
  message.ok = ok;
  message.result = std::move(result);
  message.detail = std::move(error);
  return message;
}

LinkMessage event_message(std::string name, json data) {
  LinkMessage message;
  message.kind = LinkMessage::Kind::event;
  message.event = proto::Event{std::move(name), std::move(data)};
  return message;
}

const Line* line_with(const Lines& lines, const std::string& text) {
  for (const auto& line : lines)
    if (line.text().find(text) != std::string::npos) return &line;
  return nullptr;
}

struct AppTest : ::testing::Test {
  void SetUp() override {
    LinkMessage snapshot;
    snapshot.kind = LinkMessage::Kind::snapshot;
    snapshot.snapshot.loops = json::array({code_loop("c1", "completed")});
    app.on_message(snapshot, 0);
    app.ui().repo = "/src/app";
  }
  std::vector<Command> press(Key key) { return app.on_key(key, {80, 24}, 0); }
  const Command* find(const std::vector<Command>& commands, const std::string& method) {
    for (const auto& command : commands)
      if (command.method == method) {
        last = command;
        return &last;
      }
    return nullptr;
  }
  App app;
  Command last;
};

const json kDiff = {
    {"loop_id", "c1"},
    {"from", "0123456789abcdef"},
    {"from_branch", "main"},
    {"to", "loop/c1"},
    {"stat", " answer.txt | 2 +-\n 1 file changed, 1 insertion(+), 1 deletion(-)\n"},
    {"diff",
     "diff --git a/answer.txt b/answer.txt\n--- a/answer.txt\n+++ b/answer.txt\n"
     "@@ -1 +1 @@\n-41\n+42\n"}};

TEST_F(AppTest, DShowsTheBranchDiffFetchedOnceAndAgainAfterACommit) {
  app.ui().loop_cursor = "c1";
  EXPECT_TRUE(press(Key::of('D')).empty()) << "keys never wait on the socket";
  EXPECT_EQ(app.ui().pane, Pane::detail);
  EXPECT_EQ(app.ui().detail_view, DetailView::diff);
  auto asked = app.follow_ups();
  ASSERT_NE(find(asked, "loop.diff"), nullptr);
  const Command diff_request = last;
  EXPECT_EQ(diff_request.params, (json{{"id", "c1"}}));
  EXPECT_NE(find(asked, "loop.transcript"), nullptr);
  EXPECT_EQ(find(app.follow_ups(), "loop.diff"), nullptr) << "asked once while in flight";
  std::string text = screen_text(compose(app.state(), app.ui(), {80, 24}, 0));
  EXPECT_NE(text.find("reading the diff"), std::string::npos) << text;

  app.on_message(reply(diff_request, true, kDiff), 0);
  EXPECT_EQ(find(app.follow_ups(), "loop.diff"), nullptr) << "answered: not asked again";
  const Lines screen = compose(app.state(), app.ui(), {80, 24}, 0);
  text = screen_text(screen);
  EXPECT_NE(text.find("diff loop/c1 against main since 0123456"), std::string::npos) << text;
  EXPECT_NE(text.find("1 file changed"), std::string::npos) << text;
  ASSERT_NE(line_with(screen, "+42"), nullptr) << text;
  EXPECT_EQ(line_with(screen, "+42")->spans.front().style, Style::added);
  ASSERT_NE(line_with(screen, "-41"), nullptr) << text;
  EXPECT_EQ(line_with(screen, "-41")->spans.front().style, Style::removed);
  EXPECT_EQ(line_with(screen, "+++ b/answer.txt")->spans.front().style, Style::bold);

  // A commit of the loop makes the diff stale: it is read again.
  app.on_message(event_message("loop.step", {{"loop_id", "c1"},
                                             {"step",
                                              {{"id", 9},
                                               {"iteration", 1},
                                               {"kind", "committed"},
                                               {"data", {{"commit", "fedcba9876"}}}}}}),
                 0);
  ASSERT_NE(find(app.follow_ups(), "loop.diff"), nullptr);
  app.on_message(reply(last, false, json(), "invalid_state: no branch"), 0);
  text = screen_text(compose(app.state(), app.ui(), {80, 24}, 0));
  EXPECT_NE(text.find("no diff: invalid_state: no branch"), std::string::npos) << text;

  // D again: the journal, following its end.
  press(Key::of('D'));
  EXPECT_EQ(app.ui().detail_view, DetailView::journal);
  EXPECT_TRUE(app.ui().detail_follow);
  EXPECT_EQ(find(app.follow_ups(), "loop.diff"), nullptr);
}

TEST_F(AppTest, AFetchTheLinkRefusedIsAskedAgainNotWaitedForForever) {
  app.ui().loop_cursor = "c1";
  press(Key::of('D'));
  ASSERT_NE(find(app.follow_ups(), "loop.diff"), nullptr);
  app.refused(last);  // the link's queue was full
  EXPECT_NE(app.ui().message.find("asked again"), std::string::npos) << app.ui().message;
  EXPECT_NE(find(app.follow_ups(), "loop.diff"), nullptr) << "asked again";
}

TEST_F(AppTest, TheDiffIsCappedCutToTheWidthAndScrolls) {
  app.ui().loop_cursor = "c1";
  press(Key::of('D'));
  find(app.follow_ups(), "loop.diff");
  std::string body;
  for (int i = 0; i < 6000; ++i)
    body += "+line " + std::to_string(i) + std::string(i < 10 ? 200 : 30, 'x') + "\tend\n";
  json result = kDiff;
  result["diff"] = body;
  app.on_message(reply(last, true, result), 0);
  const Lines lines = diff_lines(*app.state().detail(), 80);
  EXPECT_LE(lines.size(), kMaxDiffLines + 1);
  EXPECT_NE(lines.back().text().find("more lines not shown"), std::string::npos);
  for (const auto& line : lines)
    EXPECT_LE(display_width(line.text()), 80u) << line.text();
  // Scrolling moves within the diff, from its top.
  std::string text = screen_text(compose(app.state(), app.ui(), {80, 24}, 0));
  EXPECT_NE(text.find("diff loop/c1"), std::string::npos) << text;
  press(Key::of(KeyCode::page_down));
  press(Key::of(KeyCode::page_down));
  text = screen_text(compose(app.state(), app.ui(), {80, 24}, 0));
  EXPECT_EQ(text.find("diff loop/c1"), std::string::npos) << text;
  EXPECT_NE(text.find("+line 30"), std::string::npos) << text;
  press(Key::of('G'));
  text = screen_text(compose(app.state(), app.ui(), {80, 24}, 0));
  EXPECT_NE(text.find("more lines not shown"), std::string::npos) << text;
}

TEST_F(AppTest, LOpensTheJournalFromItsStart) {
  app.ui().loop_cursor = "c1";
  press(Key::of('D'));
  ASSERT_EQ(app.ui().detail_view, DetailView::diff);
  press(Key::of('L'));
  EXPECT_EQ(app.ui().pane, Pane::detail);
  EXPECT_EQ(app.ui().detail_view, DetailView::journal);
  EXPECT_EQ(app.ui().detail_top, 0u);
  EXPECT_FALSE(app.ui().detail_follow) << "from the start, not the end";
  press(Key::of(KeyCode::escape));
  EXPECT_EQ(app.ui().pane, Pane::loops);
  app.ui().detail_follow = true;
  press(Key::of('L'));
  EXPECT_EQ(app.ui().pane, Pane::detail);
  EXPECT_FALSE(app.ui().detail_follow);
  const auto asked = app.follow_ups();
  EXPECT_NE(find(asked, "loop.transcript"), nullptr);
  bool listed = false;
  for (const auto& line : help_lines(80))
    listed = listed || line.text().rfind("L ", 0) == 0;
  EXPECT_TRUE(listed) << "? lists it";
}

TEST_F(AppTest, NStartsACodeLoopFromThePromptLineThatAppearsSelected) {
  app.ui().pane = Pane::tools;
  press(Key::of('N'));
  EXPECT_EQ(app.ui().prompt, Prompt::new_code);
  std::string text = screen_text(compose(app.state(), app.ui(), {80, 24}, 0));
  EXPECT_NE(text.find("new code loop in /src/app, task: "), std::string::npos) << text;
  EXPECT_TRUE(press(Key::of(KeyCode::enter)).empty()) << "an empty task is not sent";
  EXPECT_TRUE(app.ui().message_is_error);

  press(Key::of('N'));
  for (const char c : std::string("fix the answer"))
    EXPECT_TRUE(press(Key::of(static_cast<char32_t>(c))).empty());
  EXPECT_TRUE(press(Key::of(KeyCode::enter)).empty()) << "then its validation command";
  EXPECT_EQ(app.ui().prompt, Prompt::new_code_validate);
  text = screen_text(compose(app.state(), app.ui(), {80, 24}, 0));
  EXPECT_NE(text.find("validation command (Enter alone: loopr.toml's): "), std::string::npos)
      << text;
  auto sent = press(Key::of(KeyCode::enter));
  ASSERT_EQ(sent.size(), 1u);
  EXPECT_EQ(sent[0].method, "loop.create");
  EXPECT_EQ(sent[0].params,
            (json{{"type", "code"}, {"task", "fix the answer"}, {"repo", "/src/app"}}))
      << "no validate: the configured command";
  EXPECT_EQ(app.ui().prompt, Prompt::none);
  press(Key::of('N'));
  for (const char c : std::string("fix the answer\rmake test\r")) {
    const Key key = c == '\r' ? Key::of(KeyCode::enter) : Key::of(static_cast<char32_t>(c));
    sent = press(key);
  }
  ASSERT_EQ(sent.size(), 1u);
  EXPECT_EQ(sent[0].params, (json{{"type", "code"},
                                  {"task", "fix the answer"},
                                  {"repo", "/src/app"},
                                  {"validate", "make test"}}));

  // The reply: the loop is in the tree and selected, even under a filter
  // that hid running loops.
  app.ui().filter = StatusFilter::finished;
  app.ui().loop_cursor = "c1";
  json created = code_loop("c2", "running");
  created["task"] = "fix the answer";
  app.on_message(reply(sent[0], true, {{"loop", created}}), 0);
  EXPECT_EQ(app.ui().pane, Pane::loops);
  EXPECT_EQ(app.ui().loop_cursor, "c2");
  const Lines screen = compose(app.state(), app.ui(), {80, 24}, 0);
  ASSERT_NE(line_with(screen, "c2"), nullptr) << screen_text(screen);
  EXPECT_EQ(line_with(screen, "c2")->fill, Style::selected) << screen_text(screen);
  EXPECT_NE(screen_text(screen).find("code loop c2 started"), std::string::npos);

  // A refusal is said on the status line.
  app.on_message(reply(sent[0], false, json(), "invalid_arguments: repo is not a repository"), 0);
  EXPECT_TRUE(app.ui().message_is_error);
  EXPECT_NE(app.ui().message.find("repo is not a repository"), std::string::npos);

  // Without --repo there is nowhere to make it.
  app.ui().repo.clear();
  press(Key::of('N'));
  EXPECT_EQ(app.ui().prompt, Prompt::none);
  EXPECT_NE(app.ui().message.find("--repo"), std::string::npos);
}

}  // namespace
}  // namespace loopr::tui
