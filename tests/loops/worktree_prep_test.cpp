// bring_into_worktree (loops/git/worktree_prep.hpp) against real git and real
// make: what a new worktree is given from the user's checkout or from its
// parent's worktree, that nothing in it leads back into the checkout, that
// mtimes make a copied build up to date, and that a CMake build folder is
// relocated.
#include "loops/git/worktree_prep.hpp"

#include <fcntl.h>
#include <gtest/gtest.h>
#include <linux/fs.h>
#include <sys/ioctl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cstdlib>
#include <string>

#include "loops/git/worktrees.hpp"
#include "tests/loops/git_fixture.hpp"

namespace loopr::test {
namespace {

using loops::add_worktree;
using loops::bring_into_worktree;
using loops::CopyLimits;
using loops::WorktreeInfo;

struct stat stat_of(const std::string& path) {
  struct stat st {};
  EXPECT_EQ(::lstat(path.c_str(), &st), 0) << path;
  return st;
}

std::string link_target(const std::string& path) {
  char buffer[4096];
  const ssize_t n = ::readlink(path.c_str(), buffer, sizeof buffer);
  return n < 0 ? std::string() : std::string(buffer, static_cast<std::size_t>(n));
}

// `sh -c command` in `cwd`; its exit code.
int shell(const std::string& cwd, const std::string& command) {
  const std::string line = "cd '" + cwd + "' && (" + command + ") >/dev/null 2>&1";
  const int status = std::system(line.c_str());
  return WIFEXITED(status) ? WEXITSTATUS(status) : -1;
}

class WorktreePrepTest : public ::testing::Test {
 protected:
  void SetUp() override {
    repo_ = make_repo(tree_);
    tree_.write("repo/.gitignore", "node_modules/\nbuild/\n.env\n*.o\nhello\n");
    must_git(repo_, {"add", "-A"});
    must_git(repo_, {"commit", "-q", "-m", "ignore"});
  }

  WorktreeInfo worktree(const std::string& name, const std::string& branch,
                        const std::string& base = "") {
    auto info = add_worktree(repo_, tree_.path("wt/" + name), branch, base);
    EXPECT_TRUE(info) << (info ? "" : info.error().message);
    return info ? *info : WorktreeInfo{};
  }

