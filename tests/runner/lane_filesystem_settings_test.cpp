// Issue 12: a worktree root that holds looprd's own folders (a root of "~"
// with the configuration in ~/.config/loopr and the state in
// ~/.local/state/loopr), and a lane that cannot start because of a setting.
// The lane must start, the folders stay hidden from every job (also one
// whose worktree is the folder that holds them), and an error caused by a
// setting names it.
#include <gtest/gtest.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <stdexcept>

#include "tests/runner/runner_harness.hpp"

namespace loopr::test {
namespace {

using nlohmann::json;

// A folder laid out like a user's home, with looprd's three folders in it,
// made under `parent`: /var/tmp (outside the lane's private /tmp, where the
// lane once failed to build: "remount hidden folder read-only ... Invalid
// argument") or $TMPDIR (where hidden paths were once skipped, and a root
// bound over them showed their files).
class HomeLikeRoot {
 public:
  explicit HomeLikeRoot(const std::string& parent) {
    std::string pattern = parent + "/loopr-home-XXXXXX";
    if (::mkdtemp(pattern.data()) == nullptr) throw std::runtime_error("mkdtemp in " + parent);
    path_ = pattern;
    ::chmod(path_.c_str(), 0755);
    write(".config/loopr/loopr.toml", "api_key = \"secret-config\"\n");
    write(".local/state/loopr/store.db", "secret-state\n");
    write(".run/loopr/token", "secret-runtime\n");
    write("project/notes.txt", "visible\n");
  }
  ~HomeLikeRoot() {
    std::error_code ignored;
    std::filesystem::remove_all(path_, ignored);
  }
  HomeLikeRoot(const HomeLikeRoot&) = delete;
  HomeLikeRoot& operator=(const HomeLikeRoot&) = delete;

  const std::string& path() const { return path_; }
  std::string path(const std::string& relative) const { return path_ + "/" + relative; }

  // What looprd would run the lane with, this folder being the root and its
  // own folders in it, as $HOME and the XDG folders say.
  RunnerOptions options() const {
    RunnerOptions options;
    options.extra_args = {"--root",
                          path_,
                          "--hide-daemon-folder",
                          "runtime=" + path(".run/loopr"),
                          "--hide-daemon-folder",
                          "state=" + path(".local/state/loopr"),
                          "--hide-daemon-folder",
                          "config=" + path(".config/loopr")};
    options.env = {{"HOME", path_},
                   {"XDG_CONFIG_HOME", path(".config")},
                   {"XDG_STATE_HOME", path(".local/state")}};
    return options;
  }

 private:
  void write(const std::string& relative, const std::string& content) const {
    const std::filesystem::path file = path(relative);
    std::filesystem::create_directories(file.parent_path());
    std::ofstream(file, std::ios::binary) << content;
    // As root, jobs are nobody: the files must be readable to show they are
    // hidden, not merely unreadable.
    for (std::filesystem::path dir = file.parent_path(); dir.string().size() > path_.size();
         dir = dir.parent_path()) {
      ::chmod(dir.c_str(), 0755);
    }
    ::chmod(file.c_str(), 0644);
  }

