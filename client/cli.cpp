#include "client/cli.hpp"

#include <CLI/CLI.hpp>
#include <cmath>
#include <cstdint>
#include <cstdlib>
#include <exception>
#include <functional>
#include <iostream>
#include <nlohmann/json.hpp>
#include <string>
#include <tuple>
#include <vector>

#include "client/client_paths.hpp"
#include "client/commands.hpp"

namespace loopr::client {
namespace {

constexpr std::int64_t kMaxWaitMs = 600'000;

struct GlobalFlags {
  config::PathFlags paths;
  bool json = false;
};

}  // namespace

int run_looprctl(int argc, const char* const* argv, std::istream& in, std::ostream& out,
                 std::ostream& err) {
  CLI::App app{"looprctl: control looprd, the loopr daemon"};
  app.name("looprctl");
  app.fallthrough();  // global flags are accepted after the command too
  app.require_subcommand(1);

  GlobalFlags global;
  app.add_option("--socket", global.paths.socket_path,
                 "looprd's control socket (default: $LOOPR_SOCKET, loopr.toml, "
                 "$XDG_RUNTIME_DIR/loopr/looprd.sock, /tmp/loopr-$UID/looprd.sock)");
  app.add_flag("--json", global.json, "print results as JSON, for scripts");
  app.add_option("--config-dir", global.paths.config_dir,
                 "loopr's configuration folder (default: $LOOPR_CONFIG_DIR, "
                 "$XDG_CONFIG_HOME/loopr)");
  app.add_option("--state-dir", global.paths.state_dir,
                 "loopr's state folder, where looprd.log lives (default: $LOOPR_STATE_DIR, "
                 "$XDG_STATE_HOME/loopr)");

  // The chosen command, run once the whole command line has parsed.
  std::function<int(const CommandContext&)> command;

  auto* daemon = app.add_subcommand("daemon", "start, stop or query looprd");
  daemon->require_subcommand(1);
  DaemonStartOptions start;
  std::int64_t start_wait_ms = start.wait.count();
  auto* start_cmd =
      daemon->add_subcommand("start", "start looprd in the background and wait until it answers");
  start_cmd->add_option("--looprd", start.looprd,
                        "the looprd binary (default: looprd next to looprctl)");
  start_cmd->add_option("--wait-ms", start_wait_ms, "how long to wait for looprd to answer")
      ->check(CLI::Range(std::int64_t{0}, kMaxWaitMs));
  start_cmd->callback([&] {
    command = [&](const CommandContext& c) {
      start.wait = Milliseconds(start_wait_ms);
      return run_daemon_start(c, start);
    };
  });
  std::int64_t stop_wait_ms = 10'000;
  auto* stop_cmd = daemon->add_subcommand("stop", "ask looprd to shut down and wait until it has");
  stop_cmd->add_option("--wait-ms", stop_wait_ms, "how long to wait for looprd to stop")
      ->check(CLI::Range(std::int64_t{0}, kMaxWaitMs));
  stop_cmd->callback([&] {
    command = [&](const CommandContext& c) {
      return run_daemon_stop(c, Milliseconds(stop_wait_ms));
    };
  });
  daemon->add_subcommand("status", "whether looprd answers, and the state of its lanes")
      ->callback([&] { command = run_daemon_status; });

  CallOptions call;
  std::string call_args;
  std::string loop_id;
  std::uint64_t timeout_ms = 0;
  auto* call_cmd = app.add_subcommand("call", "run one tool through looprd and print its result");
  call_cmd->add_option("tool", call.tool, "the tool, e.g. read_file (see: looprctl tools)")
      ->required();
  auto* args_option =
      call_cmd->add_option("args", call_args,
                           "the tool's arguments: a JSON object, or - to read it from stdin "
                           "(default: {})");
  call_cmd->add_option("--worktree", call.worktree,
                       "the folder the tool works in (default: the current folder)");
  auto* timeout_option =
      call_cmd->add_option("--timeout-ms", timeout_ms, "the call's timeout (default: the tool's)")
          ->check(CLI::Range(std::uint64_t{1}, std::uint64_t{86'400'000}));
  auto* loop_option = call_cmd->add_option("--loop-id", loop_id, "run the call for this loop");
  call_cmd->callback([&] {
    if (args_option->count() > 0) call.args = call_args;
    if (timeout_option->count() > 0) call.timeout_ms = timeout_ms;
    if (loop_option->count() > 0) call.loop_id = loop_id;
    command = [&](const CommandContext& c) { return run_call(c, call); };
  });

  app.add_subcommand("tools", "list the tools looprd offers")->callback([&] {
    command = run_tools;
  });
  app.add_subcommand("approvals", "list the calls waiting for approval")->callback([&] {
    command = run_approvals;
  });
  std::string approve_id;
  auto* approve_cmd = app.add_subcommand("approve", "let a waiting call run");
  approve_cmd->add_option("id", approve_id, "the approval's id (see: looprctl approvals)")
      ->required();
  approve_cmd->callback(
      [&] { command = [&](const CommandContext& c) { return run_approve(c, approve_id); }; });
  std::string deny_id;
  std::string deny_reason;
  auto* deny_cmd = app.add_subcommand("deny", "refuse a waiting call");
  deny_cmd->add_option("id", deny_id, "the approval's id (see: looprctl approvals)")->required();
  auto* reason_option = deny_cmd->add_option("--reason", deny_reason,
                                             "why, passed back to the model that made the call");
  deny_cmd->callback([&] {
    command = [&](const CommandContext& c) {
      return run_deny(c, deny_id,
                      reason_option->count() > 0 ? std::optional(deny_reason) : std::nullopt);
    };
  });

  EventsOptions events;
  std::uint64_t event_count = 0;
  auto* events_cmd = app.add_subcommand(
      "events", "print looprd's events, one per line, until interrupted or --count events");
  events_cmd->add_option("--topic", events.topics,
                         "only this event (repeatable), e.g. tool.finished (default: all)");
  auto* count_option = events_cmd->add_option("--count", event_count, "stop after N events")
                           ->check(CLI::Range(std::uint64_t{1}, UINT64_MAX));
  events_cmd->add_flag("--follow")->description("keep printing events (the default)");
  events_cmd->callback([&] {
    if (count_option->count() > 0) events.count = event_count;
    command = [&](const CommandContext& c) { return run_events(c, events); };
  });

  app.add_subcommand("metrics", "per-tool call counts and latencies, per-lane state")
      ->callback([&] { command = run_metrics; });

  // ---- loops ----
  const std::vector<std::string> statuses = {"queued", "running",   "paused",           "completed",
                                             "failed", "cancelled", "budget_exhausted", "stuck"};
  LoopListOptions loop_list;
  std::string list_status;
  std::string list_type;
  const auto list_flags = [&](CLI::App* list_cmd) {
    auto* status_option =
        list_cmd->add_option("--status", list_status, "only loops with this status")
            ->check(CLI::IsMember(statuses));
    auto* type_option = list_cmd->add_option("--type", list_type, "only loops of this type");
    list_cmd->add_flag("--all", loop_list.all, "include deleted loops");
    list_cmd->callback([&, status_option, type_option] {
      if (status_option->count() > 0) loop_list.status = list_status;
      if (type_option->count() > 0) loop_list.type = list_type;
      command = [&](const CommandContext& c) { return run_loops(c, loop_list); };
    });
  };
  list_flags(app.add_subcommand("loops", "list the loops: status, iteration, tokens, cost"));

  auto* loop_cmd = app.add_subcommand("loop", "run, inspect and steer LLM agent loops");
  loop_cmd->require_subcommand(1);

  LoopRunOptions loop_run;
  std::string run_base;
  std::string run_provider;
  std::string run_model;
  std::string run_validate;
  std::uint64_t run_max_iterations = 0;
  double run_budget_usd = 0;
  auto* run_cmd = loop_cmd->add_subcommand(
      "run", "start a loop on a git repository and follow it until it ends (Ctrl-C detaches)");
  run_cmd->add_option("task", loop_run.task, "what the loop should achieve")->required();
  run_cmd->add_option("--type", loop_run.type, "the loop type (default: code)");
  run_cmd->add_option("--repo", loop_run.repo, "the git repository the loop works on")->required();
  auto* base_option =
      run_cmd->add_option("--base", run_base, "the revision to start from (default: HEAD)");
  auto* provider_option = run_cmd->add_option(
      "--provider", run_provider, "a [providers.*] entry of loopr.toml (default: [llm] provider)");
  auto* model_option =
      run_cmd->add_option("--model", run_model, "the model (default: the provider's)");
  auto* max_iterations_option =
      run_cmd->add_option("--max-iterations", run_max_iterations, "stop after N iterations")
          ->check(CLI::Range(std::uint64_t{1}, std::uint64_t{1'000'000}));
  auto* budget_option =
      run_cmd
          ->add_option("--budget-usd", run_budget_usd, "stop once the model calls cost this much")
          ->check(CLI::Validator(
              [](std::string& text) -> std::string {
                char* end = nullptr;
                const double value = std::strtod(text.c_str(), &end);
                if (text.empty() || end == nullptr || *end != '\0' || !std::isfinite(value) ||
                    value <= 0) {
                  return "--budget-usd must be a positive number of dollars, e.g. 2.50";
                }
                return {};
              },
              "USD", "positive dollars"));
  auto* validate_option =
      run_cmd->add_option("--validate", run_validate,
                          "the command that decides the task is done (default: the "
                          "loop type's validation_command, else [commands] validate)");
  run_cmd->add_flag("--detach", loop_run.detach, "print the loop's id and return at once");
  run_cmd->callback([&] {
    if (base_option->count() > 0) loop_run.base = run_base;
    if (provider_option->count() > 0) loop_run.provider = run_provider;
    if (model_option->count() > 0) loop_run.model = run_model;
    if (max_iterations_option->count() > 0) loop_run.max_iterations = run_max_iterations;
    if (budget_option->count() > 0) loop_run.budget_usd = run_budget_usd;
    if (validate_option->count() > 0) loop_run.validate = run_validate;
    command = [&](const CommandContext& c) { return run_loop_run(c, loop_run); };
  });

  list_flags(loop_cmd->add_subcommand("list", "the same as: looprctl loops"));

  std::string show_id;
  auto* show_cmd = loop_cmd->add_subcommand(
      "show", "a loop's status, task, worktree, usage, budget, iterations, last validation");
  show_cmd->add_option("id", show_id, "the loop's id (see: looprctl loops)")->required();
  show_cmd->callback(
      [&] { command = [&](const CommandContext& c) { return run_loop_show(c, show_id); }; });

  LoopLogsOptions loop_logs;
  std::int64_t logs_iteration = 0;
  auto* logs_cmd = loop_cmd->add_subcommand(
      "logs", "a loop's journal: model text, tool calls and results, validations");
  logs_cmd->add_option("id", loop_logs.id, "the loop's id (see: looprctl loops)")->required();
  logs_cmd->add_flag("--follow,-f", loop_logs.follow,
                     "then print new steps as they happen, until the loop ends");
  auto* iteration_option =
      logs_cmd->add_option("--iteration", logs_iteration, "only this iteration")
          ->check(CLI::Range(std::int64_t{0}, INT64_MAX));
  logs_cmd->callback([&] {
    if (iteration_option->count() > 0) loop_logs.iteration = logs_iteration;
    command = [&](const CommandContext& c) { return run_loop_logs(c, loop_logs); };
  });

  std::string control_id;
  for (const auto& [name, control, description] :
       {std::tuple{"pause", LoopControl::pause, "pause a loop after its current model turn"},
        std::tuple{"resume", LoopControl::resume, "resume a paused loop"},
        std::tuple{"cancel", LoopControl::cancel,
                   "stop a loop for good: its tool calls and model call are cancelled"}}) {
    auto* control_cmd = loop_cmd->add_subcommand(name, description);
    control_cmd->add_option("id", control_id, "the loop's id (see: looprctl loops)")->required();
    control_cmd->callback([&, control = control] {
      command = [&, control](const CommandContext& c) {
        return run_loop_control(c, control, control_id);
      };
    });
  }

  LoopDeleteOptions loop_delete;
  auto* delete_cmd = loop_cmd->add_subcommand(
      "delete", "hide a loop that is not running from the list (its record stays)");
  delete_cmd->add_option("id", loop_delete.id, "the loop's id (see: looprctl loops)")->required();
  delete_cmd->add_flag("--worktree", loop_delete.remove_worktree, "also remove its worktree");
  delete_cmd->add_flag("--branch", loop_delete.remove_branch, "also remove its branch loop/ID");
  delete_cmd->callback(
      [&] { command = [&](const CommandContext& c) { return run_loop_delete(c, loop_delete); }; });

  std::string export_id;
  auto* export_cmd = loop_cmd->add_subcommand(
      "export", "print a loop's model turns as JSON Lines (a scripted provider's session file)");
  export_cmd->add_option("id", export_id, "the loop's id (see: looprctl loops)")->required();
  export_cmd->callback(
      [&] { command = [&](const CommandContext& c) { return run_loop_export(c, export_id); }; });

  try {
    app.parse(argc, argv);
  } catch (const CLI::ParseError& e) {
    const int status = app.exit(e, out, err);
    return status == 0 ? to_int(ExitStatus::ok) : to_int(ExitStatus::usage);
  }
  if (!command) {
    err << "looprctl: no command given\n" << app.help();
    return to_int(ExitStatus::usage);
  }

  config::Paths paths;
  try {
    paths = resolve_client_paths(global.paths, err);
  } catch (const StartupError& e) {
    err << "looprctl: " << e.what() << '\n';
    return to_int(ExitStatus::usage);
  }
  const CommandContext context{paths, global.paths, global.json, ClientTimeouts{}, in, out, err};
  // The dispatch boundary: a library exception that escaped a command is a
  // bug; a reply of an unexpected shape is reported as a protocol error.
  try {
    return command(context);
  } catch (const nlohmann::json::exception& e) {
    err << "looprctl: protocol error: unexpected reply: " << e.what() << '\n';
    return to_int(ExitStatus::protocol);
  } catch (const std::exception& e) {
    err << "looprctl: internal error: " << e.what() << '\n';
    return to_int(ExitStatus::call_failed);
  }
}

}  // namespace loopr::client