  TempTree tree_;
  std::string repo_;
};

TEST_F(WorktreePrepTest, IncludeCopiesIgnoredFilesWithModesMtimesAndLinks) {
  tree_.write("repo/node_modules/nyc/cli.sh", "#!/bin/sh\nexec \"$@\"\n");
  ASSERT_EQ(::chmod(tree_.path("repo/node_modules/nyc/cli.sh").c_str(), 0755), 0);
  ASSERT_EQ(::mkdir(tree_.path("repo/node_modules/.bin").c_str(), 0755), 0);
  ASSERT_EQ(::symlink("../nyc/cli.sh", tree_.path("repo/node_modules/.bin/nyc").c_str()), 0);
  tree_.write("repo/.env", "TOKEN=x\n");
  tree_.write("repo/build/out.txt", "orig\n");
  // An absolute link into the checkout, and a relative one climbing out of it.
  ASSERT_EQ(
      ::symlink(tree_.path("repo/build/out.txt").c_str(), tree_.path("repo/build/abs").c_str()), 0);
  ASSERT_EQ(::symlink("../../repo/build/out.txt", tree_.path("repo/build/climb").c_str()), 0);
  const struct timespec old_times[2] = {{1000000000, 0}, {1000000000, 0}};
  ASSERT_EQ(::utimensat(AT_FDCWD, tree_.path("repo/build/out.txt").c_str(), old_times, 0), 0);

  const WorktreeInfo wt = worktree("c1", "loop/c1");
  auto report = bring_into_worktree(wt, {"node_modules", ".env", "build/", "missing*"}, "");
  ASSERT_TRUE(report) << report.error().message;
  EXPECT_EQ(report->entries, (std::vector<std::string>{".env", "build", "node_modules"}));
  EXPECT_EQ(report->files, 3u);
  EXPECT_EQ(report->symlinks, 3u);
  EXPECT_EQ(report->symlinks_repointed, 2u);
  ASSERT_FALSE(report->notes.empty());
  EXPECT_NE(report->notes[0].find("missing*"), std::string::npos);

  // The tool runs from the worktree, through its relative link.
  EXPECT_EQ(link_target(wt.path + "/node_modules/.bin/nyc"), "../nyc/cli.sh");
  EXPECT_EQ(stat_of(wt.path + "/node_modules/nyc/cli.sh").st_mode & 0777, 0755u);
  EXPECT_EQ(shell(wt.path, "node_modules/.bin/nyc true"), 0);
  // Copies, never hard links; mtimes kept.
  const struct stat copied = stat_of(wt.path + "/build/out.txt");
  const struct stat original = stat_of(tree_.path("repo/build/out.txt"));
  EXPECT_NE(copied.st_ino, original.st_ino);
  EXPECT_EQ(copied.st_nlink, 1u);
  EXPECT_EQ(copied.st_mtim.tv_sec, 1000000000);
  // Links point into the worktree, never back into the checkout.
  EXPECT_EQ(link_target(wt.path + "/build/abs"), wt.path + "/build/out.txt");
  EXPECT_EQ(link_target(wt.path + "/build/climb"), wt.path + "/build/out.txt");
  // Writing through them leaves the checkout's file alone.
  EXPECT_EQ(shell(wt.path, "echo changed > build/abs && echo changed > build/climb"), 0);
  EXPECT_EQ(tree_.read("repo/build/out.txt"), "orig\n");
  EXPECT_EQ(tree_.read("wt/c1/build/out.txt"), "changed\n");
  // The worktree's own .git file is untouched.
  EXPECT_EQ(stat_of(wt.path + "/.git").st_mode & S_IFMT, static_cast<unsigned>(S_IFREG));
}

TEST_F(WorktreePrepTest, APatternNeverLeavesTheCheckoutThroughALink) {
  tree_.write("outside/secret/key", "secret\n");
  ASSERT_EQ(::symlink(tree_.path("outside/secret").c_str(), tree_.path("repo/linked").c_str()), 0);
  const WorktreeInfo wt = worktree("c2", "loop/c2");
  auto report = bring_into_worktree(wt, {"linked/*", "linked"}, "");
  ASSERT_TRUE(report) << report.error().message;
  // "linked/*" reaches nothing; "linked" is copied as the link it is.
  EXPECT_EQ(stat_of(wt.path + "/linked").st_mode & S_IFMT, static_cast<unsigned>(S_IFLNK));
  EXPECT_EQ(report->files, 0u);
}

// Worktrees made inside the checkout (the repository is the worktree root):
// a pattern that matches their folder copies neither it nor the worktree.
TEST_F(WorktreePrepTest, TheWorktreesFolderInsideTheCheckoutIsNeverCopied) {
  auto inside = add_worktree(repo_, tree_.path("repo/.loopr-worktrees/c8"), "loop/c8", "");
  ASSERT_TRUE(inside) << inside.error().message;
  auto another = add_worktree(repo_, tree_.path("repo/.loopr-worktrees/c9"), "loop/c9", "");
  ASSERT_TRUE(another) << another.error().message;
  tree_.write("repo/.loopr-worktrees/c9/secret.txt", "another loop's\n");
  tree_.write("repo/.env", "A=1\n");
  auto report = bring_into_worktree(*inside, {".*"}, "");
  ASSERT_TRUE(report) << report.error().message;
  EXPECT_TRUE(tree_.exists("repo/.loopr-worktrees/c8/.env"));
  EXPECT_FALSE(tree_.exists("repo/.loopr-worktrees/c8/.loopr-worktrees"));
  EXPECT_EQ(report->files, 1u) << report->to_json().dump(2);
}

TEST_F(WorktreePrepTest, TrackedFilesAreNeverOverwritten) {
  tree_.write("repo/README.md", "the user's uncommitted edit\n");
  const WorktreeInfo wt = worktree("c3", "loop/c3");
  auto report = bring_into_worktree(wt, {"README.md", "*.md"}, "");
  ASSERT_TRUE(report) << report.error().message;
  EXPECT_EQ(tree_.read("wt/c3/README.md"), "hello\n");
  EXPECT_GE(report->skipped_tracked, 1u);
}

// A real Makefile: built in the checkout, the worktree with the objects
// brought in and mtimes aligned has nothing to rebuild; without alignment
// (a plain checkout) make would rebuild everything.
TEST_F(WorktreePrepTest, MakeInTheNewWorktreeRebuildsNothing) {
  tree_.write("repo/Makefile",
              "hello: hello.o util.o\n\tcc -o hello hello.o util.o\n"
              "%.o: %.c util.h\n\tcc -c $< -o $@\n");
  tree_.write("repo/util.h", "int util(void);\n");
  tree_.write("repo/util.c", "#include \"util.h\"\nint util(void) { return 0; }\n");
  tree_.write("repo/hello.c", "#include \"util.h\"\nint main(void) { return util(); }\n");
  must_git(repo_, {"add", "-A"});
  must_git(repo_, {"commit", "-q", "-m", "sources"});
  // Sources older than the build, as in a checkout worked in for a while.
  ASSERT_EQ(shell(repo_, "touch -d '2020-01-01' Makefile util.h util.c hello.c && make"), 0);
  ASSERT_EQ(shell(repo_, "make -q"), 0);

  const WorktreeInfo cold = worktree("cold", "loop/cold");
  ASSERT_EQ(shell(cold.path, "cp -p ../../repo/*.o ../../repo/hello . && make -q"), 1)
      << "a plain copy should look stale";

  const WorktreeInfo wt = worktree("warm", "loop/warm");
  auto report = bring_into_worktree(wt, {"*.o", "hello"}, "");
  ASSERT_TRUE(report) << report.error().message;
  EXPECT_EQ(report->files, 3u);
  EXPECT_GE(report->mtimes_aligned, 4u);
  EXPECT_EQ(shell(wt.path, "make -q"), 0) << "make would rebuild something";
  // An edit is still seen.
  EXPECT_EQ(shell(wt.path, "sleep 0.01; touch util.c; make -q"), 1);
}

// A child's worktree gets its parent's ignored files (build outputs) from the
// parent's worktree, not from the checkout.
TEST_F(WorktreePrepTest, AChildGetsItsParentsBuildOutputs) {
  tree_.write("repo/build/from-checkout.txt", "checkout\n");
  const WorktreeInfo parent = worktree("p1", "loop/p1");
  tree_.write("wt/p1/build/lib.a", "built by the parent\n");
  tree_.write("wt/p1/gen/config.h", "#define X 1\n");
  tree_.write("wt/p1/.gitignore", "node_modules/\nbuild/\n.env\n*.o\nhello\ngen/\n");
  must_git(parent.path, {"commit", "-q", "-am", "ignore gen"});

  const WorktreeInfo child = worktree("c4", "loop/c4", "loop/p1");
  auto report = bring_into_worktree(child, {"build"}, "loop/p1");
  ASSERT_TRUE(report) << report.error().message;
  EXPECT_EQ(report->source, parent.path);
  EXPECT_EQ(tree_.read("wt/c4/build/lib.a"), "built by the parent\n");
  EXPECT_EQ(tree_.read("wt/c4/gen/config.h"), "#define X 1\n");
  EXPECT_FALSE(tree_.exists("wt/c4/build/from-checkout.txt"));
}

// A CMake build folder names the checkout's path: rewritten to the
// worktree's, mtimes kept; binary files are left and said so.
TEST_F(WorktreePrepTest, ACMakeBuildFolderIsRelocated) {
  tree_.write("repo/build/CMakeCache.txt", "CMAKE_HOME_DIRECTORY:INTERNAL=" + repo_ +
                                               "\nproj_BINARY_DIR:STATIC=" + repo_ +
                                               "/build\nOTHER=" + repo_ + "2/x\n");
  tree_.write("repo/build/CMakeFiles/x.dir/depend.make", "x.o: " + repo_ + "/x.c\n");
  tree_.write("repo/build/.ninja_deps", std::string("deps\0", 5) + repo_ + "/x.c");
  // An executable whose RUNPATH names the checkout's build folder, and an
  // object file whose debug info names a source.
  std::string elf(
      "\x7f"
      "ELF",
      4);
  elf += std::string(12, '\1');
  elf += std::string("\2\0", 2) + "RUNPATH " + repo_ + "/build";
  tree_.write("repo/build/tool", elf);
  std::string object = elf;
  object[16] = '\1';
  tree_.write("repo/build/x.o", object);
  const struct timespec old_times[2] = {{1000000000, 0}, {1000000000, 0}};
  ASSERT_EQ(::utimensat(AT_FDCWD, tree_.path("repo/build/CMakeCache.txt").c_str(), old_times, 0),
            0);

  const WorktreeInfo wt = worktree("c5", "loop/c5");
  auto report = bring_into_worktree(wt, {"build"}, "");
  ASSERT_TRUE(report) << report.error().message;
  EXPECT_EQ(report->relocated, (std::vector<std::string>{"build"}));
  EXPECT_EQ(report->files_relocated, 2u);
  EXPECT_EQ(tree_.read("wt/c5/build/CMakeCache.txt"), "CMAKE_HOME_DIRECTORY:INTERNAL=" + wt.path +
                                                          "\nproj_BINARY_DIR:STATIC=" + wt.path +
                                                          "/build\nOTHER=" + repo_ + "2/x\n");
  EXPECT_EQ(tree_.read("wt/c5/build/CMakeFiles/x.dir/depend.make"), "x.o: " + wt.path + "/x.c\n");
  EXPECT_EQ(stat_of(wt.path + "/build/CMakeCache.txt").st_mtim.tv_sec, 1000000000);
  EXPECT_EQ(report->binaries_removed, 1u);
  EXPECT_FALSE(tree_.exists("wt/c5/build/tool"));
  EXPECT_EQ(tree_.read("wt/c5/build/x.o"), object);
  bool said = false;
  for (const auto& n : report->notes)
    said = said || n.find(".ninja_deps") != std::string::npos;
  EXPECT_TRUE(said);
  // The checkout's build folder is unchanged.
  EXPECT_NE(tree_.read("repo/build/CMakeCache.txt").find(repo_ + "/build"), std::string::npos);
}

}  // namespace
}  // namespace loopr::test

