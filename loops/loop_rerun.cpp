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
  // A loop of an older generation, or under an invalidated one, is not part
  // of the tree any more.
  auto stale = [&](const LoopRun& loop) {
    const LoopRun* child = &loop;
    for (const auto& ancestor : ancestors_of(loop)) {
      if (ancestor->status() == LoopStatus::invalidated ||
          child->spec().generation < ancestor->progress().generation) {
        return true;
      }
      child = ancestor.get();
    }
    return false;
  };
  std::vector<std::shared_ptr<LoopRun>> tree = descendants_of(plan_id);
  tree.push_back(plan);
  for (const auto& loop : tree) {
    if (loop.get() == run.get() || under.count(loop->id()) || above.count(loop->id())) continue;
    if (!is_final(loop->status()) || loop->status() == LoopStatus::completed ||
        loop->status() == LoopStatus::invalidated || stale(*loop)) {
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
      return invalid_state(loop->id() + "'s worktree was removed (looprctl gc), so plan " +
                               plan_id + " cannot be brought back",
                           "iterate the plan or make a new one");
    }
  }
  return revive;
}

asio::awaitable<Result<json>> LoopEngine::rerun(const json& params) {
  if (stopping_) co_return invalid_state("looprd is shutting down");
  auto found = find(params);
  if (!found) co_return std::move(found).error();
  std::shared_ptr<LoopRun> run = *found;
  if (params.contains("feedback") && !params["feedback"].is_null() &&
      !params["feedback"].is_string()) {
    co_return invalid("feedback must be a string");
  }
  const std::string feedback =
      is_blank(text_param(params, "feedback")) ? std::string() : text_param(params, "feedback");
  if (feedback.size() > kMaxFeedbackBytes) co_return invalid("the feedback is over 64 KiB");
  const std::string id = run->id();
  if (run->spec().type == "plan") {
    co_return invalid(id + " is a plan; a plan is re-run by iterating it",
                      "looprctl plan iterate " + id + " --feedback TEXT");
  }
  if (run->progress().deleted) co_return invalid_state("loop " + id + " was deleted");
  // A tree that is ending is seen only once it has ended.
  if (!co_await wait_until_tree_ended(run->spec().root_plan())) {
    co_return invalid_state("plan " + run->spec().root_plan() + " is still stopping its loops",
                            "try again in a moment");
  }
  const LoopStatus status = run->status();
  switch (status) {
    case LoopStatus::queued:
      co_return invalid_state("loop " + id + " has not started yet", "it starts by itself");
    case LoopStatus::invalidated:
      co_return invalid_state("loop " + id + " was invalidated: a re-run above it replaced it",
                              run->parent_id().empty()
                                  ? ""
                                  : "re-run its parent: looprctl loop rerun " + run->parent_id());
    case LoopStatus::budget_exhausted:
      co_return invalid_state("loop " + id + " spent its budget (" +
                                  run->progress().status_reason.substr(0, 200) +
                                  "); a re-run would stop at once",
                              "make a new loop or plan with a larger budget");
    case LoopStatus::completed:
      if (!run->parent_id().empty()) {
        co_return invalid_state(
            "loop " + id + " completed and its work is merged into " + run->parent_id(),
            "re-run " + run->parent_id() + " instead: looprctl loop rerun " + run->parent_id());
      }
      break;
    default:
      break;
  }
  if (run->progress().worktree_removed || run->spec().worktree.empty()) {
    co_return invalid_state("loop " + id + "'s worktree was removed (looprctl gc)",
                            "make a new loop on its branch " + run->spec().branch);
  }
  for (const auto& ancestor : ancestors_of(*run)) {
    if (ancestor->status() == LoopStatus::invalidated) {
      co_return invalid_state("loop " + id + " is under " + ancestor->id() +
                              ", which was invalidated");
    }
    if (ancestor->progress().worktree_removed) {
      co_return invalid_state(ancestor->id() + "'s worktree was removed (looprctl gc)",
                              "make a new plan");
    }
  }
  auto revive = loops_to_revive(run);
  if (!revive) co_return std::move(revive).error();

  // A running loop stops where it is first; nothing else waits on it.
  co_await stop_run(run);
  if (stopping_) co_return invalid_state("looprd is shutting down");
  if (run->status() != status || run->running()) {
    co_return invalid_state("loop " + id + " changed while it was being stopped for the re-run",
                            "look again: looprctl loop show " + id);
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
  progress.reset_to = progress.children_base;
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
  launch(run);
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
