// looprctl daemon start | stop | status with a stand-in looprd: the
// looprctl-fake-daemon binary (copied next to a copy of looprctl, where
// `daemon start` looks for looprd) or small shell scripts.
#include <gtest/gtest.h>
#include <sys/stat.h>

#include <csignal>
#include <filesystem>

#include "tests/client/fake_daemon.hpp"
#include "tests/client/looprctl_run.hpp"
#include "tests/support/temp_tree.hpp"
#include "tests/support/text_checks.hpp"

namespace loopr::test {
namespace {

namespace fs = std::filesystem;

class DaemonCommandTest : public ::testing::Test {
 protected:
  DaemonCommandTest() : socket_(tree_.path("d.sock")), state_(tree_.path("state")) {}

  CtlRun ctl(std::vector<std::string> args, const std::string& binary = {}) {
    args.insert(args.begin(), {"--socket", socket_, "--state-dir", state_});
    CtlOptions options;
    options.binary = binary;
    options.config_dir = tree_.path("config");
    return run_looprctl(args, options);
  }

  // An executable shell script standing in for looprd.
  std::string script(const std::string& name, const std::string& body) {
    tree_.write(name, "#!/bin/sh\n" + body);
    ::chmod(tree_.path(name).c_str(), 0755);
    return tree_.path(name);
  }

  std::string log() { return tree_.read("state/looprd.log"); }

  TempTree tree_;
  std::string socket_;
  std::string state_;
};

TEST_F(DaemonCommandTest, StartRunsLooprdNextToLooprctlUntilStopStopsIt) {
  tree_.mkdir("bin");
  fs::copy_file(bin_path("looprctl"), tree_.path("bin/looprctl"));
  fs::copy_file(bin_path("looprctl-fake-daemon"), tree_.path("bin/looprd"));
  const std::string looprctl = tree_.path("bin/looprctl");

  const CtlRun start = ctl({"--config-dir", tree_.path("config"), "daemon", "start"}, looprctl);
  ASSERT_EQ(start.exit_code, 0) << start.err;
  EXPECT_TRUE(contains(start.out, "started")) << start.out;
  EXPECT_TRUE(contains(log(), "fake-looprd started with: --foreground --socket " + socket_ +
                                  " --config-dir " + tree_.path("config") + " --state-dir " +
                                  state_))
      << log();

  const CtlRun status = ctl({"daemon", "status"}, looprctl);
  EXPECT_EQ(status.exit_code, 0) << status.err;
  EXPECT_TRUE(contains(status.out, "is running")) << status.out;

  const CtlRun again = ctl({"daemon", "start"}, looprctl);
  EXPECT_EQ(again.exit_code, 0) << again.err;
  EXPECT_TRUE(contains(again.out, "already running")) << again.out;

  const CtlRun stop = ctl({"daemon", "stop"}, looprctl);
  EXPECT_EQ(stop.exit_code, 0) << stop.err;
  EXPECT_EQ(stop.out, "looprd stopped\n");

  const CtlRun after = ctl({"daemon", "status"}, looprctl);
  EXPECT_EQ(after.exit_code, 3);
  EXPECT_TRUE(contains(after.err, "hint: start it with: looprctl daemon start")) << after.err;
}

TEST_F(DaemonCommandTest, StartWithARunningDaemonSaysSoAndStartsNothing) {
  FakeDaemon running(socket_);
  running.start();
  const CtlRun run = ctl({"daemon", "start", "--looprd", tree_.path("no-such-looprd")});
  EXPECT_EQ(run.exit_code, 0) << run.err;
  EXPECT_TRUE(contains(run.out, "looprd fake-1.0 is already running on " + socket_)) << run.out;
  EXPECT_FALSE(tree_.exists("state/looprd.log"));
}

TEST_F(DaemonCommandTest, StartReportsALooprdThatExitsWithTheTailOfItsLog) {
  tree_.write("state/looprd.log", "an earlier run's line\n");
  const std::string looprd =
      script("looprd.sh", "echo 'loopr.toml:3: daemon.sockett: unknown key' >&2\nexit 1\n");
  const CtlRun run = ctl({"daemon", "start", "--looprd", looprd});
  EXPECT_EQ(run.exit_code, 1);
  EXPECT_TRUE(contains(run.err, "looprd exited with status 1 before it answered on " + socket_))
      << run.err;
  EXPECT_TRUE(contains(run.err, "loopr.toml:3: daemon.sockett: unknown key")) << run.err;
  EXPECT_FALSE(contains(run.err, "an earlier run's line")) << run.err;
  EXPECT_TRUE(contains(log(), "an earlier run's line\n")) << "the log is appended to";
}

TEST_F(DaemonCommandTest, StartGivesUpOnALooprdThatNeverAnswers) {
  const std::string pid_file = tree_.path("looprd.pid");
  const std::string looprd =
      script("looprd.sh", "echo $$ > " + pid_file + "\necho 'still loading'\nexec sleep 60\n");
  const CtlRun run = ctl({"daemon", "start", "--looprd", looprd, "--wait-ms", "300"});
  const std::string pid_text = tree_.read("looprd.pid");
  const pid_t pid = static_cast<pid_t>(std::stol(pid_text.empty() ? "0" : pid_text));
  if (pid > 0) ::kill(pid, SIGKILL);

  EXPECT_EQ(run.exit_code, 1);
  EXPECT_TRUE(contains(run.err, "did not answer on " + socket_)) << run.err;
  EXPECT_TRUE(contains(run.err, "still loading")) << run.err;
  EXPECT_TRUE(contains(run.err, "kill " + std::to_string(pid))) << run.err;
}

TEST_F(DaemonCommandTest, StartWithoutALooprdBinaryFails) {
  const CtlRun run = ctl({"daemon", "start", "--looprd", tree_.path("missing")});
  EXPECT_EQ(run.exit_code, 1);
  EXPECT_TRUE(contains(run.err, "cannot run looprd at " + tree_.path("missing"))) << run.err;
}

TEST_F(DaemonCommandTest, StopWhenNothingRunsSaysSo) {
  const CtlRun run = ctl({"daemon", "stop"});
  EXPECT_EQ(run.exit_code, 0) << run.err;
  EXPECT_TRUE(contains(run.out, "looprd is not running")) << run.out;
}

TEST_F(DaemonCommandTest, StopAsksForShutdownAndWaitsForTheSocketToGo) {
  FakeDaemon running(socket_);
  running.start();
  const CtlRun run = ctl({"--json", "daemon", "stop"});
  ASSERT_EQ(run.exit_code, 0) << run.err;
  EXPECT_EQ(nlohmann::json::parse(run.out)["stopped"], true);
  EXPECT_EQ(running.requests("daemon.shutdown").size(), 1u);
}

TEST_F(DaemonCommandTest, StatusWhenNothingRunsExitsThree) {
  const CtlRun run = ctl({"--json", "daemon", "status"});
  EXPECT_EQ(run.exit_code, 3);
  EXPECT_EQ(nlohmann::json::parse(run.out)["running"], false);
  EXPECT_TRUE(contains(run.err, socket_)) << run.err;
}

}  // namespace
}  // namespace loopr::test
