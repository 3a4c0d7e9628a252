// "Did you mean": a path a file tool cannot find names the nearest existing
// one in the not_found hint (loopr-tool/path_suggestion.hpp), never one
// outside the worktree, and at bounded cost.
#include "loopr-tool/path_suggestion.hpp"

#include <fcntl.h>
#include <gtest/gtest.h>
#include <rapidcheck/gtest.h>

#include <algorithm>
#include <filesystem>
#include <vector>

#include "common/edit_distance.hpp"
#include "tests/support/text_checks.hpp"
#include "tests/tool_files/tool_fixture.hpp"

namespace loopr::test {
namespace {

using nlohmann::json;

class PathSuggestion : public ToolTest {
 protected:
  void SetUp() override {
    tree_.write("src/main.c", "int main(void) { return 0; }\n");
    tree_.write("README.md", "# loopr\n");
    tree_.write("docs/guide.md", "guide\n");
  }

  // The error of `tool` on `args`, which must be not_found suggesting
  // `expected`, with the tool's own message and advice kept.
  void expect_suggests(ToolFn tool, const json& args, const std::string& expected) {
    SCOPED_TRACE(args.dump());
    const Error e = err(tool, args);
    EXPECT_EQ(e.code, errc::not_found) << e.message;
    EXPECT_TRUE(e.hint.starts_with("did you mean '" + expected + "'? If not, ")) << e.hint;
    EXPECT_TRUE(contains(e.hint, "check the path with list_directory")) << e.hint;
    EXPECT_EQ(e.details, (json{{"did_you_mean", expected}}));
  }

