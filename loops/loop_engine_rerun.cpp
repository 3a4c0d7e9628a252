// loop.rerun (docs/control-protocol.md "Plans"): runs one loop again, from a
// fresh context told the person's feedback, and invalidates everything under
// it (stopped, kept in the store as `invalidated`; their branches kept).
//
// - A spec or phase makes its artifact again; its branch first goes back to
//   where it was before any child was merged (children_base), and the new
//   artifact's children continue the count (p1-s1-ph4 after ph1..ph3).
// - A code loop goes on from its branch with the feedback; max_iterations
//   counts afresh.
// - Inside a plan still being carried out, nothing else changes. Inside a
//   plan that ended (failed or blocked) because of this loop or a loop under
//   it, the tree comes back: the loops above it wait for their children
//   again, and the loops the tree's end cancelled or failed
//   (status_before_tree_ended) return to what they were, queued ones going
//   on from their journal when the scheduler starts them. A loop whose own
//   failure ended the tree and that is not under the re-run one must be
//   re-run itself: the request names it.
// A plan is re-run with plan.iterate.
#include <spdlog/spdlog.h>

#include <set>

#include "loops/loop_engine.hpp"
#include "loops/loop_run.hpp"
#include "loops/method_errors.hpp"

namespace loopr::loops {
namespace {

using nlohmann::json;

constexpr std::size_t kMaxFeedbackBytes = 64 * 1024;

std::string status_name(const LoopRun& run) {
  return std::string(to_string(run.status()));
}

}  // namespace

std::vector<std::shared_ptr<LoopRun>> LoopEngine::ancestors_of(const LoopRun& run) const {
  std::vector<std::shared_ptr<LoopRun>> chain;
  std::string id = run.parent_id();
  while (!id.empty()) {
    auto parent = run_of(id);
    if (!parent || chain.size() > 64) break;
    chain.push_back(parent);
    id = parent->parent_id();
  }
  return chain;
}

Result<std::vector<std::shared_ptr<LoopRun>>> LoopEngine::loops_to_revive(
    const std::shared_ptr<LoopRun>& run) const {
  std::vector<std::shared_ptr<LoopRun>> revive;
  const std::string plan_id = run->spec().root_plan();
  auto plan = run_of(plan_id);
  if (!plan || plan.get() == run.get() || !is_final(plan->status())) return revive;
  if (plan->status() != LoopStatus::failed && plan->status() != LoopStatus::blocked) {
    return invalid_state("plan " + plan_id + " is " + status_name(*plan) +
                             "; only a loop of a plan being carried out, failed or blocked is "
                             "re-run",
                         "make a new plan: looprctl plan");
  }
  std::set<std::string> under;
  for (const auto& below : descendants_of(run->id()))
    under.insert(below->id());
  std::set<std::string> above;
  for (const auto& ancestor : ancestors_of(*run))
    above.insert(ancestor->id());
  std::vector<std::shared_ptr<LoopRun>> tree = descendants_of(plan_id);
  tree.push_back(plan);
  for (const auto& loop : tree) {
    if (loop.get() == run.get() || under.count(loop->id()) || above.count(loop->id())) continue;
    if (!is_final(loop->status()) || loop->status() == LoopStatus::completed ||
        loop->status() == LoopStatus::invalidated || is_stale(*loop)) {
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

bool LoopEngine::is_stale(const LoopRun& loop) const {
  const LoopRun* child = &loop;
  for (const auto& ancestor : ancestors_of(loop)) {
    if (ancestor->status() == LoopStatus::invalidated ||
        child->spec().generation < ancestor->progress().generation) {
      return true;
    }
    child = ancestor.get();
  }
  return false;
}

Result<std::vector<std::shared_ptr<LoopRun>>> LoopEngine::rerun_refusal(
    const std::shared_ptr<LoopRun>& run) const {
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
  if (is_stale(*run)) {
    return invalid_state("loop " + id + " belongs to an older generation of its tree", parent_hint);
  }
  if (run->progress().worktree_removed || run->spec().worktree.empty()) {
    return invalid_state("loop " + id + "'s worktree was removed",
                         "make a new loop on its branch " + run->spec().branch);
  }
  if (!run->progress().artifact.is_null() && run->spec().type != "code" &&
      run->progress().children_base.empty() && !children_ids(id).empty() &&
      run->progress().reset_to.empty()) {
    return invalid_state("loop " + id +
                             " made its children before loopr recorded where they began, so "
                             "its branch cannot go back",
                         parent_hint.empty() ? "make a new plan" : parent_hint);
  }
  for (const auto& ancestor : ancestors_of(*run)) {
    if (ancestor->progress().worktree_removed || ancestor->progress().deleted) {
      return invalid_state(ancestor->id() + " above it was " +
                               (ancestor->progress().deleted ? "deleted" : "gc'd") +
                               ", so its tree cannot go on",
                           "make a new plan");
    }
  }
  return loops_to_revive(run);
}

asio::awaitable<Result<json>> LoopEngine::rerun(proto::LoopFeedbackParams params) {
  if (stopping_) co_return invalid_state("looprd is shutting down");
  auto found = find(params.id);
  if (!found) co_return std::move(found).error();
  std::shared_ptr<LoopRun> run = *found;
  const std::string feedback = is_blank(params.feedback) ? std::string() : params.feedback;
  if (feedback.size() > kMaxFeedbackBytes) co_return invalid("the feedback is over 64 KiB");
  const std::string id = run->id();
  if (run->spec().type == "plan") {
    co_return invalid(id + " is a plan; a plan is re-run by iterating it",
                      "looprctl plan iterate " + id + " --feedback TEXT");
  }
  // A tree that is ending is seen only once it has ended; a running loop
  // stops where it is first. Everything is checked before the stop and
  // again after it (the tree may have moved meanwhile); a loop refused
  // after its stop is launched again, as it was.
  const std::string plan_id = run->spec().root_plan();
  if (!co_await wait_until_tree_ended(plan_id)) {
    co_return invalid_state("plan " + plan_id + " is still stopping its loops",
                            "try again in a moment");
  }
  if (auto refused = rerun_refusal(run); !refused) co_return std::move(refused).error();
  const bool was_running = run->running();
  while (run->running() && !stopping_)
    co_await stop_run(run);
  if (stopping_) co_return invalid_state("looprd is shutting down");
  // (No co_await inside ?: : g++ 12 miscompiles it.)
  const bool ended = co_await wait_until_tree_ended(plan_id);
  Result<std::vector<std::shared_ptr<LoopRun>>> revive =
      invalid_state("plan " + plan_id + " is still stopping its loops", "try again in a moment");
  if (ended) revive = rerun_refusal(run);
  if (!revive) {
    if (was_running && !is_final(run->status()) && !run->running()) launch(run);
    co_return std::move(revive).error();
  }

  // From here to launch() nothing waits, so the tree never sees half of it.
  // A crash can: the loops brought back are stored first and the re-run
  // last, so any part of it stored alone leaves this loop failed under
  // parents that wait, and the next reconcile ends the tree again, as it
  // was (flagged for a new re-run).
  std::vector<std::string> invalidated;
  std::vector<std::shared_ptr<LoopRun>> below;
  for (const auto& loop : descendants_of(id)) {
    if (loop->status() == LoopStatus::invalidated) continue;
    invalidated.push_back(loop->id());
    below.push_back(loop);
  }
  const std::string why = "resumed: " + id + " is re-run";
  json revived = json::array();
  for (const auto& loop : *revive) {
    const std::string before = loop->progress().status_before_tree_ended;
    const LoopStatus back = before == "waiting"             ? LoopStatus::waiting
                            : before == "awaiting_approval" ? LoopStatus::awaiting_approval
                                                            : LoopStatus::queued;
    loop->revive(back, why);
    revived.push_back(loop->id());
  }
  for (const auto& ancestor : ancestors_of(*run)) {
    if (ancestor->status() == LoopStatus::waiting) continue;
    ancestor->revive(LoopStatus::waiting, why);
    revived.push_back(ancestor->id());
  }
  LoopProgress& progress = run->progress_for_update();
  progress.generation += 1;
  if (progress.reset_to.empty()) progress.reset_to = progress.children_base;
  progress.children_base.clear();
  progress.merged = nullptr;
  run->prepare_rerun(feedback);
  if (!run->record("rerun", {{"feedback", feedback},
                             {"invalidated", invalidated},
                             {"generation", progress.generation}})) {
    co_return make_error(errc::io, "the store refused the re-run");
  }
  spdlog::info("loop {} re-run: {} invalidated, {} brought back", id, invalidated.size(),
               revived.size());
  if (run->spec().base_commit.empty()) {
    // Ended before it ever started (cancelled while queued): it has no
    // worktree yet; the scheduler makes one when it starts it.
    run->revive(LoopStatus::queued, "re-run by the person; waiting for a slot");
  } else {
    launch(run);
  }
  for (const auto& loop : below)
    co_await stop_and_mark(loop, LoopStatus::invalidated, "invalidated: " + id + " is re-run");
  services_.publish("loop.rerun", {{"loop", run->to_json(false)},
                                   {"plan_id", run->spec().root_plan()},
                                   {"feedback", feedback},
                                   {"invalidated", invalidated},
                                   {"revived", revived}});
  request_reconcile();
  co_return json{{"loop", run->to_json(false)}, {"invalidated", invalidated}, {"revived", revived}};
}

}  // namespace loopr::loops
