// [[hooks]] through the real looprd, its runners and the scripted provider
// (issue 27): a tool.before hook that refuses a call with its own words (the
// client and the model read them; the command never runs), the event's JSON
// a hook reads, tool.after notes in the result, a hook that hangs or crashes
// (reported, and the call goes on), the sandbox a hook runs in unless it is
// trusted, and the loop events' hooks.
#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <chrono>
#include <thread>

#include "tests/daemon/daemon_harness.hpp"
#include "tests/daemon/loop_fixture.hpp"

namespace loopr::test {
namespace {

using nlohmann::json;
using namespace std::chrono_literals;
using ::testing::AllOf;
using ::testing::HasSubstr;
using ::testing::Not;

std::string hook_toml(const std::string& event, const std::string& command,
                      const std::string& extra = "") {
  return "[[hooks]]\nevent = \"" + event + "\"\ncommand = '''" + command + "'''\n" + extra;
}

// The refusing hook: any rm of the model's is refused, with a reason.
constexpr const char* kNoRm =
    R"(if grep -q '"command":"rm '; then echo "do not delete files: use git rm" >&2; exit 2; fi)";

// Waits for `text` in looprd's log (a hook's report is logged as it ends).
bool log_shows(const DaemonHarness& daemon, const std::string& text) {
  const auto deadline = std::chrono::steady_clock::now() + 20s;
  while (daemon.log().find(text) == std::string::npos) {
    if (std::chrono::steady_clock::now() > deadline) return false;
    std::this_thread::sleep_for(20ms);
  }
  return true;
}

TEST(HooksLooprd, ABeforeHookRefusesACallWithItsOwnWordsAndTheCommandNeverRuns) {
  DaemonHarness daemon(
      DaemonOptions{hook_toml("tool.before", kNoRm, "tools = [\"run_command\"]\n"), {}, {}});
  daemon.start();
  daemon.tree().write("work/repo/src/keep.txt", "kept\n");
  const json refused = daemon.tool("run_command", {{"command", "rm -rf src"}});
  EXPECT_EQ(refused["status"], "denied") << refused.dump();
  EXPECT_EQ(refused["error"]["code"], "refused_by_hook") << refused.dump();
  EXPECT_EQ(refused["error"]["message"], "do not delete files: use git rm");
  EXPECT_THAT(refused["error"]["details"]["hook"].get<std::string>(), HasSubstr("loopr.toml:"));
  EXPECT_TRUE(daemon.tree().exists("work/repo/src/keep.txt"));

  const json allowed = daemon.tool("run_command", {{"command", "echo fine"}});
  EXPECT_EQ(allowed["status"], "success") << allowed.dump();
  EXPECT_EQ(allowed["output"]["stdout"], "fine\n");
}

TEST(HooksLooprd, AHookReadsTheCallAsJsonOnItsStdin) {
  DaemonHarness daemon(DaemonOptions{
      hook_toml("tool.before", "cat > hook-input.json; echo \"$LOOPR_HOOK_EVENT\" > hook-event"),
      {},
      {}});
  daemon.start();
  const json result = daemon.tool("run_command", {{"command", "echo hi"}});
  ASSERT_EQ(result["status"], "success") << result.dump();
  // The sandboxed hook ran in the call's worktree and wrote there.
  const json input = json::parse(daemon.tree().read("work/repo/hook-input.json"));
  EXPECT_EQ(input["event"], "tool.before");
  EXPECT_EQ(input["tool"], "run_command");
  EXPECT_EQ(input["lane"], "net");
  EXPECT_EQ(input["args"]["command"], "echo hi");
  EXPECT_EQ(input["call_id"], result["call_id"]);
  EXPECT_EQ(input["worktree"], daemon.worktree());
  EXPECT_EQ(daemon.tree().read("work/repo/hook-event"), "tool.before\n");
}

TEST(HooksLooprd, AnAfterHookReadsTheResultAndItsNoteJoinsIt) {
  TempTree outside;
  DaemonHarness daemon(DaemonOptions{
      hook_toml("tool.after", "cat > " + outside.path("after.json") + "; echo formatted 1 file",
                "trusted = true\n"),
      {},
      {}});
  daemon.start();
  const json result = daemon.tool("run_command", {{"command", "echo hi"}});
  ASSERT_EQ(result["status"], "success") << result.dump();
  EXPECT_EQ(result["hook_notes"], json::array({"formatted 1 file"}));
  const json after = json::parse(outside.read("after.json"));
  EXPECT_EQ(after["event"], "tool.after");
  EXPECT_EQ(after["status"], "success");
  EXPECT_EQ(after["exit_code"], 0);
  EXPECT_EQ(after["output"]["stdout"], "hi\n");
}

TEST(HooksLooprd, AHookThatHangsIsStoppedAndReportedAndTheCallRuns) {
  DaemonHarness daemon(
      DaemonOptions{hook_toml("tool.before", "exec sleep 60", "timeout_s = 1\n"), {}, {}});
  daemon.start();
  const auto started = std::chrono::steady_clock::now();
  const json result = daemon.tool("run_command", {{"command", "echo still ran"}});
  EXPECT_EQ(result["status"], "success") << result.dump();
  EXPECT_EQ(result["output"]["stdout"], "still ran\n");
  // Stopped at its timeout, not after its 60 s.
  EXPECT_LT(std::chrono::steady_clock::now() - started, 30s);
  EXPECT_TRUE(log_shows(daemon, "did not finish within 1 s (timeout_s) and was stopped"))
      << daemon.log();
}

TEST(HooksLooprd, AHookThatCrashesIsReportedAndTheCallRuns) {
  DaemonHarness daemon(DaemonOptions{hook_toml("tool.before", "kill -SEGV $$"), {}, {}});
  daemon.start();
  client::ControlClient watcher = daemon.client();
  ASSERT_TRUE(watcher.call("events.subscribe", {{"topics", {"hook.failed"}}}));
  const json result = daemon.tool("run_command", {{"command", "echo ok"}});
  EXPECT_EQ(result["status"], "success") << result.dump();
  auto failed = watcher.next_event(20s);
  ASSERT_TRUE(failed && *failed);
  EXPECT_EQ((**failed).event, "hook.failed");
  EXPECT_EQ((**failed).data["event"], "tool.before");
  EXPECT_EQ((**failed).data["reason"], "was killed by signal 11");
  EXPECT_EQ((**failed).data["call_id"], result["call_id"]);
}

// SECURITY class 31: the event (a model's arguments) reaches the hook as
// data on stdin, never as a command line.
TEST(HooksLooprd, HostileArgumentsReachTheHookAsDataNeverAsCommands) {
  DaemonHarness daemon(DaemonOptions{hook_toml("tool.before", "cat > hook-input.json"), {}, {}});
  daemon.start();
  const std::string hostile =
      "echo '; touch pwned-quote; ' \"$(touch pwned-subst)\" `touch pwned-tick`";
  const json written =
      daemon.tool("write_file", {{"path", "$(touch pwned-path)"}, {"content", hostile}});
  EXPECT_EQ(written["status"], "success") << written.dump();
  const json input = json::parse(daemon.tree().read("work/repo/hook-input.json"));
  EXPECT_EQ(input["args"]["content"], hostile);
  EXPECT_EQ(input["args"]["path"], "$(touch pwned-path)");
  for (const char* planted : {"pwned-quote", "pwned-subst", "pwned-tick", "pwned-path"}) {
    EXPECT_FALSE(daemon.tree().exists(std::string("work/repo/") + planted)) << planted;
  }
}

// SECURITY class 31: a hook that floods its output is cut, and the call goes on.
TEST(HooksLooprd, AHookThatFloodsItsOutputIsCutAndTheCallRuns) {
  DaemonHarness daemon(DaemonOptions{
      hook_toml("tool.after", "head -c 50000000 /dev/zero | tr '\\0' x") +
          hook_toml("tool.after", "head -c 50000000 /dev/zero | tr '\\0' y", "trusted = true\n"),
      {},
      {}});
  daemon.start();
  const json result = daemon.tool("run_command", {{"command", "echo ran"}});
  ASSERT_EQ(result["status"], "success") << result.dump();
  ASSERT_EQ(result["hook_notes"].size(), 2u) << result.dump().substr(0, 500);
  for (const json& note : result["hook_notes"]) {
    EXPECT_LT(note.get<std::string>().size(), 5000u);
    EXPECT_THAT(note.get<std::string>(), HasSubstr("bytes cut]"));
  }
}

TEST(HooksLooprd, ASandboxedHookCannotReadFilesOutsideItsWorktreeAndATrustedOneCan) {
  TempTree outside;
  outside.write("secret.txt", "the user's secret");
  const std::string read_it = "cat " + outside.path("secret.txt") + " >&2; exit 2";
  // Both hooks print the file as their refusal; each filtered to one tool.
  DaemonHarness daemon(DaemonOptions{
      hook_toml("tool.before", read_it, "tools = [\"run_command\"]\n") +
          hook_toml("tool.before", read_it, "tools = [\"run_command_isolated\"]\ntrusted = true\n"),
      {},
      {}});
  daemon.start();
  const json sandboxed = daemon.tool("run_command", {{"command", "true"}});
  EXPECT_EQ(sandboxed["error"]["code"], "refused_by_hook") << sandboxed.dump();
  // cat ran, in the sandbox, and could not reach the file.
  EXPECT_THAT(
      sandboxed["error"]["message"].get<std::string>(),
      AllOf(HasSubstr("cat: "), HasSubstr("secret.txt"), Not(HasSubstr("the user's secret"))));
  const json trusted = daemon.tool("run_command_isolated", {{"command", "true"}});
  EXPECT_EQ(trusted["error"]["message"], "the user's secret") << trusted.dump();
}

TEST(HooksLooprd, AnApprovalWaitingRunsItsHookWithTheCallToApprove) {
  TempTree outside;
  DaemonHarness daemon(
      DaemonOptions{"[approval.tools]\nrun_command = \"ask\"\n" +
                        hook_toml("approval.needed", "cat > " + outside.path("asked.json"),
                                  "tools = [\"run_command\"]\ntrusted = true\n"),
                    {},
                    {}});
  daemon.start();
  json result;
  std::jthread caller([&] { result = daemon.tool("run_command", {{"command", "echo approved"}}); });
  ASSERT_TRUE(wait_for_file(outside.path("asked.json"), 20s));
  const json asked = json::parse(outside.read("asked.json"));
  EXPECT_EQ(asked["event"], "approval.needed");
  EXPECT_EQ(asked["tool"], "run_command");
  EXPECT_EQ(asked["args"]["command"], "echo approved");
  daemon.call("approval.approve", {{"id", asked["id"]}});
  caller.join();
  EXPECT_EQ(result["status"], "success") << result.dump();
}

TEST(HooksLooprd, InALoopTheModelReadsTheRefusalAndTheLoopEventsRunTheirHooks) {
  TempTree outside;
  const std::string record = "cat > " + outside.root() + "/\"$LOOPR_HOOK_EVENT\".json";
  TempTree scripts;
  SampleRepo repo;
  const std::vector<json> turns = {
      turn({tool_call("x1", "run_command", {{"command", "rm -rf docs"}})}), turn({read_call("r1")}),
      turn({edit_call("e1")}), turn({complete_call("c1")})};
  auto daemon = start_scripted_looprd(
      scripts, {{"scripted", turns}},
      hook_toml("tool.before", kNoRm) + hook_toml("worktree.created", record, "trusted = true\n") +
          hook_toml("iteration.end", record, "trusted = true\n") +
          hook_toml("loop.end", record, "trusted = true\n"),
      repo);
  const std::string id = create_loop(*daemon, repo.path)["id"];
  EXPECT_EQ(wait_final(*daemon, id)["status"], "completed");

  // The model read the hook's words as the call's result.
  std::string results;
  for (const json& step : steps_of_kind(read_transcript(*daemon, id), "tool_results"))
    results += step["data"].dump();
  EXPECT_THAT(results, HasSubstr("do not delete files: use git rm"));

  ASSERT_TRUE(wait_for_file(outside.path("loop.end.json"), 20s));
  const json created = json::parse(outside.read("worktree.created.json"));
  EXPECT_EQ(created["loop_id"], id);
  EXPECT_THAT(created["worktree"].get<std::string>(), HasSubstr(id));
  const json iteration = json::parse(outside.read("iteration.end.json"));
  EXPECT_EQ(iteration["loop_id"], id);
  EXPECT_EQ(iteration["phase"], "validated");
  const json ended = json::parse(outside.read("loop.end.json"));
  EXPECT_EQ(ended["loop_id"], id);
  EXPECT_EQ(ended["loop"]["status"], "completed");
}

}  // namespace
}  // namespace loopr::test
