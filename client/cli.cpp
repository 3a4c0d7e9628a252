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
#include "client/mcp_command.hpp"
#include "client/memory_commands.hpp"
#include "client/plan_commands.hpp"
#include "client/policy_command.hpp"
#include "client/repo_commands.hpp"
#include "client/tui_command.hpp"

namespace loopr::client {
namespace {

constexpr std::int64_t kMaxWaitMs = 600'000;

// --budget-usd: a positive, finite number of dollars.
const CLI::Validator kPositiveUsd(
    [](std::string& text) -> std::string {
      char* end = nullptr;
      const double value = std::strtod(text.c_str(), &end);
      if (text.empty() || end == nullptr || *end != '\0' || !std::isfinite(value) || value <= 0) {
        return "--budget-usd must be a positive number of dollars, e.g. 2.50";
      }
      return {};
    },
    "USD", "positive dollars");

// --base, --provider, --model: where a loop or a plan starts and what answers it.
struct StartFlags {
  CLI::Option* base;
  CLI::Option* provider;
  CLI::Option* model;
};

StartFlags add_start_flags(CLI::App* command, std::string& base, std::string& provider,
                           std::string& model) {
  return StartFlags{
      command->add_option("--base", base, "the revision to start from (default: HEAD)"),
      command->add_option("--provider", provider,
                          "a [providers.*] entry of loopr.toml (default: [llm] provider)"),
      command->add_option("--model", model, "the model (default: the provider's)")};
}

// --include-uncommitted, --validate-timeout: what a loop or a plan starts
// from, and how long one validation may run.
struct CheckoutFlags {
  CLI::Option* validate_timeout;
};

CheckoutFlags add_checkout_flags(CLI::App* command, bool& include_uncommitted,
                                 std::uint64_t& validate_timeout) {
  command->add_flag("--include-uncommitted", include_uncommitted,
                    "start from the checkout as it is: its uncommitted and untracked (not "
                    "ignored) changes in a snapshot commit; your branch, index and files are "
                    "left alone");
  return CheckoutFlags{
      command
          ->add_option("--validate-timeout", validate_timeout,
                       "stop a validation after this many seconds (at most the validate tool's "
                       "timeout); its output so far is kept")
          ->check(CLI::Range(std::uint64_t{1}, std::uint64_t{86400}))};
}

struct GlobalFlags {
  config::PathFlags paths;
  bool json = false;
};

// The command the line chose, run once the whole line has parsed. Each
// add_*_commands() below sets it from its subcommands' callbacks; the values
// those read are fields of the group's *Flags, which run_looprctl owns, so
// they outlive the parse (the callbacks copy the CLI::Option pointers, which
// the App owns).
using ChosenCommand = std::function<int(const CommandContext&)>;

// ---- looprd itself: daemon start|stop|status ----
struct DaemonFlags {
  DaemonStartOptions start;
  std::int64_t start_wait_ms = DaemonStartOptions{}.wait.count();
  std::int64_t stop_wait_ms = 10'000;
};

void add_daemon_commands(CLI::App& app, DaemonFlags& f, ChosenCommand& command) {
  auto* daemon = app.add_subcommand("daemon", "start, stop or query looprd");
  daemon->require_subcommand(1);
  auto* start_cmd =
      daemon->add_subcommand("start", "start looprd in the background and wait until it answers");
  start_cmd->add_option("--looprd", f.start.looprd,
                        "the looprd binary (default: looprd next to looprctl)");
  start_cmd->add_option("--wait-ms", f.start_wait_ms, "how long to wait for looprd to answer")
      ->check(CLI::Range(std::int64_t{0}, kMaxWaitMs));
  start_cmd->callback([&f, &command] {
    command = [&f](const CommandContext& c) {
      f.start.wait = Milliseconds(f.start_wait_ms);
      return run_daemon_start(c, f.start);
    };
  });
  auto* stop_cmd = daemon->add_subcommand("stop", "ask looprd to shut down and wait until it has");
  stop_cmd->add_option("--wait-ms", f.stop_wait_ms, "how long to wait for looprd to stop")
      ->check(CLI::Range(std::int64_t{0}, kMaxWaitMs));
  stop_cmd->callback([&f, &command] {
    command = [&f](const CommandContext& c) {
      return run_daemon_stop(c, Milliseconds(f.stop_wait_ms));
    };
  });
  daemon->add_subcommand("status", "whether looprd answers, and the state of its lanes")
      ->callback([&command] { command = run_daemon_status; });
}

// ---- tools: call, tools, mcp, approvals, events, metrics ----
struct ToolFlags {
  CallOptions call;
  std::string call_args;
  std::string loop_id;
  std::uint64_t timeout_ms = 0;
  McpOptions mcp;
  std::string approve_id;
  bool approve_always = false;
  bool approve_yes = false;
  std::string deny_id;
  std::string deny_reason;
  EventsOptions events;
  std::uint64_t event_count = 0;
};

void add_tool_commands(CLI::App& app, ToolFlags& f, ChosenCommand& command) {
  auto* call_cmd = app.add_subcommand("call", "run one tool through looprd and print its result");
  call_cmd->add_option("tool", f.call.tool, "the tool, e.g. read_file (see: looprctl tools)")
      ->required();
  auto* args_option =
      call_cmd->add_option("args", f.call_args,
                           "the tool's arguments: a JSON object, or - to read it from stdin "
                           "(default: {})");
  call_cmd->add_option("--worktree", f.call.worktree,
                       "the folder the tool works in (default: the current folder)");
  auto* timeout_option =
      call_cmd->add_option("--timeout-ms", f.timeout_ms, "the call's timeout (default: the tool's)")
          ->check(CLI::Range(std::uint64_t{1}, std::uint64_t{86'400'000}));
  auto* loop_option = call_cmd->add_option("--loop-id", f.loop_id, "run the call for this loop");
  call_cmd->callback([&f, &command, args_option, timeout_option, loop_option] {
    if (args_option->count() > 0) f.call.args = f.call_args;
    if (timeout_option->count() > 0) f.call.timeout_ms = f.timeout_ms;
    if (loop_option->count() > 0) f.call.loop_id = f.loop_id;
    command = [&f](const CommandContext& c) { return run_call(c, f.call); };
  });

  app.add_subcommand("tools", "list the tools looprd offers")->callback([&command] {
    command = run_tools;
  });

  f.mcp.server_version = LOOPR_VERSION;
  auto* mcp_cmd = app.add_subcommand(
      "mcp", "serve loopr's tools to an MCP host (Claude Code, Codex, ...) on stdio, or --http");
  mcp_cmd->add_option("--worktree", f.mcp.worktree,
                      "the folder the tools work in (default: the client's first root, else the "
                      "current folder)");
  mcp_cmd->add_option("--tools", f.mcp.tools,
                      "offer only these tools, comma-separated (default: every enabled tool)");
  mcp_cmd->add_flag("--elicit-approvals", f.mcp.elicit_approvals,
                    "ask the MCP client to approve calls that wait for approval (when it "
                    "supports elicitation); looprctl approve works either way");
  mcp_cmd->add_option("--http", f.mcp.http,
                      "serve Streamable HTTP on this loopback HOST:PORT instead of stdio "
                      "(e.g. 127.0.0.1:8765; port 0: any free one)");
  mcp_cmd->add_option("--token-file", f.mcp.token_file,
                      "--http: write the bearer token here (default: <state-dir>/mcp-http.token)");
  mcp_cmd->add_flag("--insecure-no-token", f.mcp.insecure_no_token,
                    "--http: accept requests without the token (for conformance tests only)");
  mcp_cmd->callback(
      [&f, &command] { command = [&f](const CommandContext& c) { return run_mcp(c, f.mcp); }; });
  app.add_subcommand("approvals", "list the calls waiting for approval")->callback([&command] {
    command = run_approvals;
  });
  auto* approve_cmd = app.add_subcommand("approve", "let a waiting call run");
  approve_cmd->add_option("id", f.approve_id, "the approval's id (see: looprctl approvals)")
      ->required();
  auto* always_flag =
      approve_cmd->add_flag("--always", f.approve_always,
                            "also save the narrowest rules that let exactly this command run in "
                            "this repository without asking again (shown first; run_command and "
                            "run_command_isolated)");
  approve_cmd->add_flag("--yes", f.approve_yes, "with --always: save without asking")
      ->needs(always_flag);
  approve_cmd->callback([&f, &command] {
    command = [&f](const CommandContext& c) {
      return f.approve_always ? run_approve_always(c, f.approve_id, f.approve_yes)
                              : run_approve(c, f.approve_id);
    };
  });
  auto* deny_cmd = app.add_subcommand("deny", "refuse a waiting call");
  deny_cmd->add_option("id", f.deny_id, "the approval's id (see: looprctl approvals)")->required();
  auto* reason_option = deny_cmd->add_option("--reason", f.deny_reason,
                                             "why, passed back to the model that made the call");
  deny_cmd->callback([&f, &command, reason_option] {
    command = [&f, reason_option](const CommandContext& c) {
      return run_deny(c, f.deny_id,
                      reason_option->count() > 0 ? std::optional(f.deny_reason) : std::nullopt);
    };
  });

  auto* events_cmd = app.add_subcommand(
      "events", "print looprd's events, one per line, until interrupted or --count events");
  events_cmd->add_option("--topic", f.events.topics,
                         "only this event (repeatable), e.g. tool.finished (default: all)");
  auto* count_option = events_cmd->add_option("--count", f.event_count, "stop after N events")
                           ->check(CLI::Range(std::uint64_t{1}, UINT64_MAX));
  events_cmd->add_flag("--follow")->description("keep printing events (the default)");
  events_cmd->callback([&f, &command, count_option] {
    if (count_option->count() > 0) f.events.count = f.event_count;
    command = [&f](const CommandContext& c) { return run_events(c, f.events); };
  });

  app.add_subcommand("metrics", "per-tool call counts and latencies, per-lane state")
      ->callback([&command] { command = run_metrics; });
  app.add_subcommand("workers",
                     "the workers on other machines ([cluster], NATS): labels, slots, the jobs "
                     "each runs")
      ->callback([&command] { command = run_workers; });
}

// ---- loops: loops, loop run|list|show|logs|pause|resume|cancel|delete|rerun|export ----
struct LoopFlags {
  LoopListOptions list;
  std::string list_status;
  std::string list_type;
  LoopRunOptions run;
  std::string run_base;
  std::string run_provider;
  std::string run_model;
  std::string run_validate;
  std::uint64_t run_max_iterations = 0;
  double run_budget_usd = 0;
  std::uint64_t run_validate_timeout = 0;
  std::string show_id;
  LoopLogsOptions logs;
  std::int64_t logs_iteration = 0;
  std::string control_id;
  LoopDeleteOptions remove;
  std::string rerun_id;
  std::string rerun_feedback;
  std::string export_id;
};

// `loops` and `loop list`: the same flags and command.
void add_loop_list_flags(CLI::App* list_cmd, LoopFlags& f, ChosenCommand& command) {
  static const std::vector<std::string> statuses = {
      "queued",    "running",          "paused", "completed",         "failed",
      "cancelled", "budget_exhausted", "stuck",  "awaiting_approval", "waiting",
      "rejected",  "invalidated",      "blocked"};
  auto* status_option =
      list_cmd->add_option("--status", f.list_status, "only loops with this status")
          ->check(CLI::IsMember(statuses));
  auto* type_option = list_cmd->add_option("--type", f.list_type, "only loops of this type");
  list_cmd->add_flag("--all", f.list.all, "include deleted loops");
  list_cmd->add_flag("--tree", f.list.tree,
                     "as trees: each loop under its parent (plan, spec, phase, code)");
  list_cmd->callback([&f, &command, status_option, type_option] {
    if (status_option->count() > 0) f.list.status = f.list_status;
    if (type_option->count() > 0) f.list.type = f.list_type;
    command = [&f](const CommandContext& c) { return run_loops(c, f.list); };
  });
}

void add_loop_commands(CLI::App& app, LoopFlags& f, ChosenCommand& command) {
  add_loop_list_flags(
      app.add_subcommand("loops", "list the loops: status, iteration, tokens, cost"), f, command);

  auto* loop_cmd = app.add_subcommand("loop", "run, inspect and steer LLM agent loops");
  loop_cmd->require_subcommand(1);

  auto* run_cmd = loop_cmd->add_subcommand(
      "run", "start a loop on a git repository and follow it until it ends (Ctrl-C detaches)");
  run_cmd->add_option("task", f.run.task, "what the loop should achieve")->required();
  run_cmd->add_option("--type", f.run.type, "the loop type (default: code)");
  run_cmd->add_option("--repo", f.run.repo, "the git repository the loop works on")->required();
  const StartFlags start = add_start_flags(run_cmd, f.run_base, f.run_provider, f.run_model);
  const CheckoutFlags checkout =
      add_checkout_flags(run_cmd, f.run.include_uncommitted, f.run_validate_timeout);
  auto* max_iterations_option =
      run_cmd->add_option("--max-iterations", f.run_max_iterations, "stop after N iterations")
          ->check(CLI::Range(std::uint64_t{1}, std::uint64_t{1'000'000}));
  auto* budget_option =
      run_cmd
          ->add_option("--budget-usd", f.run_budget_usd, "stop once the model calls cost this much")
          ->check(kPositiveUsd);
  auto* validate_option =
      run_cmd->add_option("--validate", f.run_validate,
                          "the command that decides the task is done (default: the "
                          "loop type's validation_command, else [commands] validate)");
  run_cmd->add_flag("--detach", f.run.detach, "print the loop's id and return at once");
  run_cmd->callback(
      [&f, &command, start, checkout, max_iterations_option, budget_option, validate_option] {
        if (start.base->count() > 0) f.run.base = f.run_base;
        if (start.provider->count() > 0) f.run.provider = f.run_provider;
        if (start.model->count() > 0) f.run.model = f.run_model;
        if (max_iterations_option->count() > 0) f.run.max_iterations = f.run_max_iterations;
        if (budget_option->count() > 0) f.run.budget_usd = f.run_budget_usd;
        if (validate_option->count() > 0) f.run.validate = f.run_validate;
        if (checkout.validate_timeout->count() > 0) {
          f.run.validate_timeout_s = f.run_validate_timeout;
        }
        command = [&f](const CommandContext& c) { return run_loop_run(c, f.run); };
      });

  add_loop_list_flags(loop_cmd->add_subcommand("list", "the same as: looprctl loops"), f, command);

  auto* show_cmd = loop_cmd->add_subcommand(
      "show", "a loop's status, task, worktree, usage, budget, iterations, last validation");
  show_cmd->add_option("id", f.show_id, "the loop's id (see: looprctl loops)")->required();
  show_cmd->callback([&f, &command] {
    command = [&f](const CommandContext& c) { return run_loop_show(c, f.show_id); };
  });

  auto* logs_cmd = loop_cmd->add_subcommand(
      "logs", "a loop's journal: model text, tool calls and results, validations");
  logs_cmd->add_option("id", f.logs.id, "the loop's id (see: looprctl loops)")->required();
  logs_cmd->add_flag("--follow,-f", f.logs.follow,
                     "then print new steps as they happen, until the loop ends");
  auto* iteration_option =
      logs_cmd->add_option("--iteration", f.logs_iteration, "only this iteration")
          ->check(CLI::Range(std::int64_t{0}, INT64_MAX));
  logs_cmd->callback([&f, &command, iteration_option] {
    if (iteration_option->count() > 0) f.logs.iteration = f.logs_iteration;
    command = [&f](const CommandContext& c) { return run_loop_logs(c, f.logs); };
  });

  for (const auto& [name, control, description] :
       {std::tuple{"pause", LoopControl::pause, "pause a loop after its current model turn"},
        std::tuple{"resume", LoopControl::resume, "resume a paused loop"},
        std::tuple{"cancel", LoopControl::cancel,
                   "stop a loop for good: its tool calls and model call are cancelled"}}) {
    auto* control_cmd = loop_cmd->add_subcommand(name, description);
    control_cmd->add_option("id", f.control_id, "the loop's id (see: looprctl loops)")->required();
    control_cmd->callback([&f, &command, control = control] {
      command = [&f, control](const CommandContext& c) {
        return run_loop_control(c, control, f.control_id);
      };
    });
  }

  auto* delete_cmd = loop_cmd->add_subcommand(
      "delete", "hide a loop that is not running from the list (its record stays)");
  delete_cmd->add_option("id", f.remove.id, "the loop's id (see: looprctl loops)")->required();
  delete_cmd->add_flag("--worktree", f.remove.remove_worktree, "also remove its worktree");
  delete_cmd->add_flag("--branch", f.remove.remove_branch, "also remove its branch loop/ID");
  delete_cmd->callback([&f, &command] {
    command = [&f](const CommandContext& c) { return run_loop_delete(c, f.remove); };
  });

  auto* rerun_cmd = loop_cmd->add_subcommand(
      "rerun",
      "run a loop again (a spec or phase of a plan: its own work, then new children), told your "
      "feedback; every loop under it is invalidated");
  rerun_cmd->add_option("id", f.rerun_id, "the loop's id (see: looprctl loops --tree)")->required();
  rerun_cmd->add_option("--feedback", f.rerun_feedback, "what to do differently");
  rerun_cmd->callback([&f, &command] {
    command = [&f](const CommandContext& c) {
      return run_loop_rerun(c, f.rerun_id, f.rerun_feedback);
    };
  });

  auto* export_cmd = loop_cmd->add_subcommand(
      "export", "print a loop's model turns as JSON Lines (a scripted provider's session file)");
  export_cmd->add_option("id", f.export_id, "the loop's id (see: looprctl loops)")->required();
  export_cmd->callback([&f, &command] {
    command = [&f](const CommandContext& c) { return run_loop_export(c, f.export_id); };
  });
}

// ---- plans: plan DESCRIPTION, plan show|approve|reject|iterate|merge, gc ----
struct PlanFlags {
  PlanCreateOptions create;
  std::string base;
  std::string provider;
  std::string model;
  double budget_usd = 0;
  bool no_follow = false;
  std::uint64_t validate_timeout = 0;
  std::string id;
  bool approve_follow = false;
  std::string reject_reason;
  std::string iterate_feedback;
  std::string merge_into;
  bool gc_dry_run = false;
};

void add_plan_commands(CLI::App& app, PlanFlags& f, ChosenCommand& command) {
  auto* plan_cmd = app.add_subcommand(
      "plan",
      "write a plan (specs, phases, code loops) for a repository and follow it until it awaits "
      "your approval; or: plan show|approve|reject|iterate|merge ID");
  plan_cmd->require_subcommand(0, 1);
  auto* description_option =
      plan_cmd->add_option("description", f.create.description, "what the plan should achieve");
  auto* repo_option =
      plan_cmd->add_option("--repo", f.create.repo, "the git repository the plan works on");
  const StartFlags start = add_start_flags(plan_cmd, f.base, f.provider, f.model);
  const CheckoutFlags checkout =
      add_checkout_flags(plan_cmd, f.create.include_uncommitted, f.validate_timeout);
  auto* budget_option =
      plan_cmd
          ->add_option("--budget-usd", f.budget_usd,
                       "stop the whole plan (every loop in it) once it cost this much")
          ->check(kPositiveUsd);
  auto* no_follow_option =
      plan_cmd->add_flag("--no-follow", f.no_follow, "print the plan's id and return at once");
  auto* approve_plan_option =
      plan_cmd
          ->add_flag("--approve-plan", f.create.approve_plan,
                     "approve the plan as soon as it is written and follow it to its end (for "
                     "headless runs: the exit status is the plan's outcome)")
          ->excludes(no_follow_option);

  auto* show_cmd = plan_cmd->add_subcommand(
      "show", "a plan as Markdown, the tree of loops carrying it out, its budget");
  show_cmd->add_option("id", f.id, "the plan's id, e.g. p1 (see: looprctl loops --tree)")
      ->required();
  show_cmd->callback([&f, &command] {
    command = [&f](const CommandContext& c) { return run_plan_show(c, f.id); };
  });

  auto* approve_cmd = plan_cmd->add_subcommand("approve", "carry out a plan that awaits approval");
  approve_cmd->add_option("id", f.id, "the plan's id")->required();
  approve_cmd->add_flag("--follow,-f", f.approve_follow,
                        "then follow every loop of the plan until the plan ends");
  approve_cmd->callback([&f, &command] {
    command = [&f](const CommandContext& c) { return run_plan_approve(c, f.id, f.approve_follow); };
  });

  auto* reject_cmd = plan_cmd->add_subcommand("reject", "drop a plan: it ends as rejected");
  reject_cmd->add_option("id", f.id, "the plan's id")->required();
  auto* reject_reason_option =
      reject_cmd->add_option("--reason", f.reject_reason, "why, kept with the plan");
  reject_cmd->callback([&f, &command, reject_reason_option] {
    command = [&f, reject_reason_option](const CommandContext& c) {
      return run_plan_reject(
          c, f.id,
          reject_reason_option->count() > 0 ? std::optional(f.reject_reason) : std::nullopt);
    };
  });

  auto* iterate_cmd = plan_cmd->add_subcommand(
      "iterate",
      "write the plan again with your feedback; loops it already started are invalidated");
  iterate_cmd->add_option("id", f.id, "the plan's id")->required();
  iterate_cmd->add_option("--feedback", f.iterate_feedback, "what to change")->required();
  iterate_cmd->callback([&f, &command] {
    command = [&f](const CommandContext& c) {
      return run_plan_iterate(c, f.id, f.iterate_feedback);
    };
  });

  auto* merge_cmd = plan_cmd->add_subcommand(
      "merge", "bring a completed plan's branch into your branch (fast-forward when possible)");
  merge_cmd->add_option("id", f.id, "the plan's id")->required();
  auto* merge_into_option = merge_cmd->add_option(
      "--into", f.merge_into, "the branch (default: the one HEAD was on when the plan was made)");
  merge_cmd->callback([&f, &command, merge_into_option] {
    command = [&f, merge_into_option](const CommandContext& c) {
      return run_plan_merge(
          c, f.id, merge_into_option->count() > 0 ? std::optional(f.merge_into) : std::nullopt);
    };
  });

  // Runs after the subcommand's callback: `plan DESCRIPTION` when none was given.
  plan_cmd->callback([&f, &command, plan_cmd, description_option, repo_option, start, checkout,
                      budget_option, no_follow_option, approve_plan_option] {
    const std::vector<CLI::Option*> create_options = {
        description_option, repo_option,   start.base,       start.provider,
        start.model,        budget_option, no_follow_option, approve_plan_option};
    if (!plan_cmd->get_subcommands().empty()) {
      for (CLI::Option* option : create_options) {
        if (option->count() > 0) {
          throw CLI::ValidationError(option->get_name(),
                                     "is an option of looprctl plan DESCRIPTION, not of plan " +
                                         plan_cmd->get_subcommands().front()->get_name());
        }
      }
      return;
    }
    if (description_option->count() == 0) throw CLI::RequiredError("description");
    if (repo_option->count() == 0) throw CLI::RequiredError("--repo");
    if (start.base->count() > 0) f.create.base = f.base;
    if (start.provider->count() > 0) f.create.provider = f.provider;
    if (start.model->count() > 0) f.create.model = f.model;
    if (budget_option->count() > 0) f.create.budget_usd = f.budget_usd;
    if (checkout.validate_timeout->count() > 0) {
      f.create.validate_timeout_s = f.validate_timeout;
    }
    f.create.follow = !f.no_follow;
    command = [&f](const CommandContext& c) { return run_plan_create(c, f.create); };
  });

  auto* gc_cmd = app.add_subcommand(
      "gc",
      "remove the worktrees of finished loop trees and of invalidated and deleted loops "
      "(branches are kept)");
  gc_cmd->add_flag("--dry-run", f.gc_dry_run, "only say what would be removed");
  gc_cmd->callback([&f, &command] {
    command = [&f](const CommandContext& c) { return run_gc(c, f.gc_dry_run); };
  });
}

// ---- memory notes: memory list|search|show|delete ----
struct MemoryFlags {
  MemoryListOptions list;
  std::int64_t limit = 0;
  MemorySearchOptions search;
  std::int64_t top_k = 0;
  std::string note_id;
};

void add_memory_commands(CLI::App& app, MemoryFlags& f, ChosenCommand& command) {
  auto* memory_cmd = app.add_subcommand(
      "memory", "the notes loops keep with the memory tools: list, search, show, delete");
  memory_cmd->require_subcommand(1);
  const std::string repo_help =
      "only the notes of the repository this folder is in (a subfolder or a git worktree "
      "names its repository), and your own (default: every note)";

  auto* list_cmd = memory_cmd->add_subcommand("list", "the notes, most recently updated first");
  list_cmd->add_option("--repo", f.list.repo, repo_help);
  auto* limit_option =
      list_cmd->add_option("--limit", f.limit, "show at most N notes (default: 100)")
          ->check(CLI::Range(std::int64_t{1}, std::int64_t{1000}));
  list_cmd->callback([&f, &command, limit_option] {
    if (limit_option->count() > 0) f.list.limit = f.limit;
    command = [&f](const CommandContext& c) { return run_memory_list(c, f.list); };
  });

  auto* search_cmd = memory_cmd->add_subcommand(
      "search", "the notes holding these words, best match first, the words marked");
  search_cmd->add_option("query", f.search.query, "the words to look for (plain text)")->required();
  auto* repo_option = search_cmd->add_option("--repo", f.search.repo, repo_help);
  auto* top_k_option =
      search_cmd->add_option("--top-k", f.top_k, "show at most N matches (default: 10)")
          ->check(CLI::Range(std::int64_t{1}, std::int64_t{100}));
  search_cmd
      ->add_flag("--conversation", f.search.conversation,
                 "also search what the models of the repository's loops said (needs --repo)")
      ->needs(repo_option);
  search_cmd->callback([&f, &command, top_k_option] {
    if (top_k_option->count() > 0) f.search.top_k = f.top_k;
    command = [&f](const CommandContext& c) { return run_memory_search(c, f.search); };
  });

  auto* show_cmd = memory_cmd->add_subcommand("show", "one note, whole, with its fields");
  show_cmd->add_option("note_id", f.note_id, "the note's id (see: looprctl memory list)")
      ->required();
  show_cmd->callback([&f, &command] {
    command = [&f](const CommandContext& c) { return run_memory_show(c, f.note_id); };
  });
  auto* delete_cmd =
      memory_cmd->add_subcommand("delete", "delete a note: no loop will find it again");
  delete_cmd->add_option("note_id", f.note_id, "the note's id (see: looprctl memory list)")
      ->required();
  delete_cmd->callback([&f, &command] {
    command = [&f](const CommandContext& c) { return run_memory_delete(c, f.note_id); };
  });
}

// ---- repository settings: repo trust|untrust|show ----
struct RepoFlags {
  std::string dir;
};

void add_repo_commands(CLI::App& app, RepoFlags& f, ChosenCommand& command) {
  auto* repo_cmd = app.add_subcommand(
      "repo", "a repository's own settings (.loopr/loopr.toml): trust, untrust, show what applies");
  repo_cmd->require_subcommand(1);
  const std::string dir_help =
      "the repository's folder, or one inside it (default: the current folder)";
  auto* trust_cmd = repo_cmd->add_subcommand(
      "trust",
      "honour the repository's .loopr/loopr.toml as it is now (its sha256 is recorded; a "
      "changed file is not honoured until trusted again)");
  trust_cmd->add_option("dir", f.dir, dir_help);
  trust_cmd->callback([&f, &command] {
    command = [&f](const CommandContext& c) { return run_repo_trust(c, f.dir); };
  });
  auto* untrust_cmd =
      repo_cmd->add_subcommand("untrust", "stop honouring the repository's .loopr/loopr.toml");
  untrust_cmd->add_option("dir", f.dir, dir_help);
  untrust_cmd->callback([&f, &command] {
    command = [&f](const CommandContext& c) { return run_repo_untrust(c, f.dir); };
  });
  auto* show_cmd = repo_cmd->add_subcommand(
      "show",
      "whether the repository's file is trusted, and each command and worktree need with where "
      "it came from (user config, repository file, daemon default)");
  show_cmd->add_option("dir", f.dir, dir_help);
  show_cmd->callback([&f, &command] {
    command = [&f](const CommandContext& c) { return run_repo_show(c, f.dir); };
  });
}

// ---- approval rules: policy check ----
struct PolicyFlags {
  PolicyCheckOptions check;
  std::string rules_repo;
  std::int64_t forget_id = 0;
};

void add_policy_commands(CLI::App& app, PolicyFlags& f, ChosenCommand& command) {
  auto* policy_cmd = app.add_subcommand("policy", "what the approval rules decide");
  policy_cmd->require_subcommand(1);
  auto* check_cmd = policy_cmd->add_subcommand(
      "check",
      "the decision of the [[approval.rules]] for a command line, each simple command with the "
      "rule that matched it; exit 0 allow, 10 ask, 11 deny");
  check_cmd
      ->add_option("command", f.check.command,
                   "the command line, after -- (quote it whole: -- 'npm test && git push')")
      ->required();
  check_cmd->add_option("--repo", f.check.repo,
                        "add the rules of this repository's trusted .loopr/loopr.toml (asks "
                        "looprd, which keeps the trust)");
  check_cmd->add_option("--tool", f.check.tool,
                        "the tool the command is for: run_command (default) or "
                        "run_command_isolated");
  check_cmd->callback([&f, &command] {
    command = [&f](const CommandContext& c) { return run_policy_check(c, f.check); };
  });
  auto* rules_cmd = policy_cmd->add_subcommand(
      "rules", "the rules saved by looprctl approve --always, with their ids");
  rules_cmd->add_option("--repo", f.rules_repo, "only this repository's");
  rules_cmd->callback([&f, &command] {
    command = [&f](const CommandContext& c) { return run_policy_rules(c, f.rules_repo); };
  });
  auto* forget_cmd =
      policy_cmd->add_subcommand("forget", "forget a rule saved by looprctl approve --always");
  forget_cmd->add_option("id", f.forget_id, "the rule's id (see: looprctl policy rules)")
      ->required()
      ->check(CLI::PositiveNumber);
  forget_cmd->callback([&f, &command] {
    command = [&f](const CommandContext& c) { return run_policy_forget(c, f.forget_id); };
  });
}

// ---- the terminal UI: tui ----
struct TuiFlags {
  std::string repo;
};

void add_tui_command(CLI::App& app, TuiFlags& f, ChosenCommand& command) {
  auto* tui_cmd = app.add_subcommand(
      "tui", "watch and steer loops, plans, tool calls and approvals in a terminal UI");
  tui_cmd->add_option("--repo", f.repo,
                      "the repository new plans are made in (default: the current folder)");
  tui_cmd->callback(
      [&f, &command] { command = [&f](const CommandContext& c) { return run_tui(c, f.repo); }; });
}

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
  app.set_version_flag("--version", std::string("looprctl ") + LOOPR_VERSION,
                       "print the version and exit");
  app.add_option("--config-dir", global.paths.config_dir,
                 "loopr's configuration folder (default: $LOOPR_CONFIG_DIR, "
                 "$XDG_CONFIG_HOME/loopr)");
  app.add_option("--state-dir", global.paths.state_dir,
                 "loopr's state folder, where looprd.log lives (default: $LOOPR_STATE_DIR, "
                 "$XDG_STATE_HOME/loopr)");

  ChosenCommand command;
  DaemonFlags daemon_flags;
  ToolFlags tool_flags;
  LoopFlags loop_flags;
  PlanFlags plan_flags;
  MemoryFlags memory_flags;
  RepoFlags repo_flags;
  PolicyFlags policy_flags;
  TuiFlags tui_flags;
  add_daemon_commands(app, daemon_flags, command);
  add_tool_commands(app, tool_flags, command);
  add_loop_commands(app, loop_flags, command);
  add_plan_commands(app, plan_flags, command);
  add_memory_commands(app, memory_flags, command);
  add_repo_commands(app, repo_flags, command);
  add_policy_commands(app, policy_flags, command);
  add_tui_command(app, tui_flags, command);

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
