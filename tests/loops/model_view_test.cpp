// What the model sees (issue 24): tool results rendered and held to a cap
// (loops/tool_result_view), the context budget's estimate and handoff
// decision (loops/context_budget), the first message's orientation read
// from a real git worktree (loops/orientation), and the prompts.
#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <string>

#include "config/catalog.hpp"
#include "loops/context_budget.hpp"
#include "loops/git/worktrees.hpp"
#include "loops/orientation.hpp"
#include "loops/prompts.hpp"
#include "loops/tool_result_view.hpp"
#include "tests/loops/git_fixture.hpp"

namespace loopr::loops {
namespace {

using nlohmann::json;
using ::testing::HasSubstr;
using ::testing::Not;
using ::testing::StartsWith;

// The view the built-in catalog gives `tool` (its result_view trait).
config::ResultView view_of(const char* tool) {
  static const config::Catalog catalog = config::Catalog::builtin();
  return catalog.find(tool)->result_view;
}

json command_outcome(const std::string& stdout_text, const std::string& stderr_text, int exit_code,
                     const json& extra = json::object()) {
  json output = {{"command", "make test"}, {"exit_code", exit_code}, {"stdout", stdout_text},
                 {"stderr", stderr_text},  {"timed_out", false},     {"truncated", false},
                 {"duration_ms", 1234}};
  output.update(extra);
  return {{"status", exit_code == 0 ? "success" : "failed"}, {"ok", true}, {"output", output}};
}

TEST(ToolResultView, ACommandIsExitCodeDurationAndItsMergedOutput) {
  const json outcome = command_outcome(
      "out\n", "err\n", 2,
      {{"output", "out\nerr\n"}, {"stdout_base64", "AAAA"}, {"hint", "try make -k"}});
  const std::string view = full_view(view_of("run_command"), outcome);
  EXPECT_THAT(view, StartsWith("exit code 2 · 1.2 s\n"));
  const std::string kept =
      full_view(view_of("test"),
                command_outcome("a", "", 0, {{"truncated", true}, {"output_bytes", 5488895}}));
  EXPECT_THAT(kept, StartsWith("exit code 0 · 1.2 s · 5,488,895 bytes printed, of which the tool "
                               "kept the head and tail\n"));
  EXPECT_THAT(view, HasSubstr("note: try make -k\n"));
  EXPECT_THAT(view, HasSubstr("out\nerr\n"));
  EXPECT_THAT(view, Not(HasSubstr("AAAA")));        // no base64 copy
  EXPECT_THAT(view, Not(HasSubstr("\"stdout\"")));  // not JSON
}

// Issue 27: what the user's hooks said comes first, one line each, on a
// result and on a failure alike.
TEST(ToolResultView, TheHooksNotesComeFirst) {
  json outcome = command_outcome("built\n", "", 0, {{"output", "built\n"}});
  outcome["hook_notes"] = {"lint is clean", "formatted 1 file"};
  EXPECT_THAT(capped_view(view_of("run_command"), "c1", outcome, 16384).text,
              StartsWith("[hook: lint is clean]\n[hook: formatted 1 file]\nexit code 0"));
  // Not part of the view read_output pages.
  EXPECT_THAT(full_view(view_of("run_command"), outcome), StartsWith("exit code 0"));
  const json failed = {{"ok", false},
                       {"error", {{"code", "refused_by_hook"}, {"message", "no"}}},
                       {"hook_notes", {"seen"}}};
  EXPECT_THAT(capped_view(view_of("run_command"), "c1", failed, 16384).text,
              StartsWith("[hook: seen]\n{\"error\":{\"code\":\"refused_by_hook\""));
  // A read_file page keeps its whole cap for the file.
  json read = {{"ok", true},
               {"output", {{"content", "     1|x\n"}, {"total_lines", 1}, {"path", "a.c"}}},
               {"hook_notes", {std::string(3000, 'n')}}};
  const CappedView page = capped_view(view_of("read_file"), "c2", read, 200);
  EXPECT_THAT(page.text, HasSubstr("1|x"));
}

// Issue 25: the limit that stopped a command and each connection the egress
// proxy refused reach the model, with the key that raises or allows them.
TEST(ToolResultView, ALimitAndEgressRefusalsAreShownWithTheirKeys) {
  const json refused = {{"host", "registry.npmjs.org"},
                        {"port", 443},
                        {"rule", "allow_domains"},
                        {"allow_key", "[egress.lanes.net] allow_domains"},
                        {"message",
                         "loopr's egress proxy refused registry.npmjs.org:443 (lane net): the "
                         "name is not in [egress.lanes.net] allow_domains of loopr.toml"}};
  const json limit = {{"name", "memory"},
                      {"key", "[lanes.net] memory_mb in loopr.toml"},
                      {"value", 1024},
                      {"unit", "MiB"},
                      {"message", "a process of the job was killed for memory (1024 MiB)"}};
  const std::string view =
      full_view(view_of("run_command"),
                command_outcome("", "npm ERR! 403 Forbidden\n", 1,
                                {{"limit", limit}, {"egress_refused", json::array({refused})}}));
  EXPECT_THAT(view, HasSubstr("limit: a process of the job was killed for memory (1024 MiB)\n"));
  EXPECT_THAT(view, HasSubstr("note: loopr's egress proxy refused registry.npmjs.org:443 (lane "
                              "net): the name is not in [egress.lanes.net] allow_domains"));
  // The output cap is said in the first line already, not again.
  const std::string cut =
      full_view(view_of("run_command"),
                command_outcome("a", "", 0, {{"limit", {{"name", "output"}, {"message", "X"}}}}));
  EXPECT_THAT(cut, Not(HasSubstr("limit: X")));
}

TEST(ToolResultView, WithoutAMergedOutputStderrFollowsStdout) {
  const std::string view =
      full_view(view_of("test"), command_outcome("passed 3\n", "warning: x\n", 0));
  EXPECT_THAT(view, HasSubstr("passed 3\n--- stderr ---\nwarning: x\n"));
}

TEST(ToolResultView, AFiveMegabyteOutputKeepsHeadAndTailWithinTheCap) {
  std::string big;
  big.reserve(5 * 1024 * 1024 + 100);
  big += "FIRST LINE\n";
  int line = 0;
  while (big.size() < 5 * 1024 * 1024)
    big += "line " + std::to_string(++line) + " of the test log\n";
  big += "LAST LINE: 1 test failed\n";
  const json outcome = command_outcome(big, "", 1, {{"output", big}});
  const CappedView view = capped_view(view_of("test"), "toolu_7", outcome, 16384);
  EXPECT_TRUE(view.cut);
  EXPECT_LE(view.text.size(), 16384u);
  EXPECT_THAT(view.text, StartsWith("exit code 1"));
  EXPECT_THAT(view.text, HasSubstr("FIRST LINE\n"));
  EXPECT_THAT(view.text, HasSubstr("LAST LINE: 1 test failed\n"));
  EXPECT_THAT(view.text, HasSubstr("bytes ("));
  EXPECT_THAT(view.text, HasSubstr("read_output {\"call_id\": \"toolu_7\", \"offset\": "));
  EXPECT_GT(view.whole_bytes, 5u * 1024 * 1024);

  // read_output's pages walk the whole view, line by line, to its end.
  const std::string whole = full_view(view_of("test"), outcome);
  EXPECT_EQ(whole.size(), view.whole_bytes);
  const std::size_t offset = std::stoul(view.text.substr(view.text.find("\"offset\": ") + 10));
  const std::string page = view_page(whole, offset, 16384);
  EXPECT_LE(page.size(), 16384u);
  EXPECT_EQ(whole.compare(offset, 10, page.substr(0, 10)), 0);
  EXPECT_THAT(page, HasSubstr("read on with offset "));
  EXPECT_THAT(view_page(whole, whole.size() - 30, 16384), HasSubstr("[end of output:"));
  EXPECT_THAT(view_page(whole, whole.size() + 5, 16384), HasSubstr("past the end"));
}

TEST(ToolResultView, TheCutNeverSplitsAUtf8Sequence) {
  std::string text;
  while (text.size() < 40000)
    text += "ünïcödé ";  // no newlines: the cut falls inside the text
  const CappedView view = capped_view(view_of("run_command"), "c1",
                                      command_outcome(text, "", 0, {{"output", text}}), 2048);
  ASSERT_TRUE(view.cut);
  EXPECT_TRUE(nlohmann::json::accept(json(view.text).dump()));
  // Every byte sequence is whole: dumping with strict UTF-8 does not throw.
  EXPECT_NO_THROW(json(view.text).dump());
}

TEST(ToolResultView, ReadFileShowsAHeaderTheLinesAndWhereToGoOn) {
  json output = {{"path", "src/a.c"},
                 {"content", "     1|int a;\n     2|int b;\n"},
                 {"start_line", 1},
                 {"lines_returned", 2},
                 {"size_bytes", 5000},
                 {"invalid_utf8", false},
                 {"lines_cut", 0},
                 {"total_lines", 300},
                 {"more", true},
                 {"next_offset", 3},
                 {"content_hash", "abc123"}};
  const std::string view = full_view(view_of("read_file"), {{"ok", true}, {"output", output}});
  EXPECT_THAT(view, StartsWith("src/a.c · lines 1-2 of 300\n"));
  EXPECT_THAT(view, HasSubstr("     1|int a;\n     2|int b;\n"));
  EXPECT_THAT(view, HasSubstr("read_file with offset 3"));
  EXPECT_THAT(view, Not(HasSubstr("abc123")));
}

TEST(ToolResultView, ALongReadFilePageIsCutAtALineWithTheNextOffset) {
  std::string content;
  for (int i = 1; i <= 2000; ++i) {
    char number[16];
    std::snprintf(number, sizeof number, "%6d|", i);
    content += std::string(number) + std::string(70, 'x') + "\n";
  }
  json output = {{"path", "big.txt"},      {"content", content},   {"start_line", 1},
                 {"lines_returned", 2000}, {"size_bytes", 160000}, {"invalid_utf8", false},
                 {"lines_cut", 0},         {"total_lines", 5000},  {"more", true},
                 {"next_offset", 2001},    {"content_hash", "h"}};
  const CappedView view =
      capped_view(view_of("read_file"), "r1", {{"ok", true}, {"output", output}}, 16384);
  ASSERT_TRUE(view.cut);
  EXPECT_LE(view.text.size(), 16384u);
  // 77 bytes a line: the lines that fit, then the offset of the first not shown.
  const std::size_t last_newline = view.text.rfind("|xxxx");
  ASSERT_NE(last_newline, std::string::npos);
  const std::size_t shown =
      static_cast<std::size_t>(std::count(view.text.begin(), view.text.end(), '|'));
  EXPECT_GT(shown, 150u);
  EXPECT_THAT(view.text, HasSubstr("read on with read_file offset " + std::to_string(shown + 1)));
}

TEST(ToolResultView, ListingsAreOnePathALineAndCutFromTheBottom) {
  json entries = json::array();
  for (int i = 0; i < 3; ++i)
    entries.push_back({{"path", "src/f" + std::to_string(i) + ".c"},
                       {"size", 10},
                       {"is_dir", false},
                       {"is_symlink", false}});
  entries.push_back({{"path", "src/sub"}, {"size", 0}, {"is_dir", true}, {"is_symlink", false}});
  const json outcome = {{"ok", true},
                        {"output", {{"path", "src"}, {"entries", entries}, {"truncated", false}}}};
  const std::string view = full_view(view_of("list_directory"), outcome);
  EXPECT_EQ(view, "src: 4 entries\nsrc/f0.c\nsrc/f1.c\nsrc/f2.c\nsrc/sub/\n");

  json matches = json::array();
  for (int i = 0; i < 5000; ++i)
    matches.push_back("a/very/long/path/to/some/file" + std::to_string(i) + ".txt");
  const json globbed = {{"ok", true},
                        {"output",
                         {{"pattern", "**/*.txt"},
                          {"path", "."},
                          {"matches", matches},
                          {"count", 5000},
                          {"truncated", false},
                          {"skipped_binary", 0},
                          {"skipped_symlinks", 0}}}};
  const CappedView cut = capped_view(view_of("glob"), "g1", globbed, 4096);
  EXPECT_TRUE(cut.cut);
  EXPECT_LE(cut.text.size(), 4096u);
  EXPECT_THAT(cut.text,
              StartsWith("5000 matches, newest first\na/very/long/path/to/some/file0.txt\n"));
  EXPECT_THAT(cut.text, HasSubstr("more lines not shown"));
}

TEST(ToolResultView, ErrorsKeepCodeMessageAndHint) {
  const json outcome = {
      {"ok", false},
      {"status", "failed"},
      {"error", {{"code", "not_found"}, {"message", "no such file"}, {"hint", "glob for it"}}}};
  const json parsed = json::parse(full_view(view_of("read_file"), outcome));
  EXPECT_EQ(parsed["error"]["code"], "not_found");
  EXPECT_EQ(parsed["error"]["hint"], "glob for it");
}

TEST(ToolResultView, OtherToolsAreCompactJsonWithoutHashes) {
  const json outcome = {{"ok", true},
                        {"output",
                         {{"path", "a.txt"},
                          {"replacements", 1},
                          {"content_hash", "sha256:abc"},
                          {"snippet", "1|x"}}}};
  const json parsed = json::parse(full_view(view_of("edit_file"), outcome));
  EXPECT_FALSE(parsed.contains("content_hash"));
  EXPECT_EQ(parsed["replacements"], 1);
}

TEST(ContextBudget, EstimatesFromBytesUntilAProviderCounts) {
  ContextBudget budget(30000, 70, 2000);
  EXPECT_EQ(budget.estimate(3000), 1000);  // 3 bytes a token before any count
  EXPECT_FALSE(budget.should_hand_off(30000));
  EXPECT_TRUE(budget.should_hand_off(3 * 21001));  // past 70 % of 30,000
  // A provider counted 4 bytes a token: its count plus the growth since.
  llm::Usage usage;
  usage.input_tokens = 1000;
  usage.cache_read_tokens = 9000;
  budget.measured(usage, 40000);
  EXPECT_EQ(budget.estimate(40000), 10000);
  EXPECT_EQ(budget.estimate(43000), 11000);
  EXPECT_EQ(budget.estimate(20000), 5001);  // results dropped: scaled down
  EXPECT_FALSE(budget.should_hand_off(60000));
  EXPECT_TRUE(budget.should_hand_off(40000 + 3 * 11001));
}

TEST(ContextBudget, MadeUpCountsAndUnknownWindowsFallBack) {
  ContextBudget budget(200000, 70, 8192);
  llm::Usage usage;
  usage.input_tokens = 10;  // a scripted session's number for a 300 kB request
  budget.measured(usage, 300000);
  EXPECT_EQ(budget.estimate(300000), 100000);
  ContextBudget unknown(0, 70, 8192);
  EXPECT_FALSE(unknown.should_hand_off(100000000));
  // The answer's max_tokens must fit under the window too.
  ContextBudget tight(10000, 95, 8000);
  EXPECT_TRUE(tight.should_hand_off(3 * 2000));
}

TEST(Orientation, TheTreeFoldsDeepFoldersToFitAndCountsWhatItShows) {
  std::vector<std::string> paths = {"README.md", "src/main.c", "src/util/a.c", "src/util/b.c",
                                    "docs/guide.md"};
  const TreeDrawing whole = draw_tree(paths, 10000);
  EXPECT_EQ(whole.text,
            "docs/\n  guide.md\nsrc/\n  util/\n    a.c\n    b.c\n  main.c\nREADME.md\n");
  EXPECT_EQ(whole.files_shown, 5u);
  const TreeDrawing folded = draw_tree(paths, 50);
  EXPECT_EQ(folded.text, "docs/ (1 files)\nsrc/ (3 files)\nREADME.md\n");
  EXPECT_EQ(folded.files_shown, 1u);
  std::vector<std::string> many;
  for (int i = 0; i < 500; ++i)
    many.push_back("file" + std::to_string(i) + ".txt");
  const TreeDrawing cut = draw_tree(many, 1000);
  EXPECT_LE(cut.text.size(), 1000u);
  EXPECT_THAT(cut.text, HasSubstr("more entries)"));
  EXPECT_LT(cut.files_shown, 500u);
  EXPECT_GT(cut.files_shown, 10u);
}

TEST(Orientation, ReadsInstructionsTreeAndWhatEarlierIterationsCommitted) {
  test::TempTree tree;
  const std::string repo = test::make_repo(tree);
  tree.write("repo/AGENTS.md", "Run `make check` before you finish.\n");
  tree.write("repo/src/lib.c", "int f(void);\n");
  tree.write("repo/.gitignore", "build/\n");
  tree.write("repo/build/out.o", "object\n");
  test::must_git(repo, {"add", "-A"});
  test::must_git(repo, {"commit", "-q", "-m", "more"});
  const std::string base = test::plain_head(repo);
  auto worktree = add_worktree(repo, tree.path("wt"), "loop/t1", base);
  ASSERT_TRUE(worktree) << worktree.error().message;

  config::ContextSettings settings;
  auto first = orient(*worktree, base, settings);
  ASSERT_TRUE(first) << first.error().message;
  EXPECT_EQ(first->instructions_file, "AGENTS.md");
  EXPECT_EQ(first->instructions, "Run `make check` before you finish.\n");
  EXPECT_THAT(first->tree, HasSubstr("src/\n  lib.c\n"));
  EXPECT_THAT(first->tree, Not(HasSubstr("out.o")));  // .gitignore honoured
  EXPECT_EQ(first->tree_files, 4u);                   // README, AGENTS, .gitignore, lib.c
  EXPECT_EQ(first->diff_stat, "");

  tree.write("wt/src/lib.c", "int f(void);\nint g(void);\n");
  ASSERT_TRUE(commit_all(*worktree, "loopr: iteration 1"));
  auto second = orient(*worktree, base, settings);
  ASSERT_TRUE(second);
  EXPECT_THAT(second->diff_stat, HasSubstr("src/lib.c | 1 +"));

  // The first file of the list that exists wins, cut to the cap.
  config::ContextSettings small = settings;
  small.instructions_files = {"NOTES.md", "README.md"};
  small.instructions_max_bytes = 3;
  auto third = orient(*worktree, base, small);
  ASSERT_TRUE(third);
  EXPECT_EQ(third->instructions_file, "README.md");
  EXPECT_TRUE(third->instructions_cut);
  EXPECT_LE(third->instructions.size(), 3u);
}

TEST(Prompts, TheSystemPromptIsTheSameInEveryIterationAndNamesOnlyOfferedTools) {
  auto text = load_template("code");
  ASSERT_TRUE(text);
  PromptInputs inputs;
  inputs.loop_type = "code";
  inputs.validation_command = "make check";
  inputs.tools = {"read_file", "edit_file", "validate", "complete_task"};
  inputs.checks.validate = "validate";
  inputs.iteration = 1;
  const std::string first = render_template(*text, inputs);
  inputs.iteration = 7;
  inputs.progress = {"Iteration 6: changed files"};
  EXPECT_EQ(render_template(*text, inputs), first);
  EXPECT_THAT(first, HasSubstr("`make check`"));
  EXPECT_THAT(first, HasSubstr("validate runs the loop's own validation command"));
  EXPECT_THAT(first, Not(HasSubstr("oracle")));
  EXPECT_THAT(first, Not(HasSubstr("memory_search")));
  EXPECT_THAT(first, Not(HasSubstr("Iteration 7")));
  inputs.tools.push_back("oracle");
  inputs.advisor = "oracle";
  EXPECT_THAT(render_template(*text, inputs), HasSubstr("oracle tool asks a second model"));
}

// The advice paragraph names the tool the consults_model trait chose,
// whatever it is called.
TEST(Prompts, TheAdviceParagraphNamesTheToolThatConsultsAModel) {
  auto text = load_template("code");
  ASSERT_TRUE(text);
  PromptInputs inputs;
  inputs.loop_type = "code";
  inputs.tools = {"read_file", "second_opinion", "complete_task"};
  inputs.advisor = "second_opinion";
  EXPECT_THAT(render_template(*text, inputs),
              HasSubstr("the second_opinion tool asks a second model"));
  inputs.advisor.clear();
  EXPECT_THAT(render_template(*text, inputs), Not(HasSubstr("asks a second model")));
}

// The memory paragraph names the tools the memory trait chose, whatever
// they are called, and only when one that searches the notes is offered.
TEST(Prompts, TheMemoryParagraphNamesTheToolsThatSearchAndSaveTheNotes) {
  auto text = load_template("code");
  ASSERT_TRUE(text);
  PromptInputs inputs;
  inputs.loop_type = "code";
  inputs.tools = {"read_file", "recall", "remember", "complete_task"};
  inputs.memory.search = "recall";
  inputs.memory.save = "remember";
  const std::string both = render_template(*text, inputs);
  EXPECT_THAT(both, HasSubstr("search them (recall) before you explore"));
  EXPECT_THAT(both, HasSubstr("with remember; update a note that is wrong"));
  EXPECT_THAT(both, Not(HasSubstr("memory_search")));
  inputs.memory.save.clear();
  const std::string search_only = render_template(*text, inputs);
  EXPECT_THAT(search_only, HasSubstr("search them (recall)"));
  EXPECT_THAT(search_only, Not(HasSubstr("Keep what a later loop should know")));
  inputs.memory = {};
  inputs.memory.save = "remember";
  EXPECT_THAT(render_template(*text, inputs), Not(HasSubstr("Memory:")))
      << "saving notes nobody is told to search is not worth a paragraph";
}

// The checks paragraph names the tools the loop's command traits chose,
// whatever they are called.
TEST(Prompts, TheChecksParagraphNamesTheToolsThatRunTheChecks) {
  auto text = load_template("code");
  ASSERT_TRUE(text);
  PromptInputs inputs;
  inputs.loop_type = "code";
  inputs.tools = {"read_file", "check", "complete_task"};
  inputs.checks.test = "check";
  const std::string rendered = render_template(*text, inputs);
  EXPECT_THAT(rendered, HasSubstr("check runs the project's test command"));
  EXPECT_THAT(rendered, Not(HasSubstr("validate runs")));
  EXPECT_THAT(rendered, Not(HasSubstr("build runs")));
  inputs.checks = {};
  EXPECT_THAT(render_template(*text, inputs), Not(HasSubstr("Checks:")));
}

TEST(Prompts, TheFirstMessageOrientsTheModel) {
  PromptInputs inputs;
  inputs.task = "Fix the parser.";
  inputs.iteration = 2;
  inputs.max_iterations = 5;
  inputs.validation_command = "make check";
  inputs.instructions_file = "AGENTS.md";
  inputs.instructions = "Use tabs.\n";
  inputs.tree = "src/\n  parse.c\n";
  inputs.tree_files = 1;
  inputs.tree_files_shown = 1;
  inputs.branch = "loop/c1";
  inputs.base_commit = "0123456789abcdef0123456789abcdef01234567";
  inputs.diff_stat = " src/parse.c | 2 +-\n";
  inputs.progress = {"Iteration 1: changed files; handed off"};
  inputs.handoff = "The bug is in parse_number; fix the sign.";
  const std::string message = first_user_message(inputs);
  EXPECT_THAT(message, StartsWith("# Task\n\nFix the parser.\n"));
  EXPECT_THAT(message, HasSubstr("# The repository's instructions (AGENTS.md)\n\nUse tabs.\n"));
  EXPECT_THAT(message, HasSubstr("src/\n  parse.c\n"));
  EXPECT_THAT(message, HasSubstr("committed on loop/c1"));
  EXPECT_THAT(message, HasSubstr("`git diff 0123456789ab`"));
  EXPECT_THAT(message, HasSubstr(" src/parse.c | 2 +-\n"));
  EXPECT_THAT(message,
              HasSubstr("# Handoff from the last iteration\n\nThe bug is in parse_number"));
  EXPECT_THAT(message, HasSubstr("Iteration 2 of at most 5."));
  EXPECT_THAT(message, HasSubstr("`make check`"));
}

}  // namespace
}  // namespace loopr::loops
