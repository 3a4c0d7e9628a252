// looprctl plan | plan show | approve | reject | iterate | merge, gc
// (docs/control-protocol.md, "Plans").
#include "client/plan_commands.hpp"

#include <algorithm>
#include <cmath>
#include <ostream>

#include "client/client_paths.hpp"
#include "client/loop_follow.hpp"
#include "client/loop_spec_params.hpp"
#include "client/loop_tree.hpp"
#include "client/loop_view.hpp"
#include "client/text_format.hpp"

namespace loopr::client {
namespace {

using nlohmann::json;

constexpr std::size_t kReasonWidth = 200;
constexpr std::size_t kFilesShown = 20;

json create_params(const PlanCreateOptions& options, const std::string& repo) {
  proto::LoopCreatePlanParams params;
  params.description = options.description;
  params.spec = spec_params(repo, options.base, options.provider, options.model,
                            options.validate_timeout_s, options.include_uncommitted);
  if (options.budget_usd) params.spec.plan_budget = {{"usd", *options.budget_usd}};
  return proto::to_json(params);
}

std::string plural(std::size_t count, const char* noun) {
  return std::to_string(count) + " " + noun + (count == 1 ? "" : "s");
}

// The plan's Markdown (plan.get's `markdown`) and where it is stored, or,
// before the plan loop wrote one, its description.
void print_markdown(const json& plan_get, std::ostream& out) {
  const json& markdown = member(plan_get, "markdown");
  if (!markdown.is_string()) {
    out << "no plan written yet; the description:\n";
    const std::string task = string_of(member(plan_get, "plan"), "task");
    out << "  " << (task.empty() ? "-" : printable_lines(task)) << '\n';
    return;
  }
  const std::string& text = markdown.get_ref<const std::string&>();
  out << printable_lines(text);
  if (text.empty() || text.back() != '\n') out << '\n';
  const std::string path = string_of(plan_get, "markdown_path");
  if (!path.empty()) out << "(the plan as Markdown: " << printable(path) << ")\n";
}

// What the person can do next with a plan in `status`.
void print_next_steps(const std::string& id, const std::string& status, std::ostream& out) {
  const std::string word = shell_word(id);
  if (status == "awaiting_approval") {
    const std::string commands[][2] = {
        {"looprctl plan approve " + word, "carry it out"},
        {"looprctl plan iterate " + word + " --feedback \"...\"",
         "write it again with your feedback"},
        {"looprctl plan reject " + word + " --reason \"...\"", "drop it"}};
    std::size_t width = 0;
    for (const auto& [command, what] : commands)
      width = std::max(width, code_points(command));
    out << "next:\n";
    for (const auto& [command, what] : commands)
      out << "  " << command << std::string(width - code_points(command) + 2, ' ') << what << '\n';
  } else if (status == "completed") {
    out << "bring it into your branch with: looprctl plan merge " << word << '\n';
  }
}

// The ids in result["invalidated"], printable and comma-separated.
std::string id_list(const json& ids) {
  std::string list;
  if (!ids.is_array()) return list;
  for (const json& id : ids)
    list += (list.empty() ? "" : ", ") +
            (id.is_string() ? printable(id.get<std::string>()) : printable(compact_json(id)));
  return list;
}

// The conflicting files a refused plan.merge names in its error data
// ({code, message, hint?, details?}), under details.files or files.
void print_refused_files(const Error& error, std::ostream& err) {
  const json& data = member(error.details, "data");
  const json* files = &member(member(data, "details"), "files");
  if (!files->is_array()) files = &member(data, "files");
  if (!files->is_array() || files->empty()) return;
  err << "conflicting files:\n";
  std::size_t shown = 0;
  for (const json& file : *files) {
    if (shown == kFilesShown) {
      err << "  ... and " << files->size() - shown << " more\n";
      break;
    }
    err << "  " << (file.is_string() ? printable(file.get<std::string>()) : compact_json(file))
        << '\n';
    ++shown;
  }
}

}  // namespace

// ---- plan ----

int run_plan_create(const CommandContext& context, const PlanCreateOptions& options) {
  // Followed, the exit status is the plan's outcome (failure.hpp).
  const auto fail = [&](const Error& error) {
    return options.follow ? context.fail_outcome(error) : context.fail(error);
  };
  if (blank(options.description)) {
    return fail(make_error(failure::usage, "the description is empty",
                           "say what the plan should achieve, e.g. looprctl plan --repo . "
                           "\"add a --verbose flag to every command\""));
  }
  if (options.budget_usd && !(std::isfinite(*options.budget_usd) && *options.budget_usd > 0)) {
    return fail(make_error(failure::usage, "--budget-usd must be a positive number"));
  }
  auto repo = absolute_folder(options.repo, "the repository", "--repo");
  if (!repo) return fail(repo.error());

  auto started = start_live_loop(
      context, LiveLoopStart{"loop.create_plan", create_params(options, *repo), "plan",
                             [](const std::string& id) {
                               return "see it with: looprctl plan show " + shell_word(id);
                             },
                             "awaiting_approval", options.follow});
  if (!started) return fail(started.error());
  if (!options.follow) return to_int(ExitStatus::ok);
  const std::string& id = started->id;
  std::string status = started->status;

  // What follows comes from the store: events may have been dropped.
  auto got = started->client.call<proto::methods::PlanGet>({id});
  if (!got) return fail(got.error());
  auto plan = object_in(*got, "plan", "plan.get");
  if (!plan) return fail(plan.error());
  if (!loop_status(*plan).empty()) status = loop_status(*plan);
  if (status == "awaiting_approval" && options.approve_plan) {
    // Headless: the gate is passed on the person's standing word.
    if (context.json) {
      context.out << compact_json(*got) << '\n';
    } else {
      context.out << '\n';
      print_markdown(*got, context.out);
      context.out << "\napproving plan " << printable(id) << " (--approve-plan)\n";
    }
    context.out.flush();
    return run_plan_approve(context, id, true);
  }
  if (context.json) {
    context.out << compact_json(*got) << '\n';
  } else if (status == "awaiting_approval") {
    context.out << "\nplan " << printable(id) << " awaits your approval\n\n";
    print_markdown(*got, context.out);
    context.out << '\n';
    print_next_steps(id, status, context.out);
  } else {
    if (member(*got, "markdown").is_string()) {
      print_markdown(*got, context.out);
      context.out << '\n';
    }
    print_loop_summary(*plan, context.out);
  }
  // A person at a terminal approves next (exit 0); a headless run (--json)
  // says a person is needed (7).
  if (status == "awaiting_approval" && !context.json) return to_int(ExitStatus::ok);
  return outcome_exit_status(status);
}

// ---- plan show ----

int run_plan_show(const CommandContext& context, const std::string& id) {
  auto client = context.open();
  if (!client) return context.fail(client.error());
  auto result = client->call<proto::methods::PlanGet>({id});
  if (!result) return context.fail(result.error());
  auto plan = object_in(*result, "plan", "plan.get");
  if (!plan) return context.fail(plan.error());
  auto tree = objects_in(*result, "tree", "plan.get", false);
  if (!tree) return context.fail(tree.error());
  if (context.json) {
    context.print_json(*result);
    return to_int(ExitStatus::ok);
  }
  std::ostream& out = context.out;
  out << "plan " << cell(*plan, "id") << "  " << status_with_reason(*plan, kReasonWidth, true)
      << "\n\n";
  print_markdown(*result, out);
  out << '\n';
  // The plan is the root; `tree` holds the loops under it (if it holds the
  // plan too, the tree keeps the first).
  json loops = json::array({*plan});
  for (const json& loop : *tree)
    loops.push_back(loop);
  print_loop_tree(loops, out);
  out << '\n';
  print_budget(member(*result, "plan_budget"), "plan budget", out);
  const std::string status = loop_status(*plan);
  if (status == "awaiting_approval" || status == "completed") {
    out << '\n';
    print_next_steps(id, status, out);
  }
  return to_int(ExitStatus::ok);
}

// ---- plan approve | reject | iterate ----

int run_plan_approve(const CommandContext& context, const std::string& id, bool follow) {
  // Following, the exit status is the plan's outcome (failure.hpp).
  const auto fail = [&](const Error& error) {
    return follow ? context.fail_outcome(error) : context.fail(error);
  };
  auto client = context.open();
  if (!client) return fail(client.error());
  // Subscribed before the approval, so the first children's events are seen.
  if (follow) {
    auto subscribed = subscribe_events(
        *client, {"loop.updated", "loop.merged", "loop.merge_conflict", "plan", "approval"},
        std::nullopt);
    if (!subscribed) return fail(subscribed.error());
  }
  auto result = client->call<proto::methods::PlanApprove>({id});
  if (!result) return fail(result.error());
  auto plan = object_in(*result, "plan", "plan.approve");
  if (!plan) return fail(plan.error());
  if (context.json && !follow) {
    context.print_json(*result);
    return to_int(ExitStatus::ok);
  }
  if (context.json) {
    context.out << compact_json(*result) << '\n';
  } else {
    context.out << "approved plan " << printable(id) << "; it is now "
                << status_with_reason(*plan, kReasonWidth, true) << '\n';
    if (follow) context.out << "(Ctrl-C stops following; the plan goes on)\n";
  }
  context.out.flush();
  if (!follow) return to_int(ExitStatus::ok);

  std::string status = loop_status(*plan);
  PlanTreePrinter printer(id, context.json, context.out);
  printer.known(*plan);
  if (context.json) printer.stop_at_approvals();
  if (!PlanTreePrinter::stops_at(status)) {
    DetachOnInterrupt detach(
        "stopped following; the plan goes on \xe2\x80\x94 see it with: "
        "looprctl plan show " +
        shell_word(id) + "\n");
    auto followed = follow_plan(*client, printer, FollowOptions{}, context.err);
    if (!followed) return fail(followed.error());
    status = *followed;
  }

  auto got = client->call<proto::methods::PlanGet>({id});
  if (!got) return fail(got.error());
  auto final_plan = object_in(*got, "plan", "plan.get");
  if (!final_plan) return fail(final_plan.error());
  if (status == kCallAwaitsApproval) {
    context.out << compact_json(*got) << '\n';
    context.err << "looprctl: a call of plan " << printable(id)
                << " waits for an approval and goes on waiting: see looprctl approvals\n";
    return outcome_exit_status(status);
  }
  if (!loop_status(*final_plan).empty()) status = loop_status(*final_plan);
  if (context.json) {
    context.out << compact_json(*got) << '\n';
  } else {
    context.out << "plan " << printable(id) << ' '
                << status_with_reason(*final_plan, kReasonWidth, true) << '\n';
    print_next_steps(id, status, context.out);
  }
  return outcome_exit_status(status);
}

int run_plan_reject(const CommandContext& context, const std::string& id,
                    const std::optional<std::string>& reason) {
  auto client = context.open();
  if (!client) return context.fail(client.error());
  auto result = client->call<proto::methods::PlanReject>({id, reason.value_or("")});
  if (!result) return context.fail(result.error());
  auto plan = object_in(*result, "plan", "plan.reject");
  if (!plan) return context.fail(plan.error());
  if (context.json) {
    context.print_json(*result);
  } else {
    context.out << "rejected plan " << printable(id) << "; it is now " << status_cell(*plan)
                << '\n';
  }
  return to_int(ExitStatus::ok);
}

int run_plan_iterate(const CommandContext& context, const std::string& id,
                     const std::string& feedback) {
  if (blank(feedback)) {
    return context.fail(make_error(failure::usage, "the feedback is empty",
                                   "say what to change, e.g. looprctl plan iterate " +
                                       shell_word(id) + " --feedback \"split the second spec\""));
  }
  auto client = context.open();
  if (!client) return context.fail(client.error());
  auto result = client->call<proto::methods::PlanIterate>({id, feedback});
  if (!result) return context.fail(result.error());
  auto plan = object_in(*result, "plan", "plan.iterate");
  if (!plan) return context.fail(plan.error());
  if (context.json) {
    context.print_json(*result);
    return to_int(ExitStatus::ok);
  }
  const std::string invalidated = id_list(member(*result, "invalidated"));
  context.out << "plan " << printable(id) << " runs again with your feedback; it is now "
              << status_cell(*plan) << "; "
              << (invalidated.empty() ? "nothing was invalidated" : "invalidated: " + invalidated)
              << '\n';
  return to_int(ExitStatus::ok);
}

// ---- loop rerun ----

int run_loop_rerun(const CommandContext& context, const std::string& id,
                   const std::string& feedback) {
  auto client = context.open();
  if (!client) return context.fail(client.error());
  auto result = client->call<proto::methods::LoopRerun>({id, blank(feedback) ? "" : feedback});
  if (!result) return context.fail(result.error());
  auto loop = object_in(*result, "loop", "loop.rerun");
  if (!loop) return context.fail(loop.error());
  if (context.json) {
    context.print_json(*result);
    return to_int(ExitStatus::ok);
  }
  const std::string invalidated = id_list(member(*result, "invalidated"));
  const std::string revived = id_list(member(*result, "revived"));
  context.out << "loop " << printable(id) << " runs again"
              << (blank(feedback) ? "" : " with your feedback") << "; it is now "
              << status_cell(*loop) << "; "
              << (invalidated.empty() ? "nothing was invalidated" : "invalidated: " + invalidated)
              << '\n';
  if (!revived.empty()) context.out << "brought back: " << revived << '\n';
  const json& plan_id = member(*loop, "plan_id");
  if (plan_id.is_string() && !plan_id.get<std::string>().empty()) {
    context.out << "follow it: looprctl plan show " << shell_word(plan_id.get<std::string>())
                << '\n';
  } else {
    context.out << "follow it: looprctl loop logs " << shell_word(id) << " --follow\n";
  }
  return to_int(ExitStatus::ok);
}

// ---- plan merge ----

int run_plan_merge(const CommandContext& context, const std::string& id,
                   const std::optional<std::string>& into) {
  auto client = context.open();
  if (!client) return context.fail(client.error());
  auto result = client->call<proto::methods::PlanMerge>({id, into.value_or("")});
  if (!result) {
    const int status = context.fail(result.error());
    print_refused_files(result.error(), context.err);
    return status;
  }
  if (!result->is_object()) {
    return context.fail(make_error(errc::protocol, "the plan.merge result is not an object"));
  }
  if (context.json) {
    context.print_json(*result);
    return to_int(ExitStatus::ok);
  }
  const std::string plan_id = string_of(*result, "plan_id");
  const std::string branch = "loop/" + (plan_id.empty() ? id : plan_id);
  const json& already = member(*result, "already_merged");
  const json& fast_forward = member(*result, "fast_forward");
  if (already.is_boolean() && already.get<bool>()) {
    context.out << printable(branch) << " is already merged into " << cell(*result, "into")
                << " (at " << short_commit(member(*result, "commit")) << ")\n";
  } else {
    context.out << "merged " << printable(branch) << " into " << cell(*result, "into") << " ("
                << (fast_forward.is_boolean() && fast_forward.get<bool>() ? "fast-forward"
                                                                          : "merge commit")
                << ") at " << short_commit(member(*result, "commit")) << '\n';
  }
  return to_int(ExitStatus::ok);
}

// ---- gc ----

int run_gc(const CommandContext& context, bool dry_run) {
  auto client = context.open();
  if (!client) return context.fail(client.error());
  auto result = client->call<proto::methods::LoopGc>({dry_run});
  if (!result) return context.fail(result.error());
  auto removed = objects_in(*result, "removed_worktrees", "loop.gc", false);
  if (!removed) return context.fail(removed.error());
  auto kept = objects_in(*result, "kept", "loop.gc", false);
  if (!kept) return context.fail(kept.error());
  if (context.json) {
    context.print_json(*result);
    return to_int(ExitStatus::ok);
  }
  for (const json& worktree : *removed) {
    context.out << (dry_run ? "would remove " : "removed ") << cell(worktree, "worktree") << " ("
                << cell(worktree, "id") << ")\n";
  }
  for (const json& loop : *kept) {
    const std::string reason = string_of(loop, "reason");
    context.out << "kept " << cell(loop, "id") << ": "
                << (reason.empty() ? "-" : first_line(reason, kReasonWidth)) << '\n';
  }
  if (dry_run) {
    context.out << "would remove " << plural(removed->size(), "worktree") << ", keep "
                << kept->size() << " (dry run: nothing was removed)\n";
  } else {
    context.out << "removed " << plural(removed->size(), "worktree") << ", kept " << kept->size()
                << '\n';
  }
  return to_int(ExitStatus::ok);
}

}  // namespace loopr::client
