// What the store keeps of a loop, as the loop engine reads and writes it:
// LoopSpec (what was asked; written once, the row's `spec`) and LoopProgress
// (where the loop is; the row's `state`, rewritten with every journal step
// in the same transaction). Their JSON forms are the store's format: a field
// may be added, never renamed.
#pragma once

#include <cstdint>
#include <nlohmann/json.hpp>
#include <string>
#include <vector>

#include "budget/budget.hpp"
#include "common/error.hpp"
#include "config/settings.hpp"

namespace loopr::loops {

struct LoopSpec {
  std::string id;
  std::string type;
  std::string task;
  std::string repo;
  std::string base;         // as asked (may be empty)
  std::string base_commit;  // what it resolved to
  std::string branch;
  std::string worktree;
  std::string provider;
  std::string model;
  std::string validate;  // the validation command
  std::string prompt_template;
  std::vector<std::string> tools;
  std::int64_t max_iterations = 1;
  config::BudgetLimits budget;
  // Plans (docs/control-protocol.md "Plans"); empty outside a plan.
  std::string plan_id;                  // the root plan ("" for a plan itself)
  std::string parent_branch;            // branched from this when it starts
  std::vector<std::string> depends_on;  // loops that must be completed and merged first
  std::int64_t generation = 0;          // the parent's generation it was made in
  nlohmann::json input = nullptr;       // its part of the parent's artifact
  std::string role;                     // "" or "resolver" (merges merge_child)
  std::string merge_child;              // resolver: the child whose merge conflicted
  config::BudgetLimits plan_budget;     // a plan: its whole tree's budget
  std::string user_branch;              // the repo's branch when it was made
  // The validation command's time limit in seconds (0: the heavy lane's).
  std::int64_t validate_timeout_s = 0;
  // Started from a snapshot of the checkout's uncommitted and untracked
  // changes (base_commit is that snapshot, a child of the checkout's HEAD).
  bool include_uncommitted = false;
  // The checkout's uncommitted paths when it was made: in the snapshot with
  // include_uncommitted, else left out (at most kMaxUncommittedPaths).
  std::vector<std::string> uncommitted_paths;
  // The repository's commands and worktree needs as resolved when the loop
  // was made (repos/: user config > trusted .loopr/loopr.toml > daemon-wide
  // [commands]/[worktrees]), so a restart does the same. A spec stored
  // before them has repo_settings false: the daemon's settings apply.
  bool repo_settings = false;
  config::CommandSettings commands;
  config::WorktreePrep prep;
  // [validation] protected_paths as resolved when the loop was made (the
  // user's and a trusted repository's): what it may not change
  // (loops/protected_files.hpp).
  std::vector<std::string> protected_paths;
  std::int64_t seq = 0;  // creation order: kept in the row, not in this JSON

  // The plan at the root of its tree: itself for a plan, "" outside a plan.
  std::string root_plan() const { return type == "plan" ? id : plan_id; }

  nlohmann::json to_json() const;
  static Result<LoopSpec> from_json(const nlohmann::json& value);
};

// What happens after an iteration's validation (kept, so a restart between
// the validation and its consequence does the same thing).
enum class NextStep { none, new_iteration, complete, max_iterations, stuck };

inline constexpr std::size_t kMaxProtectedEvents = 200;

struct LoopProgress {
  std::int64_t iteration = 0;  // the current (or last) iteration; 0 before the first
  Spend spend;
  std::string status_reason;
  nlohmann::json last_validation = nullptr;  // {iteration, passed, exit_code, output}
  std::vector<std::string> notes;            // progress notes, one per finished iteration
  std::string feedback;                      // the last validation failure, for the next prompt
  std::string pending_note;                  // loopr's note for the next prompt
  std::int64_t strikes = 0;                  // loop health
  std::int64_t unchanged = 0;                // unchanged iterations in a row
  nlohmann::json iterations = nlohmann::json::array();  // summaries (docs/control-protocol.md)
  bool deleted = false;
  NextStep next = NextStep::none;
  std::string next_reason;
  // The current iteration.
  std::int64_t started_at_ms = 0;
  std::int64_t turns_this_iteration = 0;
  std::int64_t calls_this_iteration = 0;
  std::int64_t malformed_in_a_row = 0;
  bool complete_task_called = false;
  std::string complete_summary;
  // The current iteration ended with a handoff (the context or the turn
  // limit was reached): {reason, estimate_tokens, context_window, turns,
  // note, by}; null otherwise. Such an iteration is committed, not
  // validated, and the next one starts with `handoff_note`.
  nlohmann::json handoff = nullptr;
  std::string handoff_note;   // for the next prompt
  std::int64_t handoffs = 0;  // in the loop's life
  // Plans.
  nlohmann::json artifact = nullptr;  // the last valid artifact (checked JSON)
  std::string artifact_path;          // its Markdown under the state dir
  std::int64_t artifact_iteration = 0;
  std::int64_t generation = 0;      // of its children; plan.iterate adds one
  std::int64_t iteration_base = 0;  // max_iterations counts from here (plan.iterate)
  nlohmann::json merged = nullptr;  // {into, commit}: merged into its parent
  // Its branch before any child was merged into it (a plan: when approved;
  // a spec or phase: when its children were made). A re-run goes back here.
  std::string children_base;
  std::string reset_to;  // being re-run: reset its branch here first
  // The status it had when its plan's tree ended around it (end_tree), so a
  // re-run of the loop that ended the tree can bring it back; "" otherwise.
  std::string status_before_tree_ended;
  std::string queue_reason;
  std::int64_t finished_at_ms = 0;  // its tree finished (for [worktrees] keep_finished_s)
  bool worktree_removed = false;
  // The worktree got its [worktrees] include / parent's build outputs and
  // ran its setup (LoopRun::prepare_worktree): never again, restarts included.
  bool worktree_prepared = false;
  // Untracked paths (files, or folders git lists as a whole) that the
  // daemon's own commands made in the worktree — the setup, a validation —
  // and that no commit of the loop takes (worktree_changes.hpp). A path the
  // model writes with a file tool is committed all the same.
  std::vector<std::string> kept_out;
  // Paths within kept_out that the model wrote or deleted with a file tool
  // in the current iteration: its commit takes them all the same.
  std::vector<std::string> written_kept_out;
  // Every attempt on a protected path (loops/protected_files.hpp), oldest
  // first, at most kMaxProtectedEvents: {iteration, action: "refused" (a
  // file tool's call, with tool and pattern) or "put back" (before the
  // commit, with change), path}; protected_event_count counts them all.
  nlohmann::json protected_events = nlohmann::json::array();
  std::int64_t protected_event_count = 0;
  // What loopr put back before this iteration's commit, told to the model
  // with the validation's verdict; "" when nothing.
  std::string protected_note;

  nlohmann::json to_json() const;
  static LoopProgress from_json(const nlohmann::json& value);
};

// "c12", "p3": the id of the `seq`-th loop of `type` (usable in a branch name).
std::string loop_id_for(const std::string& type, std::int64_t seq);

}  // namespace loopr::loops
