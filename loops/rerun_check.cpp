#include "loops/rerun_check.hpp"

#include <set>
#include <string>

#include "loops/loop_run.hpp"
#include "loops/method_errors.hpp"

namespace loopr::loops {
namespace {

std::string status_name(const LoopRun& run) {
  return std::string(to_string(run.status()));
}

Result<std::vector<LoopTree::RunPtr>> loops_to_revive(const LoopTree& tree,
                                                      const LoopTree::RunPtr& run) {
  std::vector<LoopTree::RunPtr> revive;
  const std::string plan_id = run->spec().root_plan();
  auto plan = tree.run_of(plan_id);
  if (!plan || plan.get() == run.get() || !is_final(plan->status())) return revive;
  if (plan->status() != LoopStatus::failed && plan->status() != LoopStatus::blocked) {
    return invalid_state("plan " + plan_id + " is " + status_name(*plan) +
                             "; only a loop of a plan being carried out, failed or blocked is "
                             "re-run",
                         "make a new plan: looprctl plan");
  }
  std::set<std::string> under;
  for (const auto& below : tree.descendants_of(run->id()))
    under.insert(below->id());
  std::set<std::string> above;
  for (const auto& ancestor : tree.ancestors_of(*run))
    above.insert(ancestor->id());
  std::vector<LoopTree::RunPtr> plan_tree = tree.descendants_of(plan_id);
  plan_tree.push_back(plan);
  for (const auto& loop : plan_tree) {
    if (loop.get() == run.get() || under.count(loop->id()) || above.count(loop->id())) continue;
    if (!is_final(loop->status()) || loop->status() == LoopStatus::completed ||
        loop->status() == LoopStatus::invalidated || tree.is_stale(*loop)) {
      continue;
    }
    if (loop->progress().status_before_tree_ended.empty()) {
      return invalid_state(
          loop->id() + " ended " + status_name(*loop) + " (" +
              loop->progress().status_reason.substr(0, 200) + ") and is not under " + run->id() +
              "; re-running " + run->id() + " would end plan " + plan_id + " again",
          "re-run " + loop->id() + " or a loop above it: looprctl loop rerun " + loop->id());
    }
    revive.push_back(loop);
  }
  for (const auto& loop : revive) {
    if (loop->progress().worktree_removed) {
      return invalid_state(
          loop->id() + "'s worktree was removed, so plan " + plan_id + " cannot be brought back",
          "iterate the plan or make a new one");
    }
    if (loop->progress().deleted) {
      return invalid_state(
          loop->id() + " was deleted, so plan " + plan_id + " cannot be brought back",
          "iterate the plan or make a new one");
    }
  }
  return revive;
}

}  // namespace

Result<std::vector<LoopTree::RunPtr>> check_rerun(const LoopTree& tree,
                                                  const LoopTree::RunPtr& run) {
  const std::string id = run->id();
  const std::string parent = run->parent_id();
  const std::string parent_hint =
      parent.empty() ? std::string()
      : parent == run->spec().root_plan()
          ? "iterate its plan instead: looprctl plan iterate " + parent + " --feedback TEXT"
          : "re-run " + parent + " instead: looprctl loop rerun " + parent;
  if (run->progress().deleted) {
    return invalid_state("loop " + id + " was deleted", "make a new loop");
  }
  switch (run->status()) {
    case LoopStatus::queued:
      return invalid_state(
          "loop " + id + " has not started yet",
          "it starts by itself (" +
              (run->progress().queue_reason.empty() ? std::string("waiting for a slot")
                                                    : run->progress().queue_reason) +
              ")");
    case LoopStatus::invalidated:
      return invalid_state("loop " + id + " was invalidated: a re-run above it replaced it",
                           parent_hint);
    case LoopStatus::budget_exhausted:
      return invalid_state("loop " + id + " spent its budget (" +
                               run->progress().status_reason.substr(0, 200) +
                               "); a re-run would stop at once",
                           "make a new loop or plan with a larger budget");
    case LoopStatus::completed:
      if (!parent.empty()) {
        return invalid_state(
            "loop " + id + " completed; its work is " +
                (run->progress().merged.is_null() ? "being merged into " : "merged into ") + parent,
            parent_hint);
      }
      break;
    default:
      break;
  }
  if (tree.is_stale(*run)) {
    return invalid_state("loop " + id + " belongs to an older generation of its tree", parent_hint);
  }
  if (run->progress().worktree_removed || run->spec().worktree.empty()) {
    return invalid_state("loop " + id + "'s worktree was removed",
                         "make a new loop on its branch " + run->spec().branch);
  }
  if (!run->progress().artifact.is_null() && run->spec().type != "code" &&
      run->progress().children_base.empty() && !tree.children_ids(id).empty() &&
      run->progress().reset_to.empty()) {
    return invalid_state("loop " + id +
                             " made its children before loopr recorded where they began, so "
                             "its branch cannot go back",
                         parent_hint.empty() ? "make a new plan" : parent_hint);
  }
  for (const auto& ancestor : tree.ancestors_of(*run)) {
    if (ancestor->progress().worktree_removed || ancestor->progress().deleted) {
      return invalid_state(ancestor->id() + " above it was " +
                               (ancestor->progress().deleted ? "deleted" : "gc'd") +
                               ", so its tree cannot go on",
                           "make a new plan");
    }
  }
  return loops_to_revive(tree, run);
}

}  // namespace loopr::loops
