#include "loopr-tool/tree_walker.hpp"

#include <gtest/gtest.h>

#include <algorithm>
#include <mutex>
#include <set>

#include "tests/support/temp_tree.hpp"

namespace loopr::tool {
namespace {

std::vector<std::string> walk(const Worktree& worktree, std::string_view start, unsigned threads,
                              WalkStats* stats_out = nullptr, int max_depth = kMaxWalkDepth) {
  std::mutex mutex;
  std::vector<std::string> seen;
  auto stats = walk_tree(worktree, start, WalkOptions{threads, max_depth, true},
                         [&](const WalkEntry& entry, unsigned worker) {
                           EXPECT_LT(worker, threads);
                           std::lock_guard lock(mutex);
                           seen.emplace_back(entry.relative);
                         });
  EXPECT_TRUE(stats.ok());
  if (stats_out != nullptr && stats.ok()) *stats_out = *stats;
  std::sort(seen.begin(), seen.end());
  return seen;
}

TEST(tool_search_TreeWalker, VisitsFilesSkipsGitAndIgnoredAndSymlinks) {
  test::TempTree tree;
  tree.write("a.txt", "a");
  tree.write(".hidden", "h");
  tree.write("src/b.cpp", "b");
  tree.write(".git/config", "c");
  tree.write("build/out.o", "o");
  tree.write(".gitignore", "build/\n");
  tree.symlink("a.txt", "link.txt");
  tree.symlink("/etc", "etc-link");
  const auto worktree = Worktree::open(tree.root());
  ASSERT_TRUE(worktree.ok());
  WalkStats stats;
  const auto seen = walk(*worktree, ".", 1, &stats);
  EXPECT_EQ(seen, (std::vector<std::string>{".gitignore", ".hidden", "a.txt", "src/b.cpp"}));
  EXPECT_EQ(stats.skipped_symlinks, 2u);
}

TEST(tool_search_TreeWalker, ParallelWalkSeesTheSameFiles) {
  test::TempTree tree;
  for (int d = 0; d < 20; ++d) {
    for (int f = 0; f < 150; ++f) {
      tree.write("d" + std::to_string(d) + "/s/f" + std::to_string(f), "x");
    }
  }
  const auto worktree = Worktree::open(tree.root());
  ASSERT_TRUE(worktree.ok());
  const auto one = walk(*worktree, ".", 1);
  const auto many = walk(*worktree, ".", 4);
  EXPECT_EQ(one.size(), 3000u);
  EXPECT_EQ(one, many);
  EXPECT_EQ(std::set<std::string>(many.begin(), many.end()).size(), many.size());
}

TEST(tool_search_TreeWalker, DepthIsBounded) {
  test::TempTree tree;
  tree.write("a/b/c/d/deep.txt", "x");
  tree.write("a/shallow.txt", "x");
  const auto worktree = Worktree::open(tree.root());
  WalkStats stats;
  const auto seen = walk(*worktree, ".", 1, &stats, 2);
  EXPECT_EQ(seen, (std::vector<std::string>{"a/shallow.txt"}));
  EXPECT_EQ(stats.skipped_depth, 1u);
}

TEST(tool_search_TreeWalker, SubdirectoryStartAppliesAncestorRules) {
  test::TempTree tree;
  tree.write(".gitignore", "*.gen\n");
  tree.write("src/x.gen", "x");
  tree.write("src/x.cpp", "x");
  const auto worktree = Worktree::open(tree.root());
  EXPECT_EQ(walk(*worktree, "src", 2), (std::vector<std::string>{"src/x.cpp"}));
}

TEST(tool_search_TreeWalker, StartOutsideOrMissingIsAnError) {
  test::TempTree tree;
  tree.symlink("/", "escape");
  const auto worktree = Worktree::open(tree.root());
  auto visit = [](const WalkEntry&, unsigned) {};
  auto escaped = walk_tree(*worktree, "escape", WalkOptions{}, visit);
  ASSERT_FALSE(escaped.ok());
  EXPECT_EQ(escaped.error().code, errc::path_outside_worktree);
  auto missing = walk_tree(*worktree, "nope", WalkOptions{}, visit);
  ASSERT_FALSE(missing.ok());
  EXPECT_EQ(missing.error().code, errc::not_found);
}

}  // namespace
}  // namespace loopr::tool