  std::string path_;
};

std::string tmpdir() {
  const char* tmp = std::getenv("TMPDIR");
  return tmp != nullptr && *tmp != '\0' ? tmp : "/tmp";
}

// Runs `tool` in a job whose worktree (and cwd) is `worktree`.
proto::JobResult run_in(RunnerHarness& runner, const std::string& worktree, const std::string& tool,
                        json args) {
  static int next = 0;
  const std::string id = "settings-" + std::to_string(++next);
  proto::Job job = runner.job(id, tool, std::move(args));
  job.worktree = worktree;
  job.cwd = worktree;
  runner.send(job);
  for (;;) {
    auto result = runner.receive_a<proto::JobResult>();
    if (!result) {
      ADD_FAILURE() << "no result for " << tool << "; runner stderr: " << runner.runner_stderr();
      return {};
    }
    if (result->job_id == id) return *result;
  }
}

json run_shell_in(RunnerHarness& runner, const std::string& worktree, const std::string& command) {
  const auto result = run_in(runner, worktree, "run_command", {{"command", command}});
  EXPECT_EQ(result.status, proto::JobStatus::success)
      << (result.error ? *result.error : "") << " " << result.output << result.stderr_bytes;
  auto parsed = json::parse(result.output, nullptr, false);
  return parsed.is_discarded() ? json() : parsed;
}

std::string both_streams(const json& result) {
  return result.value("stdout", "") + result.value("stderr", "");
}

// The three folders are there, but empty and read-only, to a job whose
// worktree is `worktree`.
void expect_hidden_from(RunnerHarness& runner, const HomeLikeRoot& home,
                        const std::string& worktree) {
  for (const char* folder : {".config/loopr", ".local/state/loopr", ".run/loopr"}) {
    const auto listed = run_shell_in(runner, worktree, "ls -A " + home.path(folder) + " | wc -l");
    EXPECT_EQ(listed.value("stdout", ""), "0\n") << folder << ": " << both_streams(listed);
  }
  const auto read = run_shell_in(runner, worktree,
                                 "cat " + home.path(".config/loopr/loopr.toml") + " " +
                                     home.path(".local/state/loopr/store.db") + " " +
                                     home.path(".run/loopr/token") + "; echo status=$?");
  EXPECT_EQ(both_streams(read).find("secret"), std::string::npos) << both_streams(read);
  EXPECT_NE(both_streams(read).find("status=1"), std::string::npos) << both_streams(read);
  const auto found =
      run_shell_in(runner, worktree, "grep -rs secret " + home.path() + "; echo done");
  EXPECT_EQ(both_streams(found).find("secret-"), std::string::npos) << both_streams(found);
  const auto write = run_shell_in(
      runner, worktree, "echo x > " + home.path(".local/state/loopr/planted") + "; echo status=$?");
  EXPECT_EQ(both_streams(write).find("status=0"), std::string::npos) << both_streams(write);
  EXPECT_FALSE(std::filesystem::exists(home.path(".local/state/loopr/planted")));
}

class LaneFilesystemSettings : public testing::TestWithParam<std::string> {};

TEST_P(LaneFilesystemSettings, ARootHoldingLooprdsFoldersStartsAndTheyStayHidden) {
  const HomeLikeRoot home(GetParam() == "tmpdir" ? tmpdir() : GetParam());
  RunnerHarness runner(home.options());
  ASSERT_EQ(::waitpid(runner.pid(), nullptr, WNOHANG), 0)
      << "the lane did not start: " << runner.runner_stderr();

  // A job in a worktree under that root runs, and writes there.
  const auto in_project =
      run_shell_in(runner, home.path("project"), "cat notes.txt && echo made > made.txt");
  EXPECT_EQ(in_project.value("stdout", ""), "visible\n") << both_streams(in_project);
  EXPECT_TRUE(std::filesystem::exists(home.path("project/made.txt")));
  expect_hidden_from(runner, home, home.path("project"));

  // A job whose worktree is the folder that holds them ("~") sees its other
  // files, but not what is in looprd's folders: not by command, not by
  // read_file.
  const auto in_home =
      run_shell_in(runner, home.path(), "cat project/notes.txt && echo made > made-in-home.txt");
  EXPECT_EQ(in_home.value("stdout", ""), "visible\n") << both_streams(in_home);
  EXPECT_TRUE(std::filesystem::exists(home.path("made-in-home.txt")));
  expect_hidden_from(runner, home, home.path());
  const auto read_file =
      run_in(runner, home.path(), "read_file", {{"path", ".config/loopr/loopr.toml"}});
  EXPECT_EQ(read_file.output.find("secret"), std::string::npos) << read_file.output;
  EXPECT_NE(read_file.status, proto::JobStatus::success) << read_file.output;
  const auto listing =
      run_in(runner, home.path(), "list_directory", {{"path", ".local/state/loopr"}});
  EXPECT_EQ(listing.output.find("store.db"), std::string::npos) << listing.output;
}

INSTANTIATE_TEST_SUITE_P(Places, LaneFilesystemSettings, testing::Values("/var/tmp", "tmpdir"),
                         [](const auto& param_info) {
                           return param_info.param == "tmpdir" ? "TmpDir" : "VarTmp";
                         });

TEST(LaneFilesystemSettingsHidden, AHiddenPathInsideAWorktreeIsHiddenFromItsJobs) {
  TempTree root;
  root.write("wt/src/main.c", "int main() {}\n");
  root.write("wt/private/key", "secret-key\n");
  RunnerOptions options;
  options.extra_args = {"--root", root.root(), "--hide", root.path("wt/private")};
  RunnerHarness runner(options);
  ASSERT_EQ(::waitpid(runner.pid(), nullptr, WNOHANG), 0)
      << "the lane did not start: " << runner.runner_stderr();
  const std::string worktree = root.path("wt");
  const auto out = run_shell_in(runner, worktree,
                                "cat src/main.c; ls -A private | wc -l; cat private/key; "
                                "echo x > private/planted; echo status=$?");
  EXPECT_NE(both_streams(out).find("int main"), std::string::npos) << both_streams(out);
  EXPECT_EQ(both_streams(out).find("secret-key"), std::string::npos) << both_streams(out);
  EXPECT_NE(both_streams(out).find("\n0\n"), std::string::npos) << both_streams(out);
  EXPECT_EQ(both_streams(out).find("status=0"), std::string::npos) << both_streams(out);
  EXPECT_FALSE(root.exists("wt/private/planted"));
  const auto read_file = run_in(runner, worktree, "read_file", {{"path", "private/key"}});
  EXPECT_EQ(read_file.output.find("secret-key"), std::string::npos) << read_file.output;
  EXPECT_NE(read_file.status, proto::JobStatus::success) << read_file.output;
}

// A folder made under /var/tmp (outside the lane's private /tmp) with mode
// `mode`, removed with everything in it.
class VarTmpFolder {
 public:
  explicit VarTmpFolder(mode_t mode) {
    std::string pattern = "/var/tmp/loopr-roots-XXXXXX";
    if (::mkdtemp(pattern.data()) == nullptr) throw std::runtime_error("mkdtemp in /var/tmp");
    path_ = pattern;
    ::chmod(path_.c_str(), mode);
  }
  ~VarTmpFolder() {
    std::error_code ignored;
    std::filesystem::remove_all(path_, ignored);
  }
  VarTmpFolder(const VarTmpFolder&) = delete;
  VarTmpFolder& operator=(const VarTmpFolder&) = delete;
  std::string path(const std::string& relative) const { return path_ + "/" + relative; }
  // A worktree folder at `relative`, open to the jobs' uid (nobody as root).
  std::string worktree(const std::string& relative) const {
    const std::string dir = path(relative);
    std::filesystem::create_directories(dir);
    for (std::filesystem::path p = dir; p.string().size() > path_.size(); p = p.parent_path())
      ::chmod(p.c_str(), 0777);
    return dir;
  }

