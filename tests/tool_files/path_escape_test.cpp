// Every way out of the worktree, tried on every file tool: each must end in
// path_outside_worktree (or a refusal that writes nothing), with the outside
// file unchanged.
#include <fcntl.h>
#include <linux/fs.h>
#include <stdio.h>
#include <sys/syscall.h>
#include <unistd.h>

#include <atomic>
#include <filesystem>
#include <thread>

#include "tests/tool_files/tool_fixture.hpp"

namespace loopr::test {
namespace {

using nlohmann::json;

class PathEscape : public ToolTest {
 protected:
  // Rounds of a symlink-swap race. The race is in the tool's own code, which
  // the inline and worker runs race the full number of times; a process per
  // call costs ~0.1 s under the sanitizers (~300 s for one of these tests),
  // so the process run races a tenth as often.
  int race_rounds(int rounds) const {
    return tools_.front_end() == FrontEnd::process ? rounds / 10 : rounds;
  }

  void SetUp() override {
    outside_.write("secret.txt", "outside\n");
    outside_.mkdir("dir");
  }

  // Every tool, pointed at `path`.
  void expect_all_refused(const std::string& path) {
    SCOPED_TRACE(path);
    const std::pair<ToolFn, json> calls[] = {
        {tool::read_file, {{"path", path}}},
        {tool::write_file, {{"path", path}, {"content", "pwned"}}},
        {tool::write_file, {{"path", path + "/new.txt"}, {"content", "pwned"}}},
        {tool::file_delete, {{"path", path}, {"recursive", true}}},
        {tool::list_directory, {{"path", path}}},
        {tool::edit_file, {{"path", path}, {"old_string", "outside"}, {"new_string", "pwned"}}},
        {tool::edit_file,
         {{"path", path + "/new.txt"}, {"old_string", ""}, {"new_string", "pwned"}}},
    };
    for (const auto& [tool, args] : calls) {
      const Error e = err(tool, args);
      EXPECT_EQ(e.code, errc::path_outside_worktree) << args.dump() << " -> " << e.message;
    }
    EXPECT_EQ(outside_.read("secret.txt"), "outside\n");
    EXPECT_FALSE(outside_.exists("dir/new.txt"));
  }
};

TEST_F(PathEscape, DotDot) {
  expect_all_refused("../" + std::string(std::filesystem::path(outside_.root()).filename()) +
                     "/secret.txt");
  expect_all_refused("sub/../../x");
}

TEST_F(PathEscape, AbsolutePathsOutside) {
  expect_all_refused(outside_.path("secret.txt"));
  expect_all_refused("/etc/hostname");
}

TEST_F(PathEscape, AbsolutePathsInsideAreAccepted) {
  tree_.write("in.txt", "inside\n");
  EXPECT_EQ(ok(tool::read_file, {{"path", tree_.path("in.txt")}})["content"], "     1|inside\n");
}

TEST_F(PathEscape, SymlinksOutOfTheTree) {
  outside_.write("dir/inner.txt", "outside\n");
  tree_.symlink(outside_.path("secret.txt"), "abs-file");
  tree_.symlink(outside_.path("dir"), "abs-dir");
  tree_.mkdir("nested");
  tree_.symlink("../../" + std::string(std::filesystem::path(outside_.root()).filename()) + "/dir",
                "nested/rel-dir");
  // Through a symlinked folder, every tool refuses.
  expect_all_refused("abs-dir/inner.txt");
  expect_all_refused("nested/rel-dir/inner.txt");
  // A symlink as the leaf: reading or listing it is refused; writes and edits
  // refuse the link itself and name its target; deleting removes only the
  // link. Never does anything reach the target.
  for (const std::string leaf : {"abs-file", "abs-dir", "nested/rel-dir"}) {
    SCOPED_TRACE(leaf);
    EXPECT_EQ(err(tool::read_file, {{"path", leaf}}).code, errc::path_outside_worktree);
    EXPECT_EQ(err(tool::list_directory, {{"path", leaf}}).code, errc::path_outside_worktree);
    const Error write = err(tool::write_file, {{"path", leaf}, {"content", "pwned"}});
    EXPECT_NE(write.message.find("is a symlink"), std::string::npos) << write.message;
    const Error edit =
        err(tool::edit_file, {{"path", leaf}, {"old_string", "outside"}, {"new_string", "pwned"}});
    EXPECT_NE(edit.message.find("is a symlink"), std::string::npos) << edit.message;
    EXPECT_EQ(ok(tool::file_delete, {{"path", leaf}, {"recursive", true}})["deleted"], "symlink");
  }
  EXPECT_EQ(outside_.read("secret.txt"), "outside\n");
  EXPECT_EQ(outside_.read("dir/inner.txt"), "outside\n");
}

TEST_F(PathEscape, ProcMagicLinks) {
  tree_.symlink("/proc/self/root", "magic");
  expect_all_refused("magic/etc");
  expect_all_refused("/proc/self/root/etc/hostname");
}

TEST_F(PathEscape, HardLinksAreTheSandboxsJob) {
  // openat2 cannot tell a hard link from any other name: a hard link to an
  // outside file inside the tree is read like any file. Creating one is what
  // the sandbox prevents (the worktree is its own mount in a job, so link()
  // across it fails with EXDEV; see the runner's attack suite, class 5).
  if (::link(outside_.path("secret.txt").c_str(), tree_.path("hard.txt").c_str()) != 0) {
    GTEST_SKIP() << "the test machine refuses the hard link itself (" << std::strerror(errno)
                 << "), which is the protection";
  }
  EXPECT_EQ(ok(tool::read_file, {{"path", "hard.txt"}})["content"], "     1|outside\n");
}

TEST_F(PathEscape, ASymlinkSwapRacingWritesNeverEscapes) {
  // One thread swaps `sub` between a real folder and a symlink to the outside
  // folder with renameat2(RENAME_EXCHANGE), atomically, as fast as it can;
  // this thread writes sub/file again and again. openat2 resolves the parent
  // beneath the root once, so every write lands inside or is refused.
  tree_.mkdir("sub");
  tree_.symlink(outside_.path("dir"), "swap");
  outside_.write("dir/file", "untouched\n");
  std::atomic<bool> stop{false};
  std::thread swapper([&] {
    const std::string a = tree_.path("sub");
    const std::string b = tree_.path("swap");
    while (!stop.load()) {
      ::syscall(SYS_renameat2, AT_FDCWD, a.c_str(), AT_FDCWD, b.c_str(), RENAME_EXCHANGE);
    }
  });
  int inside = 0;
  int refused = 0;
  for (int i = 0; i < race_rounds(3000); ++i) {
    auto result = call(tool::write_file, {{"path", "sub/file"}, {"content", "w"}});
    if (result) {
      ++inside;
    } else {
      EXPECT_TRUE(result.error().code == errc::path_outside_worktree ||
                  result.error().code == errc::not_found ||
                  result.error().code == errc::not_directory)
          << result.error().message;
      ++refused;
    }
  }
  stop = true;
  swapper.join();
  EXPECT_EQ(outside_.read("dir/file"), "untouched\n");
  EXPECT_FALSE(outside_.exists("dir/.file.loopr-0"));
  RecordProperty("writes_inside", inside);
  RecordProperty("writes_refused", refused);
}

TEST_F(PathEscape, ASymlinkSwapRacingEditsNeverEscapes) {
  // As above, with edit_file: the same text inside and outside, so an edit
  // that escaped would change the outside file. Each round flips the inside
  // file between "a" and "b"; whichever edit does not match is refused.
  tree_.mkdir("sub");
  tree_.write("sub/file", "a\n");
  tree_.symlink(outside_.path("dir"), "swap");
  outside_.write("dir/file", "a\n");
  // Without the race the same edits succeed (so refusals below are the race's).
  ok(tool::edit_file, {{"path", "sub/file"}, {"old_string", "a"}, {"new_string", "b"}});
  ok(tool::edit_file, {{"path", "sub/file"}, {"old_string", "b"}, {"new_string", "a"}});
  std::atomic<bool> stop{false};
  std::thread swapper([&] {
    const std::string a = tree_.path("sub");
    const std::string b = tree_.path("swap");
    while (!stop.load()) {
      ::syscall(SYS_renameat2, AT_FDCWD, a.c_str(), AT_FDCWD, b.c_str(), RENAME_EXCHANGE);
    }
  });
  int applied = 0;
  int refused = 0;
  for (int i = 0; i < race_rounds(1500); ++i) {
    for (const auto& [from, to] : {std::pair{"a", "b"}, std::pair{"b", "a"}}) {
      auto result =
          call(tool::edit_file, {{"path", "sub/file"}, {"old_string", from}, {"new_string", to}});
      if (result) {
        ++applied;
        continue;
      }
      const std::string& code = result.error().code;
      EXPECT_TRUE(code == errc::path_outside_worktree || code == errc::not_found ||
                  code == errc::not_directory || code == errc::no_match ||
                  code == errc::already_applied)
          << result.error().message;
      ++refused;
    }
  }
  stop = true;
  swapper.join();
  EXPECT_EQ(outside_.read("dir/file"), "a\n");
  EXPECT_EQ(std::distance(std::filesystem::directory_iterator(outside_.path("dir")),
                          std::filesystem::directory_iterator()),
            1)
      << "no temporary file was left outside";
  RecordProperty("edits_applied", applied);
  RecordProperty("edits_refused", refused);
}

}  // namespace
}  // namespace loopr::test
