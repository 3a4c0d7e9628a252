// A trusted hook's process (hooks/host_process.hpp): its stdin, its exit,
// its environment, its timeout, and what it leaves running.
#include "hooks/host_process.hpp"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include "tests/support/temp_tree.hpp"

namespace loopr::hooks {
namespace {

using namespace std::chrono_literals;
using ::testing::HasSubstr;

TEST(HostProcess, TheHookReadsTheEventOnStdinAndItsExitIsKept) {
  test::TempTree tree;
  const HookRun run = run_on_host("cat; echo \"[$LOOPR_HOOK_EVENT]\" >&2; exit 2", "tool.before",
                                  "{\"event\":\"tool.before\"}", tree.root(), 10s);
  EXPECT_EQ(run.ended, HookRun::Ended::exited);
  EXPECT_EQ(run.exit_code, 2);
  EXPECT_EQ(run.out, "{\"event\":\"tool.before\"}");
  EXPECT_EQ(run.err, "[tool.before]\n");
}

TEST(HostProcess, ItRunsInTheFolderItIsGiven) {
  test::TempTree tree;
  const HookRun run = run_on_host("pwd", "loop.end", "", tree.root(), 10s);
  EXPECT_EQ(run.out, tree.root() + "\n");
}

TEST(HostProcess, AHookThatHangsIsKilledAtItsTimeout) {
  test::TempTree tree;
  const HookRun run =
      run_on_host("echo started; exec sleep 60", "tool.before", "", tree.root(), 300ms);
  EXPECT_EQ(run.ended, HookRun::Ended::timed_out);
  EXPECT_EQ(run.out, "started\n");
}

TEST(HostProcess, AHookThatCrashesEndsSignalled) {
  test::TempTree tree;
  const HookRun run = run_on_host("kill -SEGV $$", "tool.before", "", tree.root(), 10s);
  EXPECT_EQ(run.ended, HookRun::Ended::signalled);
  EXPECT_EQ(run.exit_code, 11);
}

TEST(HostProcess, WhatTheHookLeavesRunningIsNotWaitedFor) {
  test::TempTree tree;
  // The background sleep keeps stdout open; the hook has still ended.
  const HookRun run = run_on_host("sleep 30 & echo done; exit 0", "loop.end", "", tree.root(), 20s);
  EXPECT_EQ(run.ended, HookRun::Ended::exited);
  EXPECT_EQ(run.exit_code, 0);
  EXPECT_LT(run.duration_ms, 15000u);
}

TEST(HostProcess, WhatItPrintsIsKeptUpToTheCapAndTheRestIsDrained) {
  test::TempTree tree;
  const HookRun run =
      run_on_host("head -c 1000000 /dev/zero | tr '\\0' x", "tool.after", "", tree.root(), 20s);
  EXPECT_EQ(run.ended, HookRun::Ended::exited);
  EXPECT_EQ(run.exit_code, 0);
  EXPECT_EQ(run.out.size(), kMaxHookOutputBytes);
}

TEST(HostProcess, AFolderThatIsGoneIsAStartFailure) {
  const HookRun run = run_on_host("true", "loop.end", "", "/nonexistent/loopr-hook", 10s);
  EXPECT_EQ(run.ended, HookRun::Ended::not_started);
  EXPECT_THAT(run.why, HasSubstr("/nonexistent/loopr-hook"));
}

}  // namespace
}  // namespace loopr::hooks
