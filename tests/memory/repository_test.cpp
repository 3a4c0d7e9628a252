// repository_of(): a repository's folder, a folder inside it and a linked
// git worktree of it all name the same repository; a folder outside any is
// its own.
#include "memory/repository.hpp"

#include <gtest/gtest.h>
#include <sys/stat.h>

#include <cstdlib>
#include <string>

#include "tests/support/temp_tree.hpp"

namespace loopr::memory {
namespace {

int sh(const std::string& command) {
  return std::system(("(" + command + ") >/dev/null 2>&1").c_str());
}

TEST(RepositoryOf, SubfoldersAndLinkedWorktreesNameTheirRepository) {
  test::TempTree tree;
  const std::string repo = tree.path("app");
  tree.write("app/src/main.c", "int main(void) { return 0; }\n");
  ASSERT_EQ(sh("cd '" + repo +
               "' && git init -q -b main && git add -A && git -c user.name=t -c user.email=t@t "
               "commit -q -m init && git worktree add -q '" +
               tree.path("wt") + "' -b side"),
            0);
  EXPECT_EQ(repository_of(repo), repo);
  EXPECT_EQ(repository_of(tree.path("app/src")), repo);
  EXPECT_EQ(repository_of(tree.path("wt")), repo);
  tree.mkdir("loose");
  EXPECT_EQ(repository_of(tree.path("loose")), tree.path("loose"));
}

TEST(RepositoryOf, ABrokenGitFileNamesTheFolderItself) {
  test::TempTree tree;
  tree.write("odd/.git", "gitdir: /nonexistent/place\n");
  EXPECT_EQ(repository_of(tree.path("odd")), tree.path("odd"));
  tree.write("junk/.git", "not a gitdir line");
  EXPECT_EQ(repository_of(tree.path("junk")), tree.path("junk"));
}

// A job writes the worktree: a .git file whose commondir is a FIFO (a
// blocking read would hang looprd's io thread) or a link to /dev/zero (an
// endless line) names the folder itself, at once.
TEST(RepositoryOf, PlantedFifosAndDevicesAreNotRead) {
  test::TempTree tree;
  tree.write("fifo/.git", "gitdir: g\n");
  tree.mkdir("fifo/g");
  ASSERT_EQ(::mkfifo(tree.path("fifo/g/commondir").c_str(), 0600), 0);
  EXPECT_EQ(repository_of(tree.path("fifo")), tree.path("fifo"));
  tree.write("zero/.git", "gitdir: g\n");
  tree.mkdir("zero/g");
  tree.symlink("/dev/zero", "zero/g/commondir");
  EXPECT_EQ(repository_of(tree.path("zero")), tree.path("zero"));
  tree.mkdir("fifo-git");
  ASSERT_EQ(::mkfifo(tree.path("fifo-git/.git").c_str(), 0600), 0);
  EXPECT_EQ(repository_of(tree.path("fifo-git")), tree.path("fifo-git"));
}

}  // namespace
}  // namespace loopr::memory
