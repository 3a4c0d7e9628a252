// Protected files (issue 27): which paths a loop's [validation]
// protected_paths protect (loops/protected_files.hpp), and putting back what
// an iteration changed of them against real git
// (loops/git/protected_restore.hpp).
#include "loops/protected_files.hpp"

#include <gtest/gtest.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <cstdlib>
#include <fstream>
#include <sstream>

#include "common/worktree_path.hpp"
#include "loops/git/protected_restore.hpp"
#include "loops/git/worktrees.hpp"
#include "tests/loops/git_fixture.hpp"

namespace loopr::test {
namespace {

using loops::ProtectedChange;
using loops::ProtectedPaths;

ProtectedPaths compiled(const std::vector<std::string>& patterns) {
  auto paths = ProtectedPaths::compile(patterns);
  EXPECT_TRUE(paths) << (paths ? "" : paths.error().message);
  return paths ? *paths : ProtectedPaths{};
}

TEST(ProtectedPaths, APatternProtectsWhatItMatchesAndEverythingBeneath) {
  const ProtectedPaths paths = compiled({"tests", "spec/**/*_spec.rb", "Makefile", "**/*.snap"});
  EXPECT_EQ(paths.protecting("tests"), "tests");
  EXPECT_EQ(paths.protecting("tests/unit/a_test.c"), "tests") << "a folder protects its files";
  EXPECT_EQ(paths.protecting("spec/models/user_spec.rb"), "spec/**/*_spec.rb");
  EXPECT_EQ(paths.protecting("spec/user_spec.rb"), "spec/**/*_spec.rb") << "** is zero folders too";
  EXPECT_EQ(paths.protecting("Makefile"), "Makefile");
  EXPECT_EQ(paths.protecting("ui/__snapshots__/x.snap"), "**/*.snap");
  EXPECT_EQ(paths.protecting("a.snap"), "**/*.snap");
  for (const char* free : {"src/tests.c", "testsuite/a.c", "src/Makefile", "spec/helper.rb",
                           "Makefile.am", "", "docs/tests"}) {
    EXPECT_EQ(paths.protecting(free), std::nullopt) << free;
  }
  EXPECT_TRUE(compiled({}).empty());
  EXPECT_EQ(compiled({}).protecting("tests/a.c"), std::nullopt);
}

TEST(ProtectedPaths, ASlashFolderPatternProtectsOnlyBelowIt) {
  const ProtectedPaths paths = compiled({"tests/**"});
  EXPECT_EQ(paths.protecting("tests/a.c"), "tests/**");
  EXPECT_EQ(paths.protecting("tests/deep/er/a.c"), "tests/**");
  EXPECT_EQ(paths.protecting("tests"), std::nullopt)
      << "the folder itself: deleting it is put back before the commit";
}

// The loop's guard names a file tool's path with common/worktree_path.hpp,
// as the tool does; outside the worktree (or the worktree itself) the tool
// refuses it, and the guard looks no further.
std::optional<std::string> worktree_relative(const std::string& path, const std::string& worktree) {
  auto relative = worktree_relative_path(worktree, path);
  if (!relative || *relative == ".") return std::nullopt;
  return *relative;
}

TEST(ProtectedPaths, AFileToolsPathIsTakenRelativeToTheWorktreeAndNormal) {
  const std::string wt = "/work/wt/c1";
  EXPECT_EQ(worktree_relative("tests/a.c", wt), "tests/a.c");
  EXPECT_EQ(worktree_relative("./tests//a.c", wt), "tests/a.c");
  EXPECT_EQ(worktree_relative("src/../tests/a.c", wt), "tests/a.c");
  EXPECT_EQ(worktree_relative("/work/wt/c1/tests/a.c", wt), "tests/a.c");
  EXPECT_EQ(worktree_relative("/work/wt/c1/src/../tests/a.c", wt), "tests/a.c");
  EXPECT_EQ(worktree_relative("tests/", wt), "tests");
  EXPECT_EQ(worktree_relative("../c2/tests/a.c", wt), std::nullopt);
  EXPECT_EQ(worktree_relative("/etc/passwd", wt), std::nullopt);
  EXPECT_EQ(worktree_relative("/work/wt/c10/tests/a.c", wt), std::nullopt);
  EXPECT_EQ(worktree_relative("", wt), std::nullopt);
  EXPECT_EQ(worktree_relative(".", wt), std::nullopt);
}

TEST(ProtectedPaths, APatternThatNoLongerCompilesIsAnErrorNamingIt) {
  auto paths = ProtectedPaths::compile({"tests", "a{b"});
  ASSERT_FALSE(paths);
  EXPECT_NE(paths.error().message.find("protected_paths: \"a{b\""), std::string::npos)
      << paths.error().message;
}

// ---- putting back against real git ----

class ProtectedRestoreTest : public ::testing::Test {
 protected:
  void SetUp() override {
    repo_ = make_repo(tree_);
    tree_.write("repo/tests/check.sh", "exit 1\n");
    tree_.write("repo/tests/other_test.sh", "exit 0\n");
    tree_.write("repo/src/value.txt", "1\n");
    tree_.write("repo/.gitignore", "*.o\n");
    must_git(repo_, {"add", "-A"});
    must_git(repo_, {"commit", "-q", "-m", "tests"});
    base_ = plain_head(repo_);
    auto info = loops::add_worktree(repo_, tree_.path("wt/c1"), "loop/c1", "");
    ASSERT_TRUE(info) << info.error().message;
    info_ = *info;
    wt_ = "wt/c1/";
  }