namespace loopr::test {
namespace {

// A real program linked to a shared library of the build folder, its
// RUNPATH the checkout's build folder: in the worktree it runs from the
// worktree's library ($ORIGIN), the checkout's build folder gone, mtime kept.
TEST_F(WorktreePrepTest, ARunpathIntoTheCheckoutIsRepointedInPlace) {
  tree_.write("repo/build/CMakeCache.txt", "CMAKE_HOME_DIRECTORY:INTERNAL=" + repo_ + "\n");
  tree_.write("repo/build/lib.c", "int answer(void) { return 42; }\n");
  tree_.write("repo/build/main.c", "int answer(void);\nint main(void) { return answer() - 42; }\n");
  ASSERT_EQ(shell(repo_ + "/build",
                  "cc -shared -fPIC -o libanswer.so lib.c && mkdir -p tests && "
                  "cc -o tests/prog main.c -L. -lanswer -Wl,--enable-new-dtags -Wl,-rpath," +
                      repo_ + "/build && tests/prog"),
            0);
  const struct timespec old_times[2] = {{1000000000, 0}, {1000000000, 0}};
  ASSERT_EQ(::utimensat(AT_FDCWD, tree_.path("repo/build/tests/prog").c_str(), old_times, 0), 0);

  const WorktreeInfo wt = worktree("c6", "loop/c6");
  auto report = bring_into_worktree(wt, {"build"}, "");
  ASSERT_TRUE(report) << report.error().message;
  EXPECT_EQ(report->runpaths_rewritten, 1u);
  EXPECT_EQ(report->binaries_removed, 0u);
  EXPECT_EQ(stat_of(wt.path + "/build/tests/prog").st_mtim.tv_sec, 1000000000);
  ASSERT_EQ(::rename(tree_.path("repo/build").c_str(), tree_.path("repo/build.gone").c_str()), 0);
  EXPECT_EQ(shell(wt.path + "/build", "tests/prog"), 0);
  EXPECT_EQ(shell(wt.path, "readelf -d build/tests/prog | grep -q 'ORIGIN/\\.\\.'"), 0);
}

// Worktrees inside the checkout: a pattern that names a path inside
// another loop's worktree (or goes through the folder of all worktrees)
// reaches nothing of it.
TEST_F(WorktreePrepTest, APatternNeverReachesIntoAnotherLoopsWorktree) {
  auto inside = add_worktree(repo_, tree_.path("repo/.loopr-worktrees/c8"), "loop/c8", "");
  ASSERT_TRUE(inside) << inside.error().message;
  auto another = add_worktree(repo_, tree_.path("repo/.loopr-worktrees/c9"), "loop/c9", "");
  ASSERT_TRUE(another) << another.error().message;
  tree_.write("repo/.loopr-worktrees/c9/build/secret.txt", "another loop's\n");
  auto report = bring_into_worktree(*inside,
                                    {".loopr-worktrees/c9/build", ".loopr-worktrees/*/build",
                                     ".loopr-worktrees/c9/*", ".loopr-worktrees/c8/build"},
                                    "");
  ASSERT_TRUE(report) << report.error().message;
  EXPECT_FALSE(tree_.exists("repo/.loopr-worktrees/c8/.loopr-worktrees"));
  EXPECT_FALSE(tree_.exists("repo/.loopr-worktrees/c8/build"));
  EXPECT_EQ(report->files, 0u) << report->to_json().dump(2);
  EXPECT_TRUE(report->entries.empty()) << report->to_json().dump(2);
}

// A nested repository's .git (a dependency cloned into node_modules) is
// never copied, nor is a pattern naming the top or a .git honoured.
TEST_F(WorktreePrepTest, NoGitFolderAndNoPatternForTheTopIsEverCopied) {
  tree_.write("repo/node_modules/dep/index.js", "module.exports = 1;\n");
  tree_.write("repo/node_modules/dep/.git/config", "[core]\n");
  tree_.write("repo/node_modules/sub/.git", "gitdir: " + repo_ + "/.git\n");
  tree_.write("repo/.env", "A=1\n");
  const WorktreeInfo wt = worktree("c10", "loop/c10");
  auto report =
      bring_into_worktree(wt, {"node_modules", ".", "./.env", "node_modules/dep/.git"}, "");
  ASSERT_TRUE(report) << report.error().message;
  EXPECT_EQ(tree_.read("wt/c10/node_modules/dep/index.js"), "module.exports = 1;\n");
  EXPECT_FALSE(tree_.exists("wt/c10/node_modules/dep/.git"));
  EXPECT_FALSE(tree_.exists("wt/c10/node_modules/sub/.git"));
  EXPECT_FALSE(tree_.exists("wt/c10/.env"));  // only through "./.env", refused
  EXPECT_EQ(report->files, 1u) << report->to_json().dump(2);
  int refused = 0;
  for (const auto& n : report->notes)
    refused += n.find("names the top, a .git or a parent") != std::string::npos ? 1 : 0;
  EXPECT_EQ(refused, 3) << report->to_json().dump(2);
}

// Whether this file system shares blocks between files (FICLONE): there a
// copy costs no space and is not counted against the limits.
bool reflink_works(const std::string& folder) {
  const std::string a = folder + "/.probe-a", b = folder + "/.probe-b";
  const int in = ::open(a.c_str(), O_RDWR | O_CREAT | O_TRUNC | O_CLOEXEC, 0600);
  const int out = ::open(b.c_str(), O_RDWR | O_CREAT | O_TRUNC | O_CLOEXEC, 0600);
  const bool works =
      in >= 0 && out >= 0 && ::write(in, "x", 1) == 1 && ::ioctl(out, FICLONE, in) == 0;
  if (in >= 0) ::close(in);
  if (out >= 0) ::close(out);
  ::unlink(a.c_str());
  ::unlink(b.c_str());
  return works;
}

// A sparse file (a parent loop's model can make one of any size) is copied
// with its holes: the copy holds what the file holds, not its size.
TEST_F(WorktreePrepTest, ASparseFileStaysSparse) {
  tree_.write("repo/build/big.bin", "");
  const std::string big = tree_.path("repo/build/big.bin");
  {
    const int fd = ::open(big.c_str(), O_WRONLY | O_CLOEXEC);
    ASSERT_GE(fd, 0);
    ASSERT_EQ(::ftruncate(fd, off_t{4} << 30), 0);  // 4 GiB
    ASSERT_EQ(::pwrite(fd, "data in the middle", 18, off_t{1} << 30), 18);
    ::close(fd);
  }
  const WorktreeInfo wt = worktree("c11", "loop/c11");
  auto report = bring_into_worktree(wt, {"build/"}, "");
  ASSERT_TRUE(report) << report.error().message;
  const struct stat copied = stat_of(wt.path + "/build/big.bin");
  EXPECT_EQ(copied.st_size, off_t{4} << 30);
  EXPECT_LT(512 * static_cast<std::uint64_t>(copied.st_blocks), std::uint64_t{16} << 20);
  const int fd = ::open((wt.path + "/build/big.bin").c_str(), O_RDONLY | O_CLOEXEC);
  ASSERT_GE(fd, 0);
  char bytes[18] = {};
  EXPECT_EQ(::pread(fd, bytes, sizeof bytes, off_t{1} << 30), 18);
  EXPECT_EQ(std::string(bytes, sizeof bytes), "data in the middle");
  ::close(fd);
}

// What a copy writes counts against the byte limit, and no copy leaves the
// file system with less than the reserve free: either stops the preparation
// with an error that names the limit (a reflinked copy costs nothing).
TEST_F(WorktreePrepTest, CopiesStopAtTheByteLimitAndAtTheFreeSpaceReserve) {
  // Bytes no file system compresses away (the copy must take real blocks).
  std::string bytes(256 * 1024, '\0');
  std::uint32_t state = 2463534242u;
  for (char& c : bytes) {
    state ^= state << 13, state ^= state >> 17, state ^= state << 5;
    c = static_cast<char>(state & 0xff);
  }
  tree_.write("repo/build/a.bin", bytes);
  const WorktreeInfo wt = worktree("c12", "loop/c12");
  const bool shares = reflink_works(wt.path);

  CopyLimits small;
  small.max_bytes = 64 * 1024;
  auto capped = bring_into_worktree(wt, {"build"}, "", small);
  if (shares) {
    ASSERT_TRUE(capped) << capped.error().message;
    EXPECT_EQ(capped->reflinked, 1u);
  } else {
    ASSERT_FALSE(capped);
    EXPECT_NE(capped.error().message.find("pass 65536 bytes at build/a.bin"), std::string::npos)
        << capped.error().message;
    EXPECT_NE(capped.error().hint.find("copy_limit_mb"), std::string::npos) << capped.error().hint;
    EXPECT_FALSE(tree_.exists("wt/c12/build/a.bin"));
  }

  const WorktreeInfo other = worktree("c13", "loop/c13");
  CopyLimits reserve;
  reserve.min_free_bytes = std::uint64_t{1} << 60;  // more than any disk has
  auto full = bring_into_worktree(other, {"build"}, "", reserve);
  if (shares) {
    ASSERT_TRUE(full) << full.error().message;
  } else {
    ASSERT_FALSE(full);
    EXPECT_NE(full.error().message.find("would leave less than"), std::string::npos)
        << full.error().message;
    EXPECT_FALSE(tree_.exists("wt/c13/build/a.bin"));
  }

  auto plenty = bring_into_worktree(worktree("c14", "loop/c14"), {"build"}, "");
  ASSERT_TRUE(plenty) << plenty.error().message;
  EXPECT_EQ(tree_.read("wt/c14/build/a.bin"), bytes);
}

// Patterns whose matches nest ("a", "a-b", "a/c", sorted so) copy each
// file once.
TEST_F(WorktreePrepTest, NestedMatchesAreCopiedOnce) {
  tree_.write("repo/node_modules/c/x.js", "1\n");
  tree_.write("repo/node_modules-b/y.js", "2\n");
  const WorktreeInfo wt = worktree("c16", "loop/c16");
  auto report = bring_into_worktree(wt, {"node_modules", "node_modules-b", "node_modules/c"}, "");
  ASSERT_TRUE(report) << report.error().message;
  EXPECT_EQ(report->files, 2u) << report->to_json().dump(2);
  EXPECT_EQ(report->entries, (std::vector<std::string>{"node_modules", "node_modules-b"}));
}

// An executable of a build folder that names the checkout only in a string
// (no RUNPATH there) is kept as it is: nothing in it needs moving.
TEST_F(WorktreePrepTest, AnExecutableThatOnlyNamesTheCheckoutIsKept) {
  tree_.write("repo/build/CMakeCache.txt", "CMAKE_HOME_DIRECTORY:INTERNAL=" + repo_ + "\n");
  tree_.write("repo/build/main.c",
              "#include <stdio.h>\nint main(void) { puts(\"" + repo_ + "/data\"); return 0; }\n");
  ASSERT_EQ(shell(repo_ + "/build", "cc -o prog main.c && ./prog"), 0);
  const std::string before = tree_.read("repo/build/prog");

  const WorktreeInfo wt = worktree("c15", "loop/c15");
  auto report = bring_into_worktree(wt, {"build"}, "");
  ASSERT_TRUE(report) << report.error().message;
  EXPECT_EQ(report->binaries_removed, 0u) << report->to_json().dump(2);
  EXPECT_EQ(report->runpaths_rewritten, 0u);
  ASSERT_TRUE(tree_.exists("wt/c15/build/prog"));
  EXPECT_EQ(tree_.read("wt/c15/build/prog"), before);
}

}  // namespace
}  // namespace loopr::test
