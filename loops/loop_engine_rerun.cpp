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

#include "loops/loop_engine.hpp"
#include "loops/loop_run.hpp"
#include "loops/method_errors.hpp"
#include "loops/rerun_check.hpp"

namespace loopr::loops {
namespace {

using nlohmann::json;

constexpr std::size_t kMaxFeedbackBytes = 64 * 1024;

}  // namespace

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
  if (auto refused = check_rerun(tree_, run); !refused) co_return std::move(refused).error();
  const bool was_running = run->running();
  while (run->running() && !stopping_)
    co_await stop_run(run);
  if (stopping_) co_return invalid_state("looprd is shutting down");
  // (No co_await inside ?: : g++ 12 miscompiles it.)
  const bool ended = co_await wait_until_tree_ended(plan_id);
  Result<std::vector<std::shared_ptr<LoopRun>>> revive =
      invalid_state("plan " + plan_id + " is still stopping its loops", "try again in a moment");
  if (ended) revive = check_rerun(tree_, run);
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
  for (const auto& loop : tree_.descendants_of(id)) {
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
  for (const auto& ancestor : tree_.ancestors_of(*run)) {
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
