#include "daemon/hook_lane.hpp"

#include <atomic>
#include <string>

#include "common/json_text.hpp"

namespace loopr::daemon {
namespace {

using nlohmann::json;

// The job's own timeout leaves the tool a moment past the hook's, so the
// tool itself reports timed_out with what the hook printed.
constexpr std::uint64_t kJobGraceMs = 3000;

}  // namespace

hooks::HookRun hook_run_from_reply(const LaneReply& reply) {
  hooks::HookRun run;
  run.duration_ms = reply.result.duration_ms;
  if (reply.link_error) {
    run.why = reply.link_error->message;
    return run;
  }
  const json output = json::parse(reply.result.output, nullptr, false);
  if (output.is_object() && output.contains("exit_code")) {
    run.out = text_member(output, "stdout").substr(0, hooks::kMaxHookOutputBytes);
    run.err = text_member(output, "stderr").substr(0, hooks::kMaxHookOutputBytes);
    const auto flag = [&](const char* key) {
      const auto it = output.find(key);
      return it != output.end() && it->is_boolean() && it->get<bool>();
    };
    if (flag("timed_out") || flag("interrupted")) {
      run.ended = hooks::HookRun::Ended::timed_out;
    } else if (output.contains("signal") && output["signal"].is_number_integer()) {
      run.ended = hooks::HookRun::Ended::signalled;
      run.exit_code = output["signal"].get<int>();
    } else if (output["exit_code"].is_number_integer()) {
      run.ended = hooks::HookRun::Ended::exited;
      run.exit_code = output["exit_code"].get<int>();
    } else {
      run.why = "the hook job gave no exit status";
    }
    return run;
  }
  if (reply.result.status == proto::JobStatus::timeout) {
    run.ended = hooks::HookRun::Ended::timed_out;
    return run;
  }
  // The tool refused to start it (an error object), or the runner did.
  const json error = output.is_object() ? output.value("error", json::object()) : json::object();
  run.why = !text_member(error, "message").empty() ? text_member(error, "message")
            : reply.result.error
                ? *reply.result.error
                : "the sandbox did not run it (" + reply.result.stderr_bytes.substr(0, 300) + ")";
  return run;
}

hooks::HookRunner::SandboxedRun hooks_in_lane(RunnerLink& lane) {
  return [&lane](std::string command, std::string event, std::string input, std::string worktree,
                 std::chrono::milliseconds timeout) -> asio::awaitable<hooks::HookRun> {
    static std::atomic<std::uint64_t> next{1};
    proto::Job job;
    job.job_id = "hook-" + std::to_string(next++);
    job.tool = "hook";
    job.args = {{"command", std::move(command)},
                {"input", std::move(input)},
                {"event", std::move(event)},
                {"timeout_ms", timeout.count()}};
    job.worktree = worktree;
    job.cwd = std::move(worktree);
    job.timeout_ms = static_cast<std::uint64_t>(timeout.count()) + kJobGraceMs;
    job.max_output_bytes = 4 * hooks::kMaxHookOutputBytes;
    job.traits = {.program = proto::JobProgram::tool,
                  .runs_commands = true,
                  .warm_worker = false,
                  .read_only = false};
    LaneReply reply = co_await lane.run(std::move(job));
    co_return hook_run_from_reply(reply);
  };
}

}  // namespace loopr::daemon