  // The error of `tool` on `args`, which must suggest nothing.
  void expect_no_suggestion(ToolFn tool, const json& args, const std::string& code) {
    SCOPED_TRACE(args.dump());
    const Error e = err(tool, args);
    EXPECT_EQ(e.code, code) << e.message;
    EXPECT_FALSE(contains(e.hint, "did you mean")) << e.hint;
    EXPECT_TRUE(e.details.is_null()) << e.details.dump();
  }
};

TEST_F(PathSuggestion, ReadFileMisspelledName) {
  expect_suggests(tool::read_file, {{"path", "src/mian.c"}}, "src/main.c");
  const Error e = err(tool::read_file, {{"path", "src/mian.c"}});
  EXPECT_EQ(e.message, "no such file or directory: 'src/mian.c'");
}

TEST_F(PathSuggestion, ReadFileMisspelledFolder) {
  expect_suggests(tool::read_file, {{"path", "scr/main.c"}}, "src/main.c");
}

TEST_F(PathSuggestion, ReadFileMisspelledFolderAndName) {
  expect_suggests(tool::read_file, {{"path", "scr/mian.c"}}, "src/main.c");
  expect_suggests(tool::read_file, {{"path", "dosc/giude.md"}}, "docs/guide.md");
}

TEST_F(PathSuggestion, ReadFileMissingExtension) {
  expect_suggests(tool::read_file, {{"path", "README"}}, "README.md");
}

TEST_F(PathSuggestion, ReadFileWrongCase) {
  expect_suggests(tool::read_file, {{"path", "readme.md"}}, "README.md");
  expect_suggests(tool::read_file, {{"path", "SRC/Main.c"}}, "src/main.c");
}

TEST_F(PathSuggestion, AbsoluteAndUnnormalizedPathsSuggestRelativeOnes) {
  expect_suggests(tool::read_file, {{"path", tree_.path("src/mian.c")}}, "src/main.c");
  expect_suggests(tool::read_file, {{"path", "docs/../scr/./main.c"}}, "src/main.c");
}

TEST_F(PathSuggestion, ListDirectory) {
  expect_suggests(tool::list_directory, {{"path", "scr"}}, "src");
  expect_suggests(tool::list_directory, {{"path", "Docs"}}, "docs");
}

TEST_F(PathSuggestion, GrepAndGlobPath) {
  expect_suggests(tool::grep, {{"pattern", "main"}, {"path", "scr"}}, "src");
  expect_suggests(tool::grep, {{"pattern", "main"}, {"path", "src/mian.c"}}, "src/main.c");
  expect_suggests(tool::glob, {{"pattern", "*.c"}, {"path", "scr"}}, "src");
}

TEST_F(PathSuggestion, EditFileKeepsItsAdvice) {
  expect_suggests(tool::edit_file,
                  {{"path", "src/mian.c"}, {"old_string", "return 0"}, {"new_string", "return 1"}},
                  "src/main.c");
  const Error e =
      err(tool::edit_file,
          {{"path", "src/mian.c"}, {"old_string", "return 0"}, {"new_string", "return 1"}});
  EXPECT_EQ(e.message, "no such file: 'src/mian.c'");
  EXPECT_TRUE(contains(e.hint, "to create the file")) << e.hint;
  // A missing folder, found by open_parent: the whole path is suggested.
  expect_suggests(tool::edit_file,
                  {{"path", "scr/main.c"}, {"old_string", "return 0"}, {"new_string", "return 1"}},
                  "src/main.c");
  EXPECT_FALSE(tree_.exists("scr"));
}

TEST_F(PathSuggestion, FileDelete) {
  expect_suggests(tool::file_delete, {{"path", "src/mian.c"}}, "src/main.c");
  expect_suggests(tool::file_delete, {{"path", "scr/main.c"}}, "src/main.c");
  EXPECT_TRUE(tree_.exists("src/main.c"));
}

TEST_F(PathSuggestion, NothingCloseKeepsTodaysHint) {
  for (const char* path :
       {"completely_unrelated.txt", "src/zzzzzz.rs", "nowhere/main.c", "src/main.c/inside"}) {
    const Error e = err(tool::read_file, {{"path", path}});
    EXPECT_FALSE(contains(e.hint, "did you mean")) << path << ": " << e.hint;
    EXPECT_TRUE(e.details.is_null()) << path;
  }
  const Error e = err(tool::read_file, {{"path", "completely_unrelated.txt"}});
  EXPECT_EQ(e.code, errc::not_found);
  EXPECT_EQ(e.hint, "check the path with list_directory or glob");
  // The same tree does suggest a near name.
  expect_suggests(tool::read_file, {{"path", "src/mian.c"}}, "src/main.c");
}

TEST_F(PathSuggestion, NeverThroughASymlinkOutOfTheWorktree) {
  outside_.write("secret.txt", "outside\n");
  outside_.write("secrets/key.txt", "outside\n");
  tree_.symlink(outside_.root(), "elsewhere");              // a folder outside
  tree_.symlink(outside_.path("secret.txt"), "notes.txt");  // a file outside
  tree_.symlink("../" + std::filesystem::path(outside_.root()).filename().string(), "sibling");
  for (const char* path :
       {"elsewher/secret.txt", "note.txt", "Notes.txt", "notes", "siblin/secret.txt", "sibling2"}) {
    expect_no_suggestion(tool::read_file, {{"path", path}}, errc::not_found);
  }
  // Nor a name that exists only outside, behind a symlink that leads there.
  expect_no_suggestion(tool::read_file, {{"path", "elsewhere/secrt.txt"}},
                       errc::path_outside_worktree);
  // With a symlink inside the worktree, the suggestion goes through it.
  tree_.symlink("src", "source");
  expect_suggests(tool::read_file, {{"path", "sourc/main.c"}}, "source/main.c");
}

TEST_F(PathSuggestion, NeverAboveTheWorktree) {
  outside_.write("main.c", "outside\n");
  const std::string outside_name = std::filesystem::path(outside_.root()).filename();
  for (const std::string& path :
       {"../" + outside_name + "/mian.c", "../" + outside_name + "/main.c",
        "src/../../" + outside_name + "/main.c", outside_.path("mian.c"),
        std::string("../src/main.c")}) {
    expect_no_suggestion(tool::read_file, {{"path", path}}, errc::path_outside_worktree);
  }
  // The same name inside the worktree is suggested.
  expect_suggests(tool::read_file, {{"path", "src/../src/mian.c"}}, "src/main.c");
}

TEST_F(PathSuggestion, GitMetadataIsNeverSuggested) {
  tree_.write(".git/config", "[core]\n");
  expect_no_suggestion(tool::read_file, {{"path", ".gti/config"}}, errc::not_found);
  expect_no_suggestion(tool::read_file, {{"path", ".git/confg"}}, errc::not_found);
  expect_no_suggestion(tool::read_file, {{"path", ".GIT/config"}}, errc::not_found);
  // Other dot folders are suggested.
  tree_.write(".github/ci.yml", "on: push\n");
  expect_suggests(tool::read_file, {{"path", ".githb/ci.yml"}}, ".github/ci.yml");
}

TEST_F(PathSuggestion, ALargeFolderIsReadOnlyUpToTheBound) {
  tree_.mkdir("big");
  const int big = ::open(tree_.path("big").c_str(), O_RDONLY | O_DIRECTORY | O_CLOEXEC);
  ASSERT_GE(big, 0);
  const std::size_t count = tool::kMaxFolderEntries + 500;
  for (std::size_t i = 0; i < count; ++i) {
    const std::string name = "file_" + std::to_string(i);
    const int fd = ::openat(big, name.c_str(), O_WRONLY | O_CREAT | O_CLOEXEC, 0644);
    ASSERT_GE(fd, 0);
    ::close(fd);
  }
  const tool::NearNames all = tool::nearest_names(big, "file_1234x");
  EXPECT_EQ(all.entries_read, tool::kMaxFolderEntries);
  EXPECT_FALSE(all.names.empty());
  EXPECT_LE(all.names.size(), tool::kMaxTriedNames);
  EXPECT_EQ(tool::nearest_names(big, "file_1234x", 50).entries_read, 50u);
  ::close(big);

  const Error e = err(tool::read_file, {{"path", "big/file_1234x"}});
  EXPECT_EQ(e.code, errc::not_found);
  EXPECT_TRUE(e.hint.starts_with("did you mean 'big/file_")) << e.hint;
}

TEST_F(PathSuggestion, ClosestNamesComeFirst) {
  tree_.write("n/main.c", "");
  tree_.write("n/Main.c", "");
  tree_.write("n/mains.c", "");
  tree_.write("n/unrelated", "");
  tree_.write("n/.git/x", "");
  const int dir = ::open(tree_.path("n").c_str(), O_RDONLY | O_DIRECTORY | O_CLOEXEC);
  ASSERT_GE(dir, 0);
  const tool::NearNames near = tool::nearest_names(dir, "MAIN.c");
  EXPECT_EQ(near.names, (std::vector<std::string>{"Main.c", "main.c", "mains.c"}));
  EXPECT_EQ(near.entries_read, 5u);
  EXPECT_TRUE(tool::nearest_names(dir, ".gti").names.empty());
  ::close(dir);
}

TEST(NameCloseness, Ranks) {
  using tool::name_closeness;
  EXPECT_EQ(name_closeness("readme.md", "README.md"), 1u);
  EXPECT_EQ(name_closeness("README", "README.md"), 3u);
  EXPECT_EQ(name_closeness("mian.c", "main.c"), 2u);
  EXPECT_EQ(name_closeness("scr", "src"), 2u);
  EXPECT_EQ(name_closeness("main.cpp", "main.c"), 4u);
  EXPECT_EQ(name_closeness("main.c", "main.c"), std::nullopt);
  EXPECT_EQ(name_closeness("ab", "xy"), std::nullopt);
  EXPECT_EQ(name_closeness("main.c", "test.h"), std::nullopt);
  EXPECT_EQ(name_closeness("README", "README.a-very-long-extension"), std::nullopt);
  EXPECT_EQ(name_closeness("", "a"), std::nullopt);
  // Long names allow more edits, up to kMaxNameDistance.
  const std::string long_name(60, 'a');
  EXPECT_EQ(name_closeness(long_name, std::string(52, 'a')), 2 * tool::kMaxNameDistance);
  EXPECT_EQ(name_closeness(long_name, std::string(51, 'a')), std::nullopt);
}

TEST(EditDistance, Examples) {
  EXPECT_EQ(edit_distance("kitten", "sitting", 10), 3u);
  EXPECT_EQ(edit_distance("sitting", "kitten", 10), 3u);
  EXPECT_EQ(edit_distance("scr", "src", 10), 1u);  // one transposition
  EXPECT_EQ(edit_distance("ca", "abc", 10), 3u);   // OSA: no edits inside a transposition
  EXPECT_EQ(edit_distance("", "abc", 10), 3u);
  EXPECT_EQ(edit_distance("", "", 10), 0u);
  EXPECT_EQ(edit_distance("same", "same", 0), 0u);
  EXPECT_EQ(edit_distance("Main", "main", 10), 1u);  // case counts: callers fold
  // Over the bound: max + 1.
  EXPECT_EQ(edit_distance("abcdef", "uvwxyz", 2), 3u);
  EXPECT_EQ(edit_distance("a", "abcdefgh", 3), 4u);
  EXPECT_EQ(edit_distance("abc", "abd", 0), 1u);
}

// The full table, without band or bound.
std::size_t reference_distance(const std::string& a, const std::string& b) {
  std::vector<std::vector<std::size_t>> d(a.size() + 1, std::vector<std::size_t>(b.size() + 1));
  for (std::size_t i = 0; i <= a.size(); ++i)
    d[i][0] = i;
  for (std::size_t j = 0; j <= b.size(); ++j)
    d[0][j] = j;
  for (std::size_t i = 1; i <= a.size(); ++i) {
    for (std::size_t j = 1; j <= b.size(); ++j) {
      d[i][j] = std::min(
          {d[i - 1][j] + 1, d[i][j - 1] + 1, d[i - 1][j - 1] + (a[i - 1] == b[j - 1] ? 0u : 1u)});
      if (i > 1 && j > 1 && a[i - 1] == b[j - 2] && a[i - 2] == b[j - 1]) {
        d[i][j] = std::min(d[i][j], d[i - 2][j - 2] + 1);
      }
    }
  }
  return d[a.size()][b.size()];
}

RC_GTEST_PROP(EditDistance, BandedMatchesTheFullTable, ()) {
  const auto word = rc::gen::container<std::string>(rc::gen::element('a', 'b', 'c'));
  const std::string a = *word;
  const std::string b = *word;
  const std::size_t max = *rc::gen::inRange<std::size_t>(0, 12);
  const std::size_t full = reference_distance(a, b);
  RC_ASSERT(edit_distance(a, b, max) == std::min(full, max + 1));
  RC_ASSERT(edit_distance(b, a, max) == std::min(full, max + 1));
}

}  // namespace
}  // namespace loopr::test
