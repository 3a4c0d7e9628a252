#include "hooks/hook_runner.hpp"

#include <asio/co_spawn.hpp>
#include <asio/detached.hpp>
#include <filesystem>

#include "common/json_text.hpp"
#include "hooks/host_process.hpp"
#include "loops/offload.hpp"

namespace loopr::hooks {
namespace {

using nlohmann::json;

// Where a trusted hook starts: the event's worktree while it exists, else
// the user's home, else /.
std::string host_folder(const std::string& worktree) {
  std::error_code ec;
  if (!worktree.empty() && std::filesystem::is_directory(worktree, ec)) return worktree;
  const char* home = std::getenv("HOME");
  if (home != nullptr && home[0] == '/' && std::filesystem::is_directory(home, ec)) return home;
  return "/";
}

}  // namespace

HookRunner::HookRunner(asio::io_context& io, std::vector<config::HookSettings> hooks,
                       SandboxedRun sandboxed, Report report)
    : io_(io),
      hooks_(std::move(hooks)),
      sandboxed_(std::move(sandboxed)),
      report_(std::move(report)) {}

HookRunner::~HookRunner() {
  // Running trusted hooks are killed (their process groups), so looprd's
  // shutdown never waits out a hook's timeout.
  stopping_->store(true);
  tool_pool_.stop();
  event_pool_.stop();
  tool_pool_.join();
  event_pool_.join();
}

bool HookRunner::has(std::string_view event) const {
  for (const config::HookSettings& hook : hooks_) {
    if (hook.event == event) return true;
  }
  return false;
}

asio::awaitable<HookVerdict> HookRunner::run(const config::HookSettings& hook, std::string event,
                                             std::string input, std::string worktree,
                                             json context) {
  const auto timeout = std::chrono::milliseconds(hook.timeout_s * 1000);
  HookRun ran;
  if (hook.trusted) {
    const std::string folder = host_folder(worktree);
    auto work = [&] {
      return run_on_host(hook.command, event, input, folder, timeout, stopping_.get());
    };
    // Tool hooks on a pool of their own: a call never waits behind a slow
    // loop.end hook.
    const bool tool_event = event == "tool.before" || event == "tool.after";
    ran = co_await loops::offload(tool_event ? tool_pool_ : event_pool_, work);
  } else if (worktree.empty()) {
    ran.why = "a sandboxed hook runs in the event's worktree, and " + event +
              " has none here; mark the hook trusted = true to run it as you, outside the sandbox";
  } else {
    ran = co_await sandboxed_(hook.command, event, std::move(input), worktree, timeout);
  }
  HookVerdict verdict = judge(hook, event, ran);
  if (verdict.failure) {
    json failure = {{"hook", hook_label(hook)}, {"event", event}, {"reason", *verdict.failure}};
    for (const char* key : {"call_id", "loop_id", "tool"}) {
      if (const std::string value = text_member(context, key); !value.empty()) {
        failure[key] = value;
      }
    }
    report_(failure);
  }
  co_return verdict;
}

asio::awaitable<HookRunner::ToolVerdict> HookRunner::on_tool(std::string event, std::string tool,
                                                             json data, std::string worktree) {
  ToolVerdict verdict;
  const auto hooks = hooks_for(hooks_, event, tool);
  if (hooks.empty()) co_return verdict;
  const std::string input = hook_input(event, data);
  for (const config::HookSettings* hook : hooks) {
    HookVerdict said = co_await run(*hook, event, input, worktree, data);
    if (!said.note.empty()) verdict.notes.push_back(std::move(said.note));
    if (said.refuse) {
      verdict.refusal = std::move(said.message);
      verdict.refused_by = hook_label(*hook);
      break;
    }
  }
  co_return verdict;
}

void HookRunner::start(std::string event, json data, std::string worktree) {
  if (!has(event)) return;
  const std::string tool = text_member(data, "tool");
  for (const config::HookSettings* hook : hooks_for(hooks_, event, tool)) {
    asio::co_spawn(
        io_,
        [this, hook, event, data, worktree]() -> asio::awaitable<void> {
          // A named local, not a temporary in the co_await expression (GCC bug 100611).
          std::string input = hook_input(event, data);
          co_await run(*hook, event, std::move(input), worktree, data);
        },
        asio::detached);
  }
}

void HookRunner::on_event(std::string_view topic, const json& data) {
  if (topic == "loop.iteration") {
    // The iteration's end: validated, or handed off (not started, validating).
    const std::string phase = text_member(data, "phase");
    if (phase == "validated" || phase == "handed_off") {
      start("iteration.end", data, text_member(data, "worktree"));
    }
    return;
  }
  if (topic == "worktree.created") {
    start("worktree.created", data, text_member(data, "worktree"));
    return;
  }
  // approval.requested and loop.updated: what a person would be told of
  // (notify/notification.hpp), each once.
  std::optional<notify::Notification> said = filter_.on_event(topic, data);
  if (!said) return;
  std::string event = said->event;
  if (event == "plan.end") event = "loop.end";
  if (event != "approval.needed" && event != "plan.awaiting_approval" && event != "loop.end") {
    return;
  }
  json input = said->data;
  if (!said->loop_id.empty() && !input.contains("loop_id")) input["loop_id"] = said->loop_id;
  const std::string worktree = text_member(data, "worktree").empty()
                                   ? text_member(data.value("loop", json::object()), "worktree")
                                   : text_member(data, "worktree");
  start(std::move(event), std::move(input), worktree);
}

}  // namespace loopr::hooks
