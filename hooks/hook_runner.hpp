// HookRunner: runs the user's [[hooks]] (hook_events.hpp) for looprd.
//
// - tool.before and tool.after are awaited by the ToolRouter: the hooks for
//   the call's event and tool run one after another, in the order written;
//   the first tool.before hook that refuses ends the run (the rest are not
//   asked). What they add is returned to the router.
// - approval.needed, iteration.end, loop.end, plan.awaiting_approval and
//   worktree.created come from looprd's events (kTopics, on_event) and run on
//   coroutines of their own: nothing waits for them.
// - A trusted hook runs as the user outside any sandbox (host_process.hpp)
//   on a worker thread; any other runs in the sandbox through `sandboxed`
//   (looprd gives it the no-net lane: no network, Landlock to the event's
//   worktree, seccomp, no capabilities, a PID namespace of its own), in the
//   event's worktree. An event without a worktree cannot run a sandboxed
//   hook: that is reported like any other hook failure. Trusted tool hooks
//   and trusted loop-event hooks run on pools of their own, and the
//   runner's end kills the trusted hooks still running.
// - Every failure (hook_events.hpp) goes to `report` as {hook, event,
//   reason, call_id?, loop_id?}; a hook never fails a call or a loop.
//
// Threads: io thread only (the host pool's threads only run the process).
#pragma once

#include <asio/awaitable.hpp>
#include <asio/io_context.hpp>
#include <asio/thread_pool.hpp>
#include <atomic>
#include <chrono>
#include <functional>
#include <memory>
#include <nlohmann/json.hpp>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "config/settings.hpp"
#include "hooks/hook_events.hpp"
#include "notify/notification.hpp"

namespace loopr::hooks {

class HookRunner {
 public:
  // Runs `command` in the sandbox, in `worktree`, with `input` on its stdin.
  using SandboxedRun = std::function<asio::awaitable<HookRun>(
      std::string command, std::string event, std::string input, std::string worktree,
      std::chrono::milliseconds timeout)>;
  using Report = std::function<void(const nlohmann::json& failure)>;

  // The events on_event needs, as EventBus topics.
  static constexpr const char* kTopics[] = {"approval.requested", "loop.updated", "loop.iteration",
                                            "worktree.created"};

  HookRunner(asio::io_context& io, std::vector<config::HookSettings> hooks, SandboxedRun sandboxed,
             Report report);
  ~HookRunner();

  // True when some hook runs on `event`.
  bool has(std::string_view event) const;

  struct ToolVerdict {
    std::optional<std::string> refusal;  // tool.before: the message the model reads
    std::string refused_by;              // hook_label of the hook that refused
    std::vector<std::string> notes;      // each hook's note, in order
  };
  // The tool hooks of `event` (tool.before or tool.after) for `tool`. `data`
  // is what they read besides the event's name.
  asio::awaitable<ToolVerdict> on_tool(std::string event, std::string tool, nlohmann::json data,
                                       std::string worktree);

  // One of looprd's events (kTopics): starts the hooks it means.
  void on_event(std::string_view topic, const nlohmann::json& data);

 private:
  asio::awaitable<HookVerdict> run(const config::HookSettings& hook, std::string event,
                                   std::string input, std::string worktree, nlohmann::json context);
  void start(std::string event, nlohmann::json data, std::string worktree);

  asio::io_context& io_;
  std::vector<config::HookSettings> hooks_;
  SandboxedRun sandboxed_;
  Report report_;
  // Trusted hooks' processes: tool hooks apart from the loop events' ones.
  asio::thread_pool tool_pool_{2};
  asio::thread_pool event_pool_{1};
  // Set when the runner goes: running trusted hooks are killed.
  std::shared_ptr<std::atomic<bool>> stopping_ = std::make_shared<std::atomic<bool>>(false);
  notify::NotificationFilter filter_;
};

}  // namespace loopr::hooks
