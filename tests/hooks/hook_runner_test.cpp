// HookRunner (hooks/hook_runner.hpp): which of looprd's events start which
// hooks, each once; tool hooks in order, the first refusal ending the run;
// a sandboxed hook without a worktree reported instead of run. Trusted hooks
// run real processes; the sandbox is a stand-in that records its calls (the
// real one, the no-net lane, is tested through looprd in tests/daemon).
#include "hooks/hook_runner.hpp"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <asio/co_spawn.hpp>
#include <asio/detached.hpp>

#include "tests/support/temp_tree.hpp"

namespace loopr::hooks {
namespace {

using nlohmann::json;
using ::testing::HasSubstr;

config::HookSettings trusted(std::string event, std::string command,
                             std::vector<std::string> tools = {}) {
  config::HookSettings hook;
  hook.event = std::move(event);
  hook.command = std::move(command);
  hook.tools = std::move(tools);
  hook.trusted = true;
  hook.timeout_s = 10;
  return hook;
}

struct Fixture {
  asio::io_context io;
  std::vector<json> failures;
  std::vector<std::string> sandboxed;  // commands the stand-in sandbox ran
  std::unique_ptr<HookRunner> runner;

  explicit Fixture(std::vector<config::HookSettings> hooks) {
    runner = std::make_unique<HookRunner>(
        io, std::move(hooks),
        [this](std::string command, std::string, std::string, std::string,
               std::chrono::milliseconds) -> asio::awaitable<HookRun> {
          sandboxed.push_back(command);
          HookRun run;
          run.ended = HookRun::Ended::exited;
          run.exit_code = 0;
          run.out = "sandboxed note";
          co_return run;
        },
        [this](const json& failure) { failures.push_back(failure); });
  }

  // Runs the io context until `done` holds (bounded).
  void run_until(const std::function<bool()>& done) {
    const auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(20);
    while (!done() && std::chrono::steady_clock::now() < deadline) {
      io.restart();
      io.run_for(std::chrono::milliseconds(20));
    }
  }

  HookRunner::ToolVerdict tool(std::string event, std::string name, std::string worktree) {
    auto verdict = std::make_shared<std::optional<HookRunner::ToolVerdict>>();
    HookRunner* hooks = runner.get();
    auto ask = [hooks, verdict, event, name, worktree]() -> asio::awaitable<void> {
      std::string e = event, n = name, w = worktree;
      json data = {{"tool", name}};
      *verdict = co_await hooks->on_tool(std::move(e), std::move(n), std::move(data), std::move(w));
    };
    asio::co_spawn(io, ask, asio::detached);
    run_until([&] { return verdict->has_value(); });
    return verdict->value();
  }
};

TEST(HookRunner, ToolHooksRunInOrderAndTheFirstRefusalEndsTheRun) {
  test::TempTree tree;
  Fixture f({trusted("tool.before", "echo first"),
             trusted("tool.before", "echo 'not this way' >&2; exit 2"),
             trusted("tool.before", "touch " + tree.path("third-ran"))});
  const auto verdict = f.tool("tool.before", "run_command", tree.root());
  ASSERT_TRUE(verdict.refusal);
  EXPECT_EQ(*verdict.refusal, "not this way");
  EXPECT_EQ(verdict.notes, std::vector<std::string>{"first"});
  EXPECT_FALSE(tree.exists("third-ran"));
  EXPECT_TRUE(f.failures.empty());
}

TEST(HookRunner, ASandboxedHookRunsThroughTheSandboxInTheWorktree) {
  config::HookSettings hook = trusted("tool.after", "./check.sh");
  hook.trusted = false;
  Fixture f({hook});
  const auto verdict = f.tool("tool.after", "write_file", "/work/repo");
  EXPECT_EQ(f.sandboxed, std::vector<std::string>{"./check.sh"});
  EXPECT_EQ(verdict.notes, std::vector<std::string>{"sandboxed note"});
}

TEST(HookRunner, ASandboxedHookWithoutAWorktreeIsReportedNotRun) {
  config::HookSettings hook = trusted("loop.end", "./after.sh");
  hook.trusted = false;
  Fixture f({hook});
  f.runner->on_event("loop.updated",
                     {{"loop", {{"id", "l-1"}, {"type", "code"}, {"status", "completed"}}}});
  f.run_until([&] { return !f.failures.empty(); });
  ASSERT_EQ(f.failures.size(), 1u);
  EXPECT_TRUE(f.sandboxed.empty());
  EXPECT_EQ(f.failures[0]["event"], "loop.end");
  EXPECT_EQ(f.failures[0]["loop_id"], "l-1");
  EXPECT_THAT(f.failures[0]["reason"].get<std::string>(), HasSubstr("trusted = true"));
}

TEST(HookRunner, APlanAtItsGateAndALoopsEndRunTheirHooksOnce) {
  test::TempTree tree;
  Fixture f({trusted("plan.awaiting_approval", "{ cat; echo; } >> " + tree.path("gate.jsonl")),
             trusted("loop.end", "{ cat; echo; } >> " + tree.path("end.jsonl"))});
  const json at_gate = {
      {"loop", {{"id", "p-1"}, {"type", "plan"}, {"status", "awaiting_approval"}}}};
  f.runner->on_event("loop.updated", at_gate);
  f.runner->on_event("loop.updated", at_gate);  // the same gate: said once
  const json ended = {{"loop", {{"id", "p-1"}, {"type", "plan"}, {"status", "completed"}}}};
  f.runner->on_event("loop.updated", ended);
  f.runner->on_event("loop.updated", ended);
  f.io.run();  // returns once every hook it started has ended
  const std::string gate = tree.read("gate.jsonl");
  EXPECT_EQ(std::count(gate.begin(), gate.end(), '\n'), 1) << gate;
  EXPECT_EQ(json::parse(gate)["event"], "plan.awaiting_approval");
  EXPECT_EQ(json::parse(gate)["loop_id"], "p-1");
  const std::string end = tree.read("end.jsonl");
  EXPECT_EQ(std::count(end.begin(), end.end(), '\n'), 1) << end;
  EXPECT_EQ(json::parse(end)["event"], "loop.end");
  EXPECT_EQ(json::parse(end)["loop"]["status"], "completed");
  EXPECT_TRUE(f.failures.empty());
}

}  // namespace
}  // namespace loopr::hooks
