// looprctl plan | plan show | approve | reject | iterate | merge, loop rerun
// and gc
// (docs/control-protocol.md, "Plans"). Like client/commands.hpp's commands,
// each opens its own connection, prints text for a person on `out` (the
// daemon's results as JSON with --json), failures on `err`, and returns the
// process exit status (client/failure.hpp). The CLI wiring is client/cli.cpp;
// the tree is client/loop_tree.hpp, following client/loop_follow.hpp.
#pragma once

#include <optional>
#include <string>

#include "client/commands.hpp"

namespace loopr::client {

// plan: loop.create_plan, then (with follow) follows the plan loop live as
// `loop run` does until it awaits approval or ends, asks plan.get and prints
// the plan as Markdown and how to approve, iterate or reject it. Exit 0 when
// the plan awaits approval (or, without follow, once it is created); with
// --json (headless) 7 then; a plan that ended before the gate exits with its
// outcome (failure.hpp's OutcomeExit). With approve_plan (--approve-plan) a
// plan at the gate is approved at once and followed as `plan approve
// --follow` does, exiting with the plan's outcome. Ctrl-C while following
// detaches (exit 0). --json: JSON Lines (the create result, the plan loop's
// events, the plan.get result); without follow, the loop.
struct PlanCreateOptions {
  std::string description;
  std::string repo;  // made absolute before it is sent
  std::optional<std::string> base;
  std::optional<std::string> provider;
  std::optional<std::string> model;
  std::optional<double> budget_usd;                 // the whole plan's: plan_budget.usd
  std::optional<std::uint64_t> validate_timeout_s;  // every validation of the plan's loops
  bool include_uncommitted = false;
  bool follow = true;
  bool approve_plan = false;  // pass the approval gate without asking
};
int run_plan_create(const CommandContext& context, const PlanCreateOptions& options);

// plan show: plan.get; the Markdown plan, the tree under it, the plan budget.
int run_plan_show(const CommandContext& context, const std::string& id);

// plan approve: plan.approve; with follow, then every loop of the plan until
// the plan ends (or awaits approval again), one line per status change and
// merge. Exit 0 without follow, else the plan's outcome (failure.hpp's
// OutcomeExit: 0 only when it completed). --json with follow: JSON Lines
// (the approve result, the plan's events, plan.get).
int run_plan_approve(const CommandContext& context, const std::string& id, bool follow);
int run_plan_reject(const CommandContext& context, const std::string& id,
                    const std::optional<std::string>& reason);
// plan iterate: the feedback must not be blank (a usage error, nothing sent).
int run_plan_iterate(const CommandContext& context, const std::string& id,
                     const std::string& feedback);
// loop rerun: loop.rerun; says what runs again, what was invalidated and
// what came back, and how to follow it. `feedback` may be empty.
int run_loop_rerun(const CommandContext& context, const std::string& id,
                   const std::string& feedback);
// plan merge: plan.merge; a refusal is the daemon's message (and the
// conflicting files it names), exit 1.
int run_plan_merge(const CommandContext& context, const std::string& id,
                   const std::optional<std::string>& into);

// gc: loop.gc; each worktree removed (or that would be, with dry_run) and
// each kept with why, then the counts.
int run_gc(const CommandContext& context, bool dry_run);

}  // namespace loopr::client
