// looprctl memory list | search | show | delete: the real binary against a
// FakeDaemon (what it sends, what it prints, its exit statuses), and the
// rendering of search matches in process.
#include <gtest/gtest.h>

#include <sstream>

#include "client/memory_view.hpp"
#include "client/terminal.hpp"
#include "client/text_format.hpp"
#include "proto/control_messages.hpp"
#include "tests/client/fake_daemon.hpp"
#include "tests/client/loop_samples.hpp"
#include "tests/client/looprctl_fixture.hpp"
#include "tests/client/looprctl_run.hpp"

namespace loopr::test {
namespace {

using nlohmann::json;

const std::string kRepoNoteId = "note-0c5f3b8e-6d4a-4f0e-9b1a-2d7c8e9f0a1b";
const std::string kUserNoteId = "note-7d1e2f3a-4b5c-4d6e-8f70-8192a3b4c5d6";

json a_note(const std::string& id, const json& repo, const std::string& text) {
  return {{"note_id", id},
          {"text", text},
          {"tags", {"build", "make"}},
          {"scope", repo.is_null() ? "user" : "repo"},
          {"repo", repo},
          {"source", "loop:l-3"},
          {"created_at", "2025-01-02T03:04:05Z"},
          {"updated_at", "2025-02-03T04:05:06Z"}};
}

json two_notes() {
  return json::array(
      {a_note(kRepoNoteId, "/src/app",
              "the build needs make -j1: the linker runs out of memory with more jobs, every "
              "time, on this machine and on the CI runners alike, so keep it at one\nsecond line"),
       a_note(kUserNoteId, nullptr, "prefers \x1b[31mred\x1b[0m short answers")});
}

// The process's environment for a run with a terminal this wide.
CtlOptions columns(std::size_t width) {
  CtlOptions options;
  options.env["COLUMNS"] = std::to_string(width);
  return options;
}

json not_found_data(const std::string& id) {
  return {{"code", "not_found"},
          {"message", "there is no note '" + id + "'"},
          {"hint", "`looprctl memory list` shows the notes and their ids"}};
}

class MemoryCommandsTest : public LooprctlFixture {};

// ---- memory list ----

TEST_F(MemoryCommandsTest, ListPrintsATableWhoseTextFitsTheTerminal) {
  fake_.answer("memory.list", {{"notes", two_notes()}, {"repo", nullptr}});
  const CtlRun run = ctl({"memory", "list"}, columns(130));
  ASSERT_EQ(run.exit_code, 0) << run.out << run.err;
  EXPECT_EQ(params_of("memory.list"), json::object());
  EXPECT_TRUE(terminal_safe(run.out)) << run.out;
  const auto lines = lines_of(run.out);
  ASSERT_EQ(lines.size(), 3u) << run.out;
  EXPECT_EQ(lines[0].rfind("ID", 0), 0u) << run.out;
  for (const char* column : {"SCOPE", "REPO", "UPDATED", "TEXT"})
    EXPECT_TRUE(contains(lines[0], column)) << lines[0];
  EXPECT_EQ(lines[1].rfind(kRepoNoteId + "  repo   /src/app  2025-02-03 04:05 UTC  the build", 0),
            0u)
      << run.out;
  EXPECT_EQ(lines[1].size(), 130u) << lines[1];
  EXPECT_EQ(lines[1].substr(127), "...") << lines[1];
  EXPECT_FALSE(contains(run.out, "second line")) << run.out;
  EXPECT_EQ(lines[2],
            kUserNoteId +
                "  user   (user)    2025-02-03 04:05 UTC  prefers \\x1b[31mred\\x1b[0m short "
                "answers");
}

TEST_F(MemoryCommandsTest, ListOnAWideTerminalShowsMoreOfTheText) {
  fake_.answer("memory.list", {{"notes", two_notes()}, {"repo", nullptr}});
  const CtlRun run = ctl({"memory", "list"}, columns(300));
  ASSERT_EQ(run.exit_code, 0) << run.err;
  EXPECT_TRUE(contains(run.out,
                       "on this machine and on the CI runners alike, so keep it at "
                       "one...\n"))
      << run.out;
}

TEST_F(MemoryCommandsTest, ListOnANarrowTerminalPutsEachTextUnderItsRow) {
  fake_.answer("memory.list", {{"notes", two_notes()}, {"repo", nullptr}});
  const CtlRun run = ctl({"memory", "list"}, columns(60));
  ASSERT_EQ(run.exit_code, 0) << run.err;
  const auto lines = lines_of(run.out);
  ASSERT_EQ(lines.size(), 5u) << run.out;
  EXPECT_FALSE(contains(lines[0], "TEXT")) << run.out;
  EXPECT_EQ(lines[1].rfind(kRepoNoteId, 0), 0u) << run.out;
  EXPECT_EQ(lines[2].rfind("  the build needs make -j1", 0), 0u) << run.out;
  EXPECT_EQ(lines[2].size(), 60u) << lines[2];
  EXPECT_EQ(lines[4], "  prefers \\x1b[31mred\\x1b[0m short answers");
}

TEST_F(MemoryCommandsTest, ListSendsTheRepoAsAnAbsolutePathAndTheLimitAndPrintsJson) {
  tree_.mkdir("work/app/src");
  const json result = {{"notes", two_notes()}, {"repo", tree_.path("work/app")}};
  fake_.answer("memory.list", result);
  CtlOptions options;
  options.cwd = tree_.path("work");
  const CtlRun run =
      ctl({"memory", "list", "--repo", "app/src/", "--limit", "5", "--json"}, options);
  ASSERT_EQ(run.exit_code, 0) << run.err;
  EXPECT_EQ(params_of("memory.list"), (json{{"repo", tree_.path("work/app/src")}, {"limit", 5}}));
  EXPECT_EQ(json::parse(run.out), result);
}

TEST_F(MemoryCommandsTest, ListWithoutNotesSaysSo) {
  fake_.on("memory.list", [](const proto::Request& request) {
    return FakeReply::result(
        request, {{"notes", json::array()}, {"repo", request.params.value("repo", json())}});
  });
  CtlRun run = ctl({"memory", "list"});
  ASSERT_EQ(run.exit_code, 0) << run.err;
  EXPECT_EQ(run.out, "no notes\n");
  run = ctl({"memory", "list", "--repo", "/"});
  ASSERT_EQ(run.exit_code, 0) << run.err;
  EXPECT_EQ(run.out, "no notes for /, and none of your own\n");
}

TEST_F(MemoryCommandsTest, ListThatReachedItsLimitSaysHowToSeeMore) {
  fake_.answer("memory.list", {{"notes", two_notes()}, {"repo", nullptr}});
  CtlRun run = ctl({"memory", "list", "--limit", "2"}, columns(120));
  ASSERT_EQ(run.exit_code, 0) << run.err;
  EXPECT_TRUE(contains(run.out, "(the 2 most recently updated; --limit 1000 shows more)\n"))
      << run.out;
  run = ctl({"memory", "list", "--limit", "3"}, columns(120));
  EXPECT_FALSE(contains(run.out, "most recently updated")) << run.out;
}

// ---- memory search ----

json search_result() {
  return {{"results",
           {{{"note_id", kRepoNoteId},
             {"text", "the build needs make -j1: the linker runs out of memory"},
             {"score", 2.3141},
             {"snippet", "the build needs make -j1: the **linker** runs out of **memory**"},
             {"source", "loop:l-3"},
             {"scope", "repo"},
             {"updated_at", "2025-02-03T04:05:06Z"},
             {"tags", {"build"}}},
            {{"note_id", nullptr},
             {"text", "I will look at the linker flags.\nThen \x1b[2Jthe memory."},
             {"score", 0.0000012},
             {"snippet", "I will look at the **linker** flags.\nThen \x1b[2Jthe **memory**."},
             {"source", "conversation:l-9"},
             {"loop_id", "l-9"},
             {"iteration", 2},
             {"updated_at", "2025-02-01T00:00:00Z"}}}},
          {"message", "2 matches, best first"},
          {"repo", "/src/app"}};
}

TEST_F(MemoryCommandsTest, SearchPrintsEachHitWithScoreSourceAndTheMarkedSnippet) {
  fake_.answer("memory.search", search_result());
  const CtlRun run = ctl({"memory", "search", "linker memory", "--repo", "/src/app", "--top-k", "7",
                          "--conversation"});
  ASSERT_EQ(run.exit_code, 0) << run.err;
  EXPECT_EQ(params_of("memory.search"), (json{{"query", "linker memory"},
                                              {"repo", "/src/app"},
                                              {"top_k", 7},
                                              {"include_conversation", true}}));
  EXPECT_TRUE(terminal_safe(run.out)) << run.out;
  EXPECT_EQ(run.out, kRepoNoteId +
                         "  score 2.31  loop:l-3  scope repo  updated 2025-02-03 04:05 UTC\n"
                         "  the build needs make -j1: the **linker** runs out of **memory**\n"
                         "\n"
                         "conversation of loop l-9, iteration 2  score 1.2e-06  conversation:l-9  "
                         "updated 2025-02-01 00:00 UTC\n"
                         "  I will look at the **linker** flags.\n"
                         "  Then \\x1b[2Jthe **memory**.\n");
}

TEST_F(MemoryCommandsTest, SearchSendsOnlyTheQueryByDefaultAndPrintsJson) {
  fake_.answer("memory.search", search_result());
  const CtlRun run = ctl({"memory", "search", "NEAR(\"linker\" OR", "--json"});
  ASSERT_EQ(run.exit_code, 0) << run.err;
  EXPECT_EQ(params_of("memory.search"), (json{{"query", "NEAR(\"linker\" OR"}}));
  EXPECT_EQ(json::parse(run.out), search_result());
}

TEST_F(MemoryCommandsTest, SearchWithoutMatchesSaysWhereItLooked) {
  fake_.on("memory.search", [](const proto::Request& request) {
    return FakeReply::result(request, {{"results", json::array()},
                                       {"message", "nothing matches"},
                                       {"repo", request.params.value("repo", json())}});
  });
  CtlRun run = ctl({"memory", "search", "zebra"});
  ASSERT_EQ(run.exit_code, 0) << run.err;
  EXPECT_EQ(run.out, "no notes match\n");
  run = ctl({"memory", "search", "zebra", "--repo", "/"});
  ASSERT_EQ(run.exit_code, 0) << run.err;
  EXPECT_EQ(run.out, "no notes match among the notes of / and your own\n");
}

TEST(MemoryView, MatchesAreBoldOnlyWhenAskedAndAnOpenMarkIsClosed) {
  EXPECT_EQ(client::render_matches("a **b** c", false), "a **b** c");
  EXPECT_EQ(client::render_matches("a **b** c", true), "a \x1b[1mb\x1b[22m c");
  EXPECT_EQ(client::render_matches("**x\x1b[31m", true), "\x1b[1mx\\x1b[31m\x1b[22m");
  EXPECT_EQ(client::render_matches("one\ntwo **2**", true), "one\ntwo \x1b[1m2\x1b[22m");
}

TEST(MemoryView, AStreamOtherThanStdoutIsNoTerminal) {
  std::ostringstream out;
  const client::TerminalStyle style = client::terminal_style(out);
  EXPECT_FALSE(style.bold);
  EXPECT_GE(style.columns, 20u);
}

// ---- memory show, delete ----

TEST_F(MemoryCommandsTest, ShowPrintsEveryFieldAndTheWholeText) {
  fake_.answer("memory.get", two_notes()[0]);
  const CtlRun run = ctl({"memory", "show", kRepoNoteId});
  ASSERT_EQ(run.exit_code, 0) << run.err;
  EXPECT_EQ(params_of("memory.get"), (json{{"note_id", kRepoNoteId}}));
  EXPECT_EQ(run.out, "note:     " + kRepoNoteId +
                         "\n"
                         "scope:    repo\n"
                         "repo:     /src/app\n"
                         "tags:     build, make\n"
                         "source:   loop:l-3\n"
                         "created:  2025-01-02 03:04 UTC\n"
                         "updated:  2025-02-03 04:05 UTC\n"
                         "\n" +
                         two_notes()[0]["text"].get<std::string>() + "\n");
}

TEST_F(MemoryCommandsTest, ShowOfAUserNoteEscapesItsText) {
  fake_.answer("memory.get", two_notes()[1]);
  const CtlRun run = ctl({"memory", "show", kUserNoteId});
  ASSERT_EQ(run.exit_code, 0) << run.err;
  EXPECT_TRUE(terminal_safe(run.out)) << run.out;
  EXPECT_TRUE(contains(run.out, "repo:     (user)\n")) << run.out;
  EXPECT_TRUE(contains(run.out, "\nprefers \\x1b[31mred\\x1b[0m short answers\n")) << run.out;
}

TEST_F(MemoryCommandsTest, ShowAndDeletePrintJson) {
  fake_.answer("memory.get", two_notes()[1]);
  fake_.answer("memory.delete", {{"note_id", kUserNoteId}, {"deleted", true}});
  CtlRun run = ctl({"memory", "show", kUserNoteId, "--json"});
  ASSERT_EQ(run.exit_code, 0) << run.err;
  EXPECT_EQ(json::parse(run.out), two_notes()[1]);
  run = ctl({"memory", "delete", kUserNoteId, "--json"});
  ASSERT_EQ(run.exit_code, 0) << run.err;
  EXPECT_EQ(json::parse(run.out), (json{{"note_id", kUserNoteId}, {"deleted", true}}));
}

TEST_F(MemoryCommandsTest, DeleteSaysWhatItDeleted) {
  fake_.answer("memory.delete", {{"note_id", kRepoNoteId}, {"deleted", true}});
  const CtlRun run = ctl({"memory", "delete", kRepoNoteId});
  ASSERT_EQ(run.exit_code, 0) << run.err;
  EXPECT_EQ(params_of("memory.delete"), (json{{"note_id", kRepoNoteId}}));
  EXPECT_EQ(run.out, "deleted " + kRepoNoteId + "\n");
}

TEST_F(MemoryCommandsTest, AnUnknownNoteExitsOneWithTheDaemonsMessageAndHint) {
  for (const char* method : {"memory.get", "memory.delete"}) {
    fake_.on(method, [](const proto::Request& request) {
      const std::string id = request.params.value("note_id", "");
      return FakeReply::error(request, 1005, "there is no note '" + id + "'", not_found_data(id));
    });
  }
  for (const char* command : {"show", "delete"}) {
    const CtlRun run = ctl({"memory", command, "note-gone"});
    EXPECT_EQ(run.exit_code, 1) << command;
    EXPECT_TRUE(run.out.empty()) << run.out;
    EXPECT_EQ(run.err,
              "looprctl: there is no note 'note-gone'\n"
              "hint: `looprctl memory list` shows the notes and their ids\n");
  }
}

TEST_F(MemoryCommandsTest, ARefusedRequestExitsOneWithTheDaemonsMessage) {
  fake_.on("memory.list", [](const proto::Request& request) {
    return FakeReply::error(request, -32602, "repo '/nowhere' is not a folder",
                            {{"code", "invalid_arguments"},
                             {"message", "repo '/nowhere' is not a folder"},
                             {"hint", "pass an existing folder"}});
  });
  const CtlRun run = ctl({"memory", "list", "--repo", "/nowhere"});
  EXPECT_EQ(run.exit_code, 1);
  EXPECT_TRUE(contains(run.err, "looprctl: repo '/nowhere' is not a folder\n")) << run.err;
  EXPECT_TRUE(contains(run.err, "hint: pass an existing folder\n")) << run.err;
}

TEST_F(MemoryCommandsTest, MalformedResultsExitFour) {
  fake_.answer("memory.list", {{"notes", "none"}});
  fake_.answer("memory.search", {{"results", {1, 2}}});
  fake_.answer("memory.get", json::array());
  for (const std::vector<std::string>& args : {std::vector<std::string>{"memory", "list"},
                                               {"memory", "search", "x"},
                                               {"memory", "show", kRepoNoteId}}) {
    const CtlRun run = ctl(args);
    EXPECT_EQ(run.exit_code, 4) << args[1] << "\n" << run.out << run.err;
    EXPECT_TRUE(contains(run.err, "protocol error")) << run.err;
  }
}

// ---- usage and reachability ----

TEST_F(MemoryCommandsTest, UsageMistakesExitTwoAndSendNothing) {
  expect_usage_errors(
      std::vector<std::vector<std::string>>{std::vector<std::string>{"memory"},
                                            {"memory", "forget"},
                                            {"memory", "list", "--limit", "0"},
                                            {"memory", "list", "--limit", "1001"},
                                            {"memory", "list", "--limit", "ten"},
                                            {"memory", "search"},
                                            {"memory", "search", "  "},
                                            {"memory", "search", "x", "--top-k", "0"},
                                            {"memory", "search", "x", "--top-k", "101"},
                                            {"memory", "search", "x", "--conversation"},
                                            {"memory", "show"},
                                            {"memory", "delete"},
                                            {"memory", "delete", "a", "b"}});
}

TEST_F(MemoryCommandsTest, HelpSaysRepoDefaultsToEveryNote) {
  for (const char* command : {"list", "search"}) {
    const CtlRun run = ctl({"memory", command, "--help"});
    EXPECT_EQ(run.exit_code, 0) << run.err;
    EXPECT_TRUE(contains(run.out, "(default: every note)")) << run.out;
  }
}

TEST_F(MemoryCommandsTest, UnreachableDaemonExitsThree) {
  const std::string socket = tree_.path("nobody.sock");
  for (const std::vector<std::string>& args : {std::vector<std::string>{"memory", "list"},
                                               {"memory", "search", "x"},
                                               {"memory", "show", kRepoNoteId},
                                               {"memory", "delete", kRepoNoteId}}) {
    std::vector<std::string> full = {"--socket", socket};
    full.insert(full.end(), args.begin(), args.end());
    const CtlRun run = run_looprctl(full, hermetic());
    EXPECT_EQ(run.exit_code, 3) << args[1] << "\n" << run.err;
    EXPECT_TRUE(contains(run.err, socket)) << run.err;
  }
}

}  // namespace
}  // namespace loopr::test
