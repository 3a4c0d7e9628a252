#include <gtest/gtest.h>
#include <rapidcheck/gtest.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <filesystem>

#include "common/utf8.hpp"
#include "loopr-tool/atomic_write.hpp"
#include "loopr-tool/content_hash.hpp"
#include "tests/support/text_checks.hpp"
#include "tests/tool_files/tool_fixture.hpp"

namespace loopr::test {
namespace {

using nlohmann::json;
using tool::file_delete;
using tool::list_directory;
using tool::read_file;
using tool::write_file;

class WriteFile : public ToolTest {};
class FileDelete : public ToolTest {};
class ListDirectory : public ToolTest {};

TEST_F(WriteFile, CreatesParentsAndReportsTheHash) {
  const auto out = ok(write_file, {{"path", "a/b/c.txt"}, {"content", "hello\n"}});
  EXPECT_EQ(tree_.read("a/b/c.txt"), "hello\n");
  EXPECT_EQ(out["created"], true);
  EXPECT_EQ(out["bytes_written"], 6);
  EXPECT_EQ(out["content_hash"], tool::content_hash("hello\n"));
}

TEST_F(WriteFile, OverwritingKeepsTheModeAndLeavesNoTemporaryFile) {
  tree_.write("run.sh", "old\n");
  ::chmod(tree_.path("run.sh").c_str(), 0751);
  const auto out = ok(write_file, {{"path", "run.sh"}, {"content", "new\n"}});
  EXPECT_EQ(out["created"], false);
  EXPECT_EQ(tree_.read("run.sh"), "new\n");
  EXPECT_EQ(mode_of(tree_.path("run.sh")), 0751u);
  const auto listing = ok(list_directory, json::object());
  EXPECT_EQ(listing["entries"].size(), 1u) << listing.dump();
}

TEST_F(WriteFile, AStaleExpectedHashIsRefusedAndTheFileKept) {
  tree_.write("f.txt", "v1\n");
  const std::string read_hash = ok(read_file, {{"path", "f.txt"}})["content_hash"];
  tree_.write("f.txt", "v2 by someone else\n");
  const auto e =
      err(write_file, {{"path", "f.txt"}, {"content", "mine\n"}, {"expected_hash", read_hash}});
  EXPECT_EQ(e.code, errc::stale_read);
  EXPECT_NE(e.hint.find("read it again"), std::string::npos);
  EXPECT_EQ(tree_.read("f.txt"), "v2 by someone else\n");
  const std::string fresh = ok(read_file, {{"path", "f.txt"}})["content_hash"];
  ok(write_file, {{"path", "f.txt"}, {"content", "mine\n"}, {"expected_hash", fresh}});
  EXPECT_EQ(tree_.read("f.txt"), "mine\n");
}

// Read, then removed by someone: writing it creates it again (nothing that
// anyone wrote can be lost); a stale_read here could never be satisfied.
TEST_F(WriteFile, AFileGoneSinceItWasReadIsCreatedAgain) {
  const auto out =
      ok(write_file, {{"path", "gone.txt"}, {"content", "x"}, {"expected_hash", "sha256:00"}});
  EXPECT_EQ(out["created"], true);
  EXPECT_EQ(tree_.read("gone.txt"), "x");
}

TEST_F(WriteFile, AFileTooLargeToHashIsRefusedAsTooLargeNotAsUnread) {
  tree_.write("huge.bin", "x");
  ASSERT_EQ(
      ::truncate(tree_.path("huge.bin").c_str(), static_cast<off_t>(tool::kMaxEditableBytes) + 1),
      0);
  const auto e =
      err(write_file, {{"path", "huge.bin"}, {"content", "small\n"}, {"create_only", true}});
  EXPECT_EQ(e.code, errc::too_large);
  EXPECT_NE(e.hint.find("file_delete"), std::string::npos) << e.hint;
  EXPECT_EQ(std::filesystem::file_size(tree_.path("huge.bin")), tool::kMaxEditableBytes + 1);
}

TEST_F(WriteFile, CreateOnlyRefusesAFileTheSessionNeverRead) {
  tree_.write("seen.txt", "precious\n");
  const auto e =
      err(write_file, {{"path", "seen.txt"}, {"content", "lost\n"}, {"create_only", true}});
  EXPECT_EQ(e.code, errc::not_read_first);
  EXPECT_NE(e.hint.find("read it first with read_file"), std::string::npos) << e.hint;
  EXPECT_EQ(tree_.read("seen.txt"), "precious\n");
  const auto out =
      ok(write_file, {{"path", "new.txt"}, {"content", "hi\n"}, {"create_only", true}});
  EXPECT_EQ(out["created"], true);
  EXPECT_EQ(tree_.read("new.txt"), "hi\n");
  EXPECT_EQ(err(write_file, {{"path", "x"}, {"content", ""}, {"create_only", 1}}).code,
            errc::invalid_arguments);
}

TEST_F(WriteFile, RefusesGitMetadataEvenThroughASymlink) {
  tree_.write(".git/config", "[core]\n");
  EXPECT_EQ(err(write_file, {{"path", ".git/config"}, {"content", "x"}}).code,
            errc::protected_path);
  EXPECT_EQ(err(write_file, {{"path", ".git/hooks/pre-commit"}, {"content", "x"}}).code,
            errc::protected_path);
  tree_.symlink(".git", "meta");
  EXPECT_EQ(err(write_file, {{"path", "meta/config"}, {"content", "x"}}).code,
            errc::protected_path);
  EXPECT_EQ(err(write_file, {{"path", "sub/.git"}, {"content", "gitdir: /tmp/x"}}).code,
            errc::protected_path);
  EXPECT_EQ(tree_.read(".git/config"), "[core]\n");
  // Refusing leaves nothing behind: no .git/hooks folder was created first.
  EXPECT_FALSE(tree_.exists(".git/hooks"));
  EXPECT_EQ(err(write_file, {{"path", "meta/hooks/post-checkout"}, {"content", "x"}}).code,
            errc::protected_path);
  EXPECT_FALSE(tree_.exists(".git/hooks"));
  EXPECT_FALSE(tree_.exists("sub"));
}

TEST_F(WriteFile, DoesNotWriteThroughASymlink) {
  tree_.write("real.txt", "real\n");
  tree_.symlink("real.txt", "link.txt");
  const auto e = err(write_file, {{"path", "link.txt"}, {"content", "x"}});
  EXPECT_NE(e.message.find("is a symlink to 'real.txt'"), std::string::npos) << e.message;
  EXPECT_EQ(tree_.read("real.txt"), "real\n");
}

TEST_F(WriteFile, BadArguments) {
  EXPECT_NE(err(write_file, {{"path", "a"}}).message.find("'content'"), std::string::npos);
  EXPECT_NE(err(write_file, {{"path", "a"}, {"content", 5}}).message.find("must be a string"),
            std::string::npos);
  EXPECT_NE(err(write_file, {{"path", "a"}, {"content", ""}, {"mode", 7}}).message.find("'mode'"),
            std::string::npos);
  EXPECT_EQ(err(write_file, {{"path", ""}, {"content", ""}}).code, errc::invalid_arguments);
}

RC_GTEST_FIXTURE_PROP(WriteFile, WriteThenReadReturnsTheContentByteForByte,
                      (const std::string& raw)) {
  std::string text = to_lossy_utf8(raw);
  std::erase(text, '\0');
  std::erase(text, '\r');
  RC_ASSERT(call(write_file, {{"path", "prop.txt"}, {"content", text}}).ok());
  RC_ASSERT(tree_.read("prop.txt") == text);
  auto out = call(read_file, {{"path", "prop.txt"}, {"limit", 10000}});
  RC_ASSERT(out.ok());
  std::string joined;
  const std::string content = (*out)["content"];
  for (std::size_t i = 0; i < content.size();) {
    const std::size_t bar = content.find('|', i);
    const std::size_t end = content.find('\n', bar);
    joined += content.substr(bar + 1, end - bar);
    i = end + 1;
  }
  if (!text.empty() && text.back() != '\n') joined.pop_back();  // read_file ends every line
  RC_ASSERT(joined == text);
  RC_ASSERT((*out)["content_hash"] == tool::content_hash(text));
}

TEST_F(FileDelete, DeletesAFile) {
  tree_.write("a.txt", "x");
  const auto out = ok(file_delete, {{"path", "a.txt"}});
  EXPECT_EQ(out["deleted"], "file");
  EXPECT_FALSE(tree_.exists("a.txt"));
}

TEST_F(FileDelete, AFolderNeedsRecursive) {
  tree_.write("d/x/y.txt", "1");
  tree_.write("d/z.txt", "2");
  const auto e = err(file_delete, {{"path", "d"}});
  EXPECT_EQ(e.code, errc::is_directory);
  EXPECT_NE(e.hint.find("recursive"), std::string::npos);
  const auto out = ok(file_delete, {{"path", "d"}, {"recursive", true}});
  EXPECT_EQ(out["deleted"], "directory");
  EXPECT_EQ(out["entries_removed"], 4);  // d, d/x, d/x/y.txt, d/z.txt
  EXPECT_FALSE(tree_.exists("d"));
}

TEST_F(FileDelete, RemovesSymlinksWithoutFollowingThem) {
  outside_.write("keep/me.txt", "precious");
  tree_.symlink(outside_.path("keep"), "d/link");
  ok(file_delete, {{"path", "d"}, {"recursive", true}});
  EXPECT_EQ(outside_.read("keep/me.txt"), "precious");
  tree_.symlink(outside_.path("keep/me.txt"), "leaf-link");
  EXPECT_EQ(ok(file_delete, {{"path", "leaf-link"}})["deleted"], "symlink");
  EXPECT_EQ(outside_.read("keep/me.txt"), "precious");
}

TEST_F(FileDelete, RefusesTheRootAndGitMetadata) {
  tree_.write(".git/HEAD", "ref: refs/heads/main\n");
  EXPECT_EQ(err(file_delete, {{"path", "."}, {"recursive", true}}).code, errc::protected_path);
  EXPECT_EQ(err(file_delete, {{"path", ".git"}, {"recursive", true}}).code, errc::protected_path);
  EXPECT_EQ(err(file_delete, {{"path", ".git/HEAD"}}).code, errc::protected_path);
  EXPECT_TRUE(tree_.exists(".git/HEAD"));
  EXPECT_EQ(err(file_delete, {{"path", "missing"}}).code, errc::not_found);
  EXPECT_EQ(err(file_delete, {{"path", "x"}, {"recursive", "yes"}}).code, errc::invalid_arguments);
}

TEST_F(ListDirectory, ListsSortedEntriesWithSizes) {
  tree_.write("b.txt", "12345");
  tree_.write("a/inner.txt", "1");
  const auto out = ok(list_directory, json::object());
  ASSERT_EQ(out["entries"].size(), 2u);
  EXPECT_EQ(out["entries"][0],
            (json{{"path", "a"}, {"size", 0}, {"is_dir", true}, {"is_symlink", false}}));
  EXPECT_EQ(out["entries"][1],
            (json{{"path", "b.txt"}, {"size", 5}, {"is_dir", false}, {"is_symlink", false}}));
  EXPECT_EQ(out["truncated"], false);
}

TEST_F(ListDirectory, RecursesToMaxDepthWithoutEnteringGitOrSymlinks) {
  tree_.write("a/b/c/d.txt", "x");
  tree_.write(".git/config", "x");
  outside_.write("secret.txt", "x");
  tree_.symlink(outside_.root(), "out");
  const auto out = ok(list_directory, {{"recursive", true}, {"max_depth", 2}});
  std::vector<std::string> paths;
  for (const auto& e : out["entries"])
    paths.push_back(e["path"]);
  EXPECT_EQ(paths, (std::vector<std::string>{".git", "a", "a/b", "out"}));
  EXPECT_EQ(out["entries"][3]["is_symlink"], true);
  const auto sub = ok(list_directory, {{"path", "a/b"}, {"recursive", true}});
  EXPECT_EQ(sub["entries"][0]["path"], "a/b/c");
}

TEST_F(ListDirectory, CapsTheListingAndSaysSo) {
  for (int i = 0; i < 2100; ++i)
    tree_.write("many/f" + std::to_string(i), "");
  const auto out = ok(list_directory, {{"path", "many"}});
  EXPECT_EQ(out["entries"].size(), 2000u);
  EXPECT_EQ(out["truncated"], true);
  EXPECT_EQ(out["total_seen"], 2100);
}

std::vector<std::string> listed_paths(const json& listing) {
  std::vector<std::string> paths;
  for (const auto& e : listing["entries"])
    paths.push_back(e["path"]);
  return paths;
}

// A tree with ignored folders (node_modules/, build/), an ignored pattern
// with a negation (*.log, !keep.log), a nested .gitignore and an entry of
// .git/info/exclude.
void write_ignoring_tree(TempTree& tree) {
  tree.write(".gitignore", "node_modules/\nbuild/\n*.log\n!keep.log\n");
  tree.write(".git/info/exclude", "secret.txt\n");
  tree.write("node_modules/pkg/index.js", "x");
  tree.write("build/out.o", "x");
  tree.write("secret.txt", "x");
  tree.write("README.md", "x");
  tree.write("src/a.cpp", "x");
  tree.write("src/debug.log", "x");
  tree.write("src/keep.log", "x");
  tree.write("src/.gitignore", "generated/\n");
  tree.write("src/generated/g.cpp", "x");
  tree.write("lib/generated/kept.cpp", "x");  // src/.gitignore does not reach lib/
}

TEST_F(ListDirectory, GitignoredEntriesAreLeftOutAndCounted) {
  write_ignoring_tree(tree_);
  const auto top = ok(list_directory, json::object());
  EXPECT_EQ(listed_paths(top),
            (std::vector<std::string>{".git", ".gitignore", "README.md", "lib", "src"}));
  EXPECT_EQ(top["ignored"], 3) << top.dump();  // node_modules, build, secret.txt
  EXPECT_EQ(top["truncated"], false);
  const std::string hint = top["hint"];
  EXPECT_NE(hint.find("3 entries ignored by .gitignore"), std::string::npos) << hint;
  EXPECT_NE(hint.find("include_ignored: true"), std::string::npos) << hint;

  const auto all = ok(list_directory, {{"recursive", true}});
  EXPECT_EQ(listed_paths(all),
            (std::vector<std::string>{".git", ".gitignore", "README.md", "lib", "lib/generated",
                                      "lib/generated/kept.cpp", "src", "src/.gitignore",
                                      "src/a.cpp", "src/keep.log"}));
  // node_modules, build and secret.txt; src/debug.log (*.log); src/generated
  // (the nested file). Nothing inside an ignored folder is counted.
  EXPECT_EQ(all["ignored"], 5) << all.dump();
}

TEST_F(ListDirectory, IncludeIgnoredListsEverything) {
  write_ignoring_tree(tree_);
  const auto all = ok(list_directory, {{"recursive", true}, {"include_ignored", true}});
  const auto paths = listed_paths(all);
  for (const char* path : {"node_modules", "node_modules/pkg", "node_modules/pkg/index.js", "build",
                           "build/out.o", "secret.txt", "src/debug.log", "src/generated/g.cpp"}) {
    EXPECT_NE(std::find(paths.begin(), paths.end(), path), paths.end()) << path;
  }
  EXPECT_FALSE(all.contains("ignored")) << all.dump();
  EXPECT_FALSE(all.contains("hint")) << all.dump();
  // .git is still listed but not entered.
  EXPECT_EQ(std::find(paths.begin(), paths.end(), ".git/info"), paths.end());
  EXPECT_EQ(err(list_directory, {{"include_ignored", "yes"}}).code, errc::invalid_arguments);
}

TEST_F(ListDirectory, ASubfolderKeepsItsAncestorsRulesAndAnIgnoredFolderCanBeListedByName) {
  write_ignoring_tree(tree_);
  // The root's *.log and src's own generated/ apply inside src.
  const auto src = ok(list_directory, {{"path", "src"}});
  EXPECT_EQ(listed_paths(src),
            (std::vector<std::string>{"src/.gitignore", "src/a.cpp", "src/keep.log"}));
  EXPECT_EQ(src["ignored"], 2);
  // An ignored folder named as the path is listed: an explicit request.
  const auto modules = ok(list_directory, {{"path", "node_modules"}, {"recursive", true}});
  EXPECT_EQ(listed_paths(modules),
            (std::vector<std::string>{"node_modules/pkg", "node_modules/pkg/index.js"}));
  EXPECT_FALSE(modules.contains("ignored"));
}

TEST_F(ListDirectory, BadArguments) {
  EXPECT_EQ(err(list_directory, {{"max_depth", 0}}).code, errc::invalid_arguments);
  EXPECT_EQ(err(list_directory, {{"max_depth", 65}}).code, errc::invalid_arguments);
  EXPECT_EQ(err(list_directory, {{"recursive", 1}}).code, errc::invalid_arguments);
  EXPECT_EQ(err(list_directory, {{"path", "missing"}}).code, errc::not_found);
  tree_.write("f", "x");
  EXPECT_EQ(err(list_directory, {{"path", "f"}}).code, errc::not_directory);
}

}  // namespace
}  // namespace loopr::test