 private:
  std::string path_;
};

// Issue 25: a root inside another root, listed first, made every job fail
// ("make read-only: the cover of ...: Invalid argument"); either order must
// work, for jobs in the inner and in the outer root.
TEST(LaneFilesystemSettingsRoots, NestedRootsWorkInEitherOrder) {
  const VarTmpFolder base(0755);
  const std::string outer_wt = base.worktree("outer/wt");
  const std::string inner_wt = base.worktree("outer/inner/wt");
  for (const bool inner_first : {true, false}) {
    SCOPED_TRACE(inner_first ? "[inner, outer]" : "[outer, inner]");
    RunnerOptions options;
    const std::string inner = base.path("outer/inner");
    const std::string outer = base.path("outer");
    options.extra_args = inner_first ? std::vector<std::string>{"--root", inner, "--root", outer}
                                     : std::vector<std::string>{"--root", outer, "--root", inner};
    RunnerHarness runner(options);
    for (const std::string& worktree : {inner_wt, outer_wt}) {
      const auto out = run_shell_in(runner, worktree, "echo made > made.txt && cat made.txt");
      EXPECT_EQ(out.value("stdout", ""), "made\n") << worktree << ": " << both_streams(out);
      EXPECT_TRUE(std::filesystem::exists(worktree + "/made.txt")) << worktree;
      std::filesystem::remove(worktree + "/made.txt");
    }
    // Still private: a job of the outer root's worktree cannot see the inner one's.
    const auto peek = run_shell_in(runner, outer_wt, "ls " + inner_wt + " 2>&1; echo status=$?");
    EXPECT_EQ(both_streams(peek).find("status=0"), std::string::npos) << both_streams(peek);
  }
}

// Issue 25: a root inside a 0700 folder (as root, the runner is nobody and
// cannot pass through it) made every lane fail ("create mount point ...
// Permission denied"). The lane starts, jobs work in the root, and nothing
// else of the private folder shows.
TEST(LaneFilesystemSettingsRoots, ARootInsideAPrivateFolderWorks) {
  const VarTmpFolder private_folder(0700);
  { std::ofstream(private_folder.path("secret.txt")) << "private-secret\n"; }
  const std::string roots = private_folder.worktree("roots");
  const std::string worktree = private_folder.worktree("roots/wt");
  RunnerOptions options;
  options.extra_args = {"--root", roots};
  RunnerHarness runner(options);
  ASSERT_EQ(::waitpid(runner.pid(), nullptr, WNOHANG), 0)
      << "the lane did not start: " << runner.runner_stderr();
  const auto out = run_shell_in(runner, worktree, "echo made > made.txt && cat made.txt");
  EXPECT_EQ(out.value("stdout", ""), "made\n") << both_streams(out);
  EXPECT_TRUE(std::filesystem::exists(worktree + "/made.txt"));
  // As root the runner (nobody by then) could not pass through the folder:
  // the lane shows an empty cover in its place, so its other files are not
  // there. (An ordinary user owns the folder and passes through it; its
  // files are then as readable as the rest of the host.)
  if (::getuid() == 0) {
    const auto peek = run_shell_in(runner, worktree,
                                   "cat " + private_folder.path("secret.txt") + " 2>&1; echo done");
    EXPECT_EQ(both_streams(peek).find("private-secret"), std::string::npos) << both_streams(peek);
  }
}

// The runner's last line is what looprd shows (the lane's last_error, the
// calls it fails): it must name the setting, and not blame the machine.
TEST(LaneFilesystemSettingsErrors, AWritableRootThatIsAFileNamesTheSetting) {
  TempTree tree;
  tree.write("not-a-folder", "x");
  RunnerOptions options;
  options.handshake = false;
  options.extra_args = {"--root", tree.path("not-a-folder")};
  RunnerHarness runner(options);
  const int status = runner.wait_exit();
  ASSERT_TRUE(WIFEXITED(status)) << status;
  EXPECT_EQ(WEXITSTATUS(status), 3);
  std::string err = runner.runner_stderr();
  while (!err.empty() && err.back() == '\n')
    err.pop_back();
  const std::string last_line = err.substr(err.rfind('\n') + 1);
  EXPECT_NE(last_line.find(tree.path("not-a-folder")), std::string::npos) << err;
  EXPECT_NE(last_line.find("sandbox.worktree_roots"), std::string::npos) << err;
  EXPECT_EQ(last_line.find("Fix the machine"), std::string::npos) << err;
}

}  // namespace
}  // namespace loopr::test
