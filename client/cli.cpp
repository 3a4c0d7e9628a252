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

  McpOptions mcp;
  mcp.server_version = LOOPR_VERSION;
  auto* mcp_cmd = app.add_subcommand(
      "mcp", "serve loopr's tools to an MCP host (Claude Code, Codex, ...) on stdio, or --http");
  mcp_cmd->add_option("--worktree", mcp.worktree,
                      "the folder the tools work in (default: the client's first root, else the "
                      "current folder)");
  mcp_cmd->add_option("--tools", mcp.tools,
                      "offer only these tools, comma-separated (default: every enabled tool)");
  mcp_cmd->add_flag("--elicit-approvals", mcp.elicit_approvals,
                    "ask the MCP client to approve calls that wait for approval (when it "
                    "supports elicitation); looprctl approve works either way");
  mcp_cmd->add_option("--http", mcp.http,
                      "serve Streamable HTTP on this loopback HOST:PORT instead of stdio "
                      "(e.g. 127.0.0.1:8765; port 0: any free one)");
  mcp_cmd->add_option("--token-file", mcp.token_file,
                      "--http: write the bearer token here (default: <state-dir>/mcp-http.token)");
  mcp_cmd->add_flag("--insecure-no-token", mcp.insecure_no_token,
                    "--http: accept requests without the token (for conformance tests only)");
  mcp_cmd->callback([&] { command = [&](const CommandContext& c) { return run_mcp(c, mcp); }; });
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
  const std::vector<std::string> statuses = {
      "queued",    "running",          "paused", "completed",         "failed",
      "cancelled", "budget_exhausted", "stuck",  "awaiting_approval", "waiting",
      "rejected",  "invalidated",      "blocked"};
  LoopListOptions loop_list;
  std::string list_status;
  std::string list_type;
  const auto list_flags = [&](CLI::App* list_cmd) {
    auto* status_option =
        list_cmd->add_option("--status", list_status, "only loops with this status")
            ->check(CLI::IsMember(statuses));
    auto* type_option = list_cmd->add_option("--type", list_type, "only loops of this type");
    list_cmd->add_flag("--all", loop_list.all, "include deleted loops");
    list_cmd->add_flag("--tree", loop_list.tree,
                       "as trees: each loop under its parent (plan, spec, phase, code)");
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
  const StartFlags run_start = add_start_flags(run_cmd, run_base, run_provider, run_model);
  std::uint64_t run_validate_timeout = 0;
  const CheckoutFlags run_checkout =
      add_checkout_flags(run_cmd, loop_run.include_uncommitted, run_validate_timeout);
  auto* max_iterations_option =
      run_cmd->add_option("--max-iterations", run_max_iterations, "stop after N iterations")
          ->check(CLI::Range(std::uint64_t{1}, std::uint64_t{1'000'000}));
  auto* budget_option =
      run_cmd
          ->add_option("--budget-usd", run_budget_usd, "stop once the model calls cost this much")
          ->check(kPositiveUsd);
  auto* validate_option =
      run_cmd->add_option("--validate", run_validate,
                          "the command that decides the task is done (default: the "
                          "loop type's validation_command, else [commands] validate)");
  run_cmd->add_flag("--detach", loop_run.detach, "print the loop's id and return at once");
  run_cmd->callback([&] {
    if (run_start.base->count() > 0) loop_run.base = run_base;
    if (run_start.provider->count() > 0) loop_run.provider = run_provider;
    if (run_start.model->count() > 0) loop_run.model = run_model;
    if (max_iterations_option->count() > 0) loop_run.max_iterations = run_max_iterations;
    if (budget_option->count() > 0) loop_run.budget_usd = run_budget_usd;
    if (validate_option->count() > 0) loop_run.validate = run_validate;
    if (run_checkout.validate_timeout->count() > 0) {
      loop_run.validate_timeout_s = run_validate_timeout;
    }
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

  std::string rerun_id;
  std::string rerun_feedback;
  auto* rerun_cmd = loop_cmd->add_subcommand(
      "rerun",
      "run a loop again (a spec or phase of a plan: its own work, then new children), told your "
      "feedback; every loop under it is invalidated");
  rerun_cmd->add_option("id", rerun_id, "the loop's id (see: looprctl loops --tree)")->required();
  rerun_cmd->add_option("--feedback", rerun_feedback, "what to do differently");
  rerun_cmd->callback([&] {
    command = [&](const CommandContext& c) { return run_loop_rerun(c, rerun_id, rerun_feedback); };
  });

  std::string export_id;
  auto* export_cmd = loop_cmd->add_subcommand(
      "export", "print a loop's model turns as JSON Lines (a scripted provider's session file)");
  export_cmd->add_option("id", export_id, "the loop's id (see: looprctl loops)")->required();
  export_cmd->callback(
      [&] { command = [&](const CommandContext& c) { return run_loop_export(c, export_id); }; });

  // ---- plans ----
  PlanCreateOptions plan_create;
  std::string plan_base;
  std::string plan_provider;
  std::string plan_model;
  double plan_budget_usd = 0;
  bool plan_no_follow = false;
  auto* plan_cmd = app.add_subcommand(
      "plan",
      "write a plan (specs, phases, code loops) for a repository and follow it until it awaits "
      "your approval; or: plan show|approve|reject|iterate|merge ID");
  plan_cmd->require_subcommand(0, 1);
  auto* description_option =
      plan_cmd->add_option("description", plan_create.description, "what the plan should achieve");
  auto* plan_repo_option =
      plan_cmd->add_option("--repo", plan_create.repo, "the git repository the plan works on");
  const StartFlags plan_start = add_start_flags(plan_cmd, plan_base, plan_provider, plan_model);
  std::uint64_t plan_validate_timeout = 0;
  const CheckoutFlags plan_checkout =
      add_checkout_flags(plan_cmd, plan_create.include_uncommitted, plan_validate_timeout);
  auto* plan_budget_option =
      plan_cmd
          ->add_option("--budget-usd", plan_budget_usd,
                       "stop the whole plan (every loop in it) once it cost this much")
          ->check(kPositiveUsd);
  auto* no_follow_option =
      plan_cmd->add_flag("--no-follow", plan_no_follow, "print the plan's id and return at once");

  std::string plan_id;
  auto* plan_show_cmd = plan_cmd->add_subcommand(
      "show", "a plan as Markdown, the tree of loops carrying it out, its budget");
  plan_show_cmd->add_option("id", plan_id, "the plan's id, e.g. p1 (see: looprctl loops --tree)")
      ->required();
  plan_show_cmd->callback(
      [&] { command = [&](const CommandContext& c) { return run_plan_show(c, plan_id); }; });

  bool approve_follow = false;
  auto* plan_approve_cmd =
      plan_cmd->add_subcommand("approve", "carry out a plan that awaits approval");
  plan_approve_cmd->add_option("id", plan_id, "the plan's id")->required();
  plan_approve_cmd->add_flag("--follow,-f", approve_follow,
                             "then follow every loop of the plan until the plan ends");
  plan_approve_cmd->callback([&] {
    command = [&](const CommandContext& c) { return run_plan_approve(c, plan_id, approve_follow); };
  });

  std::string reject_reason;
  auto* plan_reject_cmd = plan_cmd->add_subcommand("reject", "drop a plan: it ends as rejected");
  plan_reject_cmd->add_option("id", plan_id, "the plan's id")->required();
  auto* reject_reason_option =
      plan_reject_cmd->add_option("--reason", reject_reason, "why, kept with the plan");
  plan_reject_cmd->callback([&] {
    command = [&](const CommandContext& c) {
      return run_plan_reject(
          c, plan_id,
          reject_reason_option->count() > 0 ? std::optional(reject_reason) : std::nullopt);
    };
  });

  std::string iterate_feedback;
  auto* plan_iterate_cmd = plan_cmd->add_subcommand(
      "iterate",
      "write the plan again with your feedback; loops it already started are invalidated");
  plan_iterate_cmd->add_option("id", plan_id, "the plan's id")->required();
  plan_iterate_cmd->add_option("--feedback", iterate_feedback, "what to change")->required();
  plan_iterate_cmd->callback([&] {
    command = [&](const CommandContext& c) {
      return run_plan_iterate(c, plan_id, iterate_feedback);
    };
  });

  std::string merge_into;
  auto* plan_merge_cmd = plan_cmd->add_subcommand(
      "merge", "bring a completed plan's branch into your branch (fast-forward when possible)");
  plan_merge_cmd->add_option("id", plan_id, "the plan's id")->required();
  auto* merge_into_option = plan_merge_cmd->add_option(
      "--into", merge_into, "the branch (default: the one HEAD was on when the plan was made)");
  plan_merge_cmd->callback([&] {
    command = [&](const CommandContext& c) {
      return run_plan_merge(
          c, plan_id, merge_into_option->count() > 0 ? std::optional(merge_into) : std::nullopt);
    };
  });

  // Runs after the subcommand's callback: `plan DESCRIPTION` when none was given.
  plan_cmd->callback([&] {
    const std::vector<CLI::Option*> create_options = {
        description_option, plan_repo_option,   plan_start.base, plan_start.provider,
        plan_start.model,   plan_budget_option, no_follow_option};
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
    if (plan_repo_option->count() == 0) throw CLI::RequiredError("--repo");
    if (plan_start.base->count() > 0) plan_create.base = plan_base;
    if (plan_start.provider->count() > 0) plan_create.provider = plan_provider;
    if (plan_start.model->count() > 0) plan_create.model = plan_model;
    if (plan_budget_option->count() > 0) plan_create.budget_usd = plan_budget_usd;
    if (plan_checkout.validate_timeout->count() > 0) {
      plan_create.validate_timeout_s = plan_validate_timeout;
    }
    plan_create.follow = !plan_no_follow;
    command = [&](const CommandContext& c) { return run_plan_create(c, plan_create); };
  });

  bool gc_dry_run = false;
  auto* gc_cmd = app.add_subcommand(
      "gc",
      "remove the worktrees of finished loop trees and of invalidated and deleted loops "
      "(branches are kept)");
  gc_cmd->add_flag("--dry-run", gc_dry_run, "only say what would be removed");
  gc_cmd->callback(
      [&] { command = [&](const CommandContext& c) { return run_gc(c, gc_dry_run); }; });

  // ---- memory notes ----
  auto* memory_cmd = app.add_subcommand(
      "memory", "the notes loops keep with the memory tools: list, search, show, delete");
  memory_cmd->require_subcommand(1);
  const std::string repo_help =
      "only the notes of the repository this folder is in (a subfolder or a git worktree "
      "names its repository), and your own (default: every note)";

  MemoryListOptions memory_list;
  std::int64_t memory_limit = 0;
  auto* memory_list_cmd =
      memory_cmd->add_subcommand("list", "the notes, most recently updated first");
  memory_list_cmd->add_option("--repo", memory_list.repo, repo_help);
  auto* memory_limit_option =
      memory_list_cmd->add_option("--limit", memory_limit, "show at most N notes (default: 100)")
          ->check(CLI::Range(std::int64_t{1}, std::int64_t{1000}));
  memory_list_cmd->callback([&] {
    if (memory_limit_option->count() > 0) memory_list.limit = memory_limit;
    command = [&](const CommandContext& c) { return run_memory_list(c, memory_list); };
  });

  MemorySearchOptions memory_search;
  std::int64_t memory_top_k = 0;
  auto* memory_search_cmd = memory_cmd->add_subcommand(
      "search", "the notes holding these words, best match first, the words marked");
  memory_search_cmd->add_option("query", memory_search.query, "the words to look for (plain text)")
      ->required();
  auto* memory_repo_option = memory_search_cmd->add_option("--repo", memory_search.repo, repo_help);
  auto* memory_top_k_option =
      memory_search_cmd->add_option("--top-k", memory_top_k, "show at most N matches (default: 10)")
          ->check(CLI::Range(std::int64_t{1}, std::int64_t{100}));
  memory_search_cmd
      ->add_flag("--conversation", memory_search.conversation,
                 "also search what the models of the repository's loops said (needs --repo)")
      ->needs(memory_repo_option);
  memory_search_cmd->callback([&] {
    if (memory_top_k_option->count() > 0) memory_search.top_k = memory_top_k;
    command = [&](const CommandContext& c) { return run_memory_search(c, memory_search); };
  });

  std::string note_id;
  auto* memory_show_cmd = memory_cmd->add_subcommand("show", "one note, whole, with its fields");
  memory_show_cmd->add_option("note_id", note_id, "the note's id (see: looprctl memory list)")
      ->required();
  memory_show_cmd->callback(
      [&] { command = [&](const CommandContext& c) { return run_memory_show(c, note_id); }; });
  auto* memory_delete_cmd =
      memory_cmd->add_subcommand("delete", "delete a note: no loop will find it again");
  memory_delete_cmd->add_option("note_id", note_id, "the note's id (see: looprctl memory list)")
      ->required();
  memory_delete_cmd->callback(
      [&] { command = [&](const CommandContext& c) { return run_memory_delete(c, note_id); }; });

  // ---- repository settings ----
  auto* repo_cmd = app.add_subcommand(
      "repo", "a repository's own settings (.loopr/loopr.toml): trust, untrust, show what applies");
  repo_cmd->require_subcommand(1);
  std::string repo_dir;
  const std::string repo_dir_help =
      "the repository's folder, or one inside it (default: the current folder)";
  auto* repo_trust_cmd = repo_cmd->add_subcommand(
      "trust",
      "honour the repository's .loopr/loopr.toml as it is now (its sha256 is recorded; a "
      "changed file is not honoured until trusted again)");
  repo_trust_cmd->add_option("dir", repo_dir, repo_dir_help);
  repo_trust_cmd->callback(
      [&] { command = [&](const CommandContext& c) { return run_repo_trust(c, repo_dir); }; });
  auto* repo_untrust_cmd =
      repo_cmd->add_subcommand("untrust", "stop honouring the repository's .loopr/loopr.toml");
  repo_untrust_cmd->add_option("dir", repo_dir, repo_dir_help);
  repo_untrust_cmd->callback(
      [&] { command = [&](const CommandContext& c) { return run_repo_untrust(c, repo_dir); }; });
  auto* repo_show_cmd = repo_cmd->add_subcommand(
      "show",
      "whether the repository's file is trusted, and each command and worktree need with where "
      "it came from (user config, repository file, daemon default)");
  repo_show_cmd->add_option("dir", repo_dir, repo_dir_help);
  repo_show_cmd->callback(
      [&] { command = [&](const CommandContext& c) { return run_repo_show(c, repo_dir); }; });

  std::string tui_repo;
  auto* tui_cmd = app.add_subcommand(
      "tui", "watch and steer loops, plans, tool calls and approvals in a terminal UI");
  tui_cmd->add_option("--repo", tui_repo,
                      "the repository new plans are made in (default: the current folder)");
  tui_cmd->callback(
      [&] { command = [&](const CommandContext& c) { return run_tui(c, tui_repo); }; });

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
