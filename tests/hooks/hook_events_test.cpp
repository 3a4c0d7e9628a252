// What a hook's exit means, which hooks an event runs, and what a hook reads
// on stdin (hooks/hook_events.hpp).
#include "hooks/hook_events.hpp"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

namespace loopr::hooks {
namespace {

using nlohmann::json;
using ::testing::HasSubstr;

config::HookSettings hook(std::string event, std::vector<std::string> tools = {}) {
  config::HookSettings settings;
  settings.event = std::move(event);
  settings.tools = std::move(tools);
  settings.command = "./check.sh";
  settings.timeout_s = 5;
  settings.origin = {"/home/u/.config/loopr/loopr.toml", 12};
  return settings;
}

HookRun exited(int code, std::string out = {}, std::string err = {}) {
  HookRun run;
  run.ended = HookRun::Ended::exited;
  run.exit_code = code;
  run.out = std::move(out);
  run.err = std::move(err);
  return run;
}

TEST(HookEvents, AnEventRunsItsHooksInOrderAndTheToolFilterNarrowsThem) {
  const std::vector<config::HookSettings> hooks = {hook("tool.before", {"run_command"}),
                                                   hook("tool.after"), hook("tool.before"),
                                                   hook("loop.end")};
  const auto for_command = hooks_for(hooks, "tool.before", "run_command");
  ASSERT_EQ(for_command.size(), 2u);
  EXPECT_EQ(for_command[0], &hooks[0]);
  EXPECT_EQ(for_command[1], &hooks[2]);
  const auto for_read = hooks_for(hooks, "tool.before", "read_file");
  ASSERT_EQ(for_read.size(), 1u);
  EXPECT_EQ(for_read[0], &hooks[2]);
  EXPECT_TRUE(hooks_for(hooks, "worktree.created", "").empty());
}

TEST(HookEvents, ExitTwoBeforeAToolRefusesItWithTheHooksStderr) {
  const HookVerdict verdict =
      judge(hook("tool.before"), "tool.before", exited(2, "ignored", "  no rm -rf here\n"));
  EXPECT_TRUE(verdict.refuse);
  EXPECT_EQ(verdict.message, "no rm -rf here");
  EXPECT_FALSE(verdict.failure);
}

TEST(HookEvents, ARefusalWithoutWordsNamesTheHook) {
  const HookVerdict verdict = judge(hook("tool.before"), "tool.before", exited(2));
  EXPECT_TRUE(verdict.refuse);
  EXPECT_THAT(verdict.message, HasSubstr("loopr.toml:12 (./check.sh)"));
}

TEST(HookEvents, ExitZeroLetsTheCallRunWithStdoutAsANote) {
  const HookVerdict verdict =
      judge(hook("tool.before"), "tool.before", exited(0, "lint is clean\n", "noise"));
  EXPECT_FALSE(verdict.refuse);
  EXPECT_EQ(verdict.note, "lint is clean");
  EXPECT_FALSE(verdict.failure);
}

TEST(HookEvents, ExitTwoAfterAToolIsANoteNotARefusal) {
  const HookVerdict verdict = judge(hook("tool.after"), "tool.after", exited(2, "", "tests fail"));
  EXPECT_FALSE(verdict.refuse);
  EXPECT_EQ(verdict.note, "tests fail");
}

TEST(HookEvents, OtherExitsCrashesTimeoutsAndStartFailuresAreFailuresThatRefuseNothing) {
  const config::HookSettings before = hook("tool.before");
  HookVerdict other = judge(before, "tool.before", exited(1, "", "boom"));
  EXPECT_FALSE(other.refuse);
  ASSERT_TRUE(other.failure);
  EXPECT_EQ(*other.failure, "exited with status 1: boom");

  HookRun crashed;
  crashed.ended = HookRun::Ended::signalled;
  crashed.exit_code = 11;
  EXPECT_EQ(*judge(before, "tool.before", crashed).failure, "was killed by signal 11");

  HookRun hung;
  hung.ended = HookRun::Ended::timed_out;
  const HookVerdict timed_out = judge(before, "tool.before", hung);
  EXPECT_FALSE(timed_out.refuse);
  EXPECT_THAT(*timed_out.failure, HasSubstr("did not finish within 5 s"));

  HookRun missing;
  missing.why = "no worktree";
  EXPECT_EQ(*judge(before, "tool.before", missing).failure, "could not start: no worktree");
}

TEST(HookEvents, ALongMessageIsCutAndSaysSo) {
  const HookVerdict verdict =
      judge(hook("tool.before"), "tool.before", exited(2, "", std::string(10000, 'x')));
  EXPECT_LT(verdict.message.size(), kMaxHookMessageBytes + 100);
  EXPECT_THAT(verdict.message, HasSubstr("bytes cut]"));
}

TEST(HookEvents, TheInputIsTheEventNameWithItsData) {
  const json input = json::parse(hook_input(
      "tool.before", {{"tool", "run_command"}, {"args", {{"command", "ls"}}}, {"event", "x"}}));
  EXPECT_EQ(input["event"], "tool.before");
  EXPECT_EQ(input["tool"], "run_command");
  EXPECT_EQ(input["args"]["command"], "ls");
}

TEST(HookEvents, AHugeEventIsCutToTheCapAndStaysValidJson) {
  const std::string huge(3 * kMaxHookInputBytes, 'o');
  const std::string text = hook_input(
      "tool.after", {{"tool", "read_file"}, {"output", {{"content", huge}, {"other", huge}}}});
  EXPECT_LE(text.size(), kMaxHookInputBytes);
  const json input = json::parse(text);
  EXPECT_EQ(input["tool"], "read_file");
  EXPECT_THAT(input["output"]["content"].get<std::string>(), HasSubstr("bytes cut]"));
}

TEST(HookEvents, AnEventOfManyShortStringsIsCutToTheCapToo) {
  nlohmann::json lines = nlohmann::json::array();
  for (int i = 0; i < 100000; ++i)
    lines.push_back("src/file" + std::to_string(i) + ".c");
  const std::string text =
      hook_input("tool.after", {{"tool", "glob"}, {"output", {{"matches", lines}}}});
  EXPECT_LE(text.size(), kMaxHookInputBytes);
  const json input = json::parse(text);
  EXPECT_EQ(input["event"], "tool.after");
  EXPECT_EQ(input["tool"], "glob");
  EXPECT_THAT(input["output"].get<std::string>(), HasSubstr("bytes cut]"));
}

}  // namespace
}  // namespace loopr::hooks