  Result<std::vector<ProtectedChange>> restore(const std::vector<std::string>& patterns = {
                                                   "tests"}) {
    const ProtectedPaths paths = compiled(patterns);
    return loops::restore_protected(info_, base_, guard_of(paths));
  }

  static loops::ProtectedGuard guard_of(const ProtectedPaths& paths) {
    return {[&paths](const std::string& path) { return paths.protecting(path).has_value(); },
            [&paths](const std::string& folder) { return paths.may_protect_beneath(folder); }};
  }

  std::string read(const std::string& relative) const {
    std::ifstream in(tree_.path(wt_ + relative));
    std::stringstream text;
    text << in.rdbuf();
    return text.str();
  }
  bool exists(const std::string& relative) const {
    struct stat st {};
    return ::lstat(tree_.path(wt_ + relative).c_str(), &st) == 0;
  }

  TempTree tree_;
  std::string repo_;
  std::string base_;
  loops::WorktreeInfo info_;
  std::string wt_;
};

std::vector<std::string> described(const std::vector<ProtectedChange>& changes) {
  std::vector<std::string> out;
  for (const auto& change : changes)
    out.push_back(change.path + " " + change.change);
  std::sort(out.begin(), out.end());
  return out;
}

TEST_F(ProtectedRestoreTest, EveryKindOfChangeToAProtectedFileIsPutBackAndNothingElseIs) {
  tree_.write(wt_ + "tests/check.sh", "exit 0\n");                          // edited (sed -i)
  ASSERT_EQ(::unlink(tree_.path(wt_ + "tests/other_test.sh").c_str()), 0);  // deleted
  tree_.write(wt_ + "tests/new_test.sh", "exit 0\n");                       // added, untracked
  tree_.write(wt_ + "tests/staged.sh", "exit 0\n");                         // added and staged
  must_git(tree_.path("wt/c1"), {"add", "tests/staged.sh"});
  tree_.write(wt_ + "tests/cache.o", "build output\n");  // ignored, but in tests/
  tree_.write(wt_ + "src/value.txt", "42\n");            // the real work
  tree_.write(wt_ + "src/new.c", "int x;\n");

  auto restored = restore();
  ASSERT_TRUE(restored) << restored.error().message;
  EXPECT_EQ(described(*restored),
            (std::vector<std::string>{"tests/cache.o added", "tests/check.sh modified",
                                      "tests/new_test.sh added", "tests/other_test.sh deleted",
                                      "tests/staged.sh added"}));
  EXPECT_EQ(read("tests/check.sh"), "exit 1\n");
  EXPECT_EQ(read("tests/other_test.sh"), "exit 0\n");
  EXPECT_FALSE(exists("tests/new_test.sh"));
  EXPECT_FALSE(exists("tests/staged.sh"));
  EXPECT_FALSE(exists("tests/cache.o")) << "an ignore rule hides nothing from the tests";
  EXPECT_EQ(read("src/value.txt"), "42\n") << "unprotected work is kept";
  EXPECT_TRUE(exists("src/new.c"));
  // Nothing of tests/ differs from the base any more, in the index either.
  const PlainRun status = plain_git(tree_.path("wt/c1"), {"status", "--porcelain", "--", "tests"});
  EXPECT_EQ(status.output, "");

  auto again = restore();
  ASSERT_TRUE(again) << again.error().message;
  EXPECT_TRUE(again->empty()) << "a second call finds nothing";
}

TEST_F(ProtectedRestoreTest, ACommittedChangeAModeChangeAndALinkArePutBackToo) {
  // The model commits its edit itself: still different from the base.
  tree_.write(wt_ + "tests/check.sh", "exit 0\n");
  must_git(tree_.path("wt/c1"), {"commit", "-q", "-am", "sneaky"});
  ASSERT_EQ(::chmod(tree_.path(wt_ + "tests/other_test.sh").c_str(), 0755), 0);
  auto restored = restore();
  ASSERT_TRUE(restored) << restored.error().message;
  EXPECT_EQ(described(*restored),
            (std::vector<std::string>{"tests/check.sh modified", "tests/other_test.sh modified"}));
  EXPECT_EQ(read("tests/check.sh"), "exit 1\n");
  struct stat st {};
  ASSERT_EQ(::stat(tree_.path(wt_ + "tests/other_test.sh").c_str(), &st), 0);
  EXPECT_EQ(st.st_mode & 0111, 0u);

  // A protected file replaced by a link to one that passes.
  ASSERT_EQ(::unlink(tree_.path(wt_ + "tests/check.sh").c_str()), 0);
  ASSERT_EQ(::symlink("other_test.sh", tree_.path(wt_ + "tests/check.sh").c_str()), 0);
  restored = restore();
  ASSERT_TRUE(restored) << restored.error().message;
  EXPECT_EQ(described(*restored), (std::vector<std::string>{"tests/check.sh modified"}));
  ASSERT_EQ(::lstat(tree_.path(wt_ + "tests/check.sh").c_str(), &st), 0);
  EXPECT_TRUE(S_ISREG(st.st_mode));
  EXPECT_EQ(read("tests/check.sh"), "exit 1\n");
}

TEST_F(ProtectedRestoreTest, AnUntrackedFileBehindALinkedFolderIsNotFollowed) {
  // tests/out -> a folder outside the worktree: git lists the link itself,
  // which is removed; nothing outside is touched.
  tree_.write("outside/keep.txt", "mine\n");
  ASSERT_EQ(::symlink(tree_.path("outside").c_str(), tree_.path(wt_ + "tests/out").c_str()), 0);
  auto restored = restore();
  ASSERT_TRUE(restored) << restored.error().message;
  EXPECT_EQ(described(*restored), (std::vector<std::string>{"tests/out added"}));
  EXPECT_FALSE(exists("tests/out"));
  std::ifstream kept(tree_.path("outside/keep.txt"));
  EXPECT_TRUE(kept.good());
}

// An ignore rule the model adds hides nothing: a conftest.py it writes into
// the protected folder after ignoring it there (pytest would load it), a
// new folder in it, and a file a wildcard pattern protects deep inside an
// ignored folder are all removed; ignored files nothing protects stay.
TEST_F(ProtectedRestoreTest, IgnoredFilesInProtectedPlacesAreRemovedToo) {
  tree_.write(wt_ + ".gitignore", "*.o\nconftest.py\nsnapshots/\nnode_modules/\n");
  tree_.write(wt_ + "tests/conftest.py",
              "def pytest_collection_modifyitems(items): items[:] = []\n");
  tree_.write(wt_ + "tests/snapshots/a.snap", "fake\n");
  tree_.write(wt_ + "node_modules/pkg/deep/x.snap", "fake\n");
  tree_.write(wt_ + "node_modules/pkg/index.js", "module.exports = 1\n");
  tree_.write(wt_ + "src/main.o", "build output\n");
  auto restored = restore({"tests", "**/*.snap"});
  ASSERT_TRUE(restored) << restored.error().message;
  EXPECT_EQ(described(*restored),
            (std::vector<std::string>{"node_modules/pkg/deep/x.snap added",
                                      "tests/conftest.py added", "tests/snapshots added"}));
  EXPECT_FALSE(exists("tests/conftest.py"));
  EXPECT_FALSE(exists("tests/snapshots"));
  EXPECT_FALSE(exists("node_modules/pkg/deep/x.snap"));
  EXPECT_TRUE(exists("node_modules/pkg/index.js"));
  EXPECT_TRUE(exists("src/main.o"));
  EXPECT_TRUE(exists(".gitignore")) << "not protected: the model's to change";
}

// A new folder in a protected place is removed whole, links in it removed
// and not followed; one nested deeper than the removal follows fails the
// restore (and so the loop) rather than holding a descriptor per level.
TEST_F(ProtectedRestoreTest, ANewNestedFolderGoesWholeAndATooDeepOneFailsClosed) {
  tree_.write(wt_ + "tests/new/a/b/c.sh", "exit 0\n");
  tree_.write("outside/keep.txt", "kept\n");
  ASSERT_EQ(::symlink(tree_.path("outside").c_str(), tree_.path(wt_ + "tests/new/a/out").c_str()),
            0);
  auto restored = restore();
  ASSERT_TRUE(restored) << restored.error().message;
  EXPECT_FALSE(exists("tests/new"));
  EXPECT_EQ(tree_.read("outside/keep.txt"), "kept\n");

  std::string deep = wt_ + "tests/deep";
  for (int i = 0; i < 300; ++i)
    deep += "/d";
  tree_.write(deep.substr(0) + "/x.sh", "exit 0\n");
  auto refused = restore();
  ASSERT_FALSE(refused);
  EXPECT_NE(refused.error().message.find("nests more than 256 folders deep"), std::string::npos)
      << refused.error().message;
}

// The protected folder replaced by a link to the model's own tests, under
// either form of pattern, and a repository made inside it: the link and the
// repository go, the folder comes back as the base commit has it, and
// nothing the link pointed to is touched.
TEST_F(ProtectedRestoreTest, AProtectedFolderReplacedByALinkComesBack) {
  for (const std::string pattern : {"tests", "tests/**"}) {
    tree_.write("fake/check.sh", "exit 0\n");
    ASSERT_EQ(std::system(("rm -rf '" + tree_.path(wt_ + "tests") + "'").c_str()), 0);
    ASSERT_EQ(::symlink(tree_.path("fake").c_str(), tree_.path(wt_ + "tests").c_str()), 0);
    auto restored = restore({pattern});
    ASSERT_TRUE(restored) << pattern << ": " << restored.error().message;
    struct stat st {};
    ASSERT_EQ(::lstat(tree_.path(wt_ + "tests").c_str(), &st), 0);
    EXPECT_TRUE(S_ISDIR(st.st_mode)) << pattern;
    EXPECT_EQ(read("tests/check.sh"), "exit 1\n") << pattern;
    EXPECT_EQ(read("tests/other_test.sh"), "exit 0\n") << pattern;
    std::ifstream fake(tree_.path("fake/check.sh"));
    EXPECT_TRUE(fake.good()) << pattern << ": the link was followed";
    auto again = restore({pattern});
    ASSERT_TRUE(again) << again.error().message;
    EXPECT_TRUE(again->empty()) << pattern;
  }
  must_git(tree_.path(wt_ + "tests"), {"init", "-q", "nested"});
  tree_.write(wt_ + "tests/nested/pass.sh", "exit 0\n");
  auto restored = restore();
  ASSERT_TRUE(restored) << restored.error().message;
  EXPECT_EQ(described(*restored), (std::vector<std::string>{"tests/nested added"}));
  EXPECT_FALSE(exists("tests/nested"));
}

TEST(ProtectedPaths, OnlyAPatternThatMayReachBeneathAFolderLooksIntoIt) {
  const ProtectedPaths tests = compiled({"tests/**", "spec/unit/*_spec.rb"});
  EXPECT_TRUE(tests.may_protect_beneath("tests"));
  EXPECT_TRUE(tests.may_protect_beneath("tests/deep"));
  EXPECT_TRUE(tests.may_protect_beneath("spec"));
  EXPECT_TRUE(tests.may_protect_beneath("spec/unit"));
  EXPECT_FALSE(tests.may_protect_beneath("node_modules"));
  EXPECT_FALSE(tests.may_protect_beneath("testsuite"));
  EXPECT_FALSE(tests.may_protect_beneath("build"));
  EXPECT_TRUE(compiled({"**/*.snap"}).may_protect_beneath("node_modules"));
  EXPECT_TRUE(compiled({"t*/x"}).may_protect_beneath("anything"));
  EXPECT_FALSE(compiled({"Makefile"}).may_protect_beneath("src"));
}

TEST_F(ProtectedRestoreTest, WithoutABaseCommitNothingCanBeCheckedAndItSaysSo) {
  const ProtectedPaths paths = compiled({"tests"});
  auto restored = loops::restore_protected(info_, "", guard_of(paths));
  ASSERT_FALSE(restored);
  EXPECT_NE(restored.error().message.find("no base commit"), std::string::npos);
}

}  // namespace
}  // namespace loopr::test
