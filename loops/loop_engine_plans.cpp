// The plan.* control methods and loop.gc (docs/control-protocol.md
// "Plans"): the plan gate (approve, reject, iterate), the plan and its tree
// as one answer, bringing a finished plan into the user's branch, and
// removing worktrees no longer needed. The tree's own work is in
// loops/loop_engine_tree.cpp.
#include <spdlog/spdlog.h>

#include <asio/co_spawn.hpp>
#include <fstream>

#include "loops/artifacts.hpp"
#include "loops/git/merges.hpp"
#include "loops/loop_engine.hpp"
#include "loops/loop_run.hpp"
#include "loops/method_errors.hpp"
#include "loops/offload.hpp"
#include "proto/control_messages.hpp"

namespace loopr::loops {
namespace {

using nlohmann::json;

}  // namespace

Result<std::shared_ptr<LoopRun>> LoopEngine::find_plan(const std::string& id) const {
  auto run = find(id);
  if (!run) return run;
  if ((*run)->spec().type != "plan") {
    return invalid("loop " + (*run)->id() + " is a " + (*run)->spec().type + " loop, not a plan",
                   "plan ids start with p (see looprctl loops --tree)");
  }
  return run;
}

Result<std::shared_ptr<LoopRun>> LoopEngine::find_awaiting_plan(const std::string& id) const {
  auto plan = find_plan(id);
  if (!plan) return plan;
  if ((*plan)->status() != LoopStatus::awaiting_approval) {
    return invalid_state("plan " + (*plan)->id() + " is " +
                         std::string(to_string((*plan)->status())) + ", not awaiting approval");
  }
  return plan;
}

asio::awaitable<Result<json>> LoopEngine::create_plan(proto::LoopCreatePlanParams params) {
  if (stopping_) co_return invalid_state("looprd is shutting down");
  auto spec = spec_from_params(params.spec, "plan", params.description);
  if (!spec) co_return std::move(spec).error();
  if (auto read = co_await read_checkout(*spec); !read) co_return std::move(read).error();
  co_return co_await start_now_or_queue(std::move(*spec));
}

Result<json> LoopEngine::plan_get(const std::string& id) const {
  auto found = find_plan(id);
  if (!found) return std::move(found).error();
  const auto& plan = *found;
  json tree = json::array();
  for (const auto& run : tree_.descendants_of(plan->id()))
    tree.push_back(run->to_json(false));
  const json& artifact = plan->progress().artifact;
  const Spend used = tree_.tree_spend(plan->id());
  return json{
      {"plan", plan->to_json(true)},
      {"artifact", artifact},
      {"markdown",
       artifact.is_null() ? json() : json(render_artifact_markdown("plan", artifact, plan->id()))},
      {"markdown_path", plan->progress().artifact_path},
      {"tree", std::move(tree)},
      {"plan_budget",
       {{"limits", limits_to_json(plan->spec().plan_budget)},
        {"used", used.to_json()},
        {"left", left_to_json(plan->spec().plan_budget, used)}}}};
}

asio::awaitable<Result<json>> LoopEngine::plan_approve(std::string id) {
  auto found = find_awaiting_plan(id);
  if (!found) co_return std::move(found).error();
  std::shared_ptr<LoopRun> plan = *found;
  const LoopSpec spec = plan->spec();
  auto git_work = [=] { return branch_head(spec.repo, spec.branch); };
  auto head = co_await offload(git_pool_, git_work);
  if (!head) co_return std::move(head).error();
  if (plan->status() != LoopStatus::awaiting_approval) {
    co_return invalid_state("plan " + plan->id() + " changed while it was being approved");
  }
  // The status first, then the approval's record: nobody following the
  // plan sees it awaiting approval again after this call.
  plan->progress_for_update().children_base = *head;
  const std::size_t specs = plan->progress().artifact.value("specs", json::array()).size();
  if (!plan->set_status(LoopStatus::waiting,
                        "approved: carrying out " + std::to_string(specs) + " specs")) {
    co_return make_error(errc::io, "the store refused the approval");
  }
  plan->record("approval", {{"decision", "approved"}, {"commit", *head}});
  services_.publish("plan.approved", {{"plan", plan->to_json(false)}});
  co_return json{{"plan", plan->to_json(false)}};
}

asio::awaitable<Result<json>> LoopEngine::plan_reject(proto::PlanRejectParams params) {
  auto found = find_awaiting_plan(params.id);
  if (!found) co_return std::move(found).error();
  std::shared_ptr<LoopRun> plan = *found;
  std::string reason = std::move(params.reason);
  if (is_blank(reason)) reason = "rejected by the person";
  if (reason.size() > 64 * 1024) co_return invalid("the reason is over 64 KiB");
  if (!plan->set_status(LoopStatus::rejected, reason)) {
    co_return make_error(errc::io, "the store refused the rejection");
  }
  plan->record("approval", {{"decision", "rejected"}, {"reason", reason}});
  services_.publish("plan.rejected", {{"plan", plan->to_json(false)}});
  co_return json{{"plan", plan->to_json(false)}};
}

asio::awaitable<Result<json>> LoopEngine::plan_iterate(proto::LoopFeedbackParams params) {
  auto found = find_plan(params.id);
  if (!found) co_return std::move(found).error();
  std::shared_ptr<LoopRun> plan = *found;
  const std::string feedback = std::move(params.feedback);
  if (is_blank(feedback)) {
    co_return invalid("plan.iterate needs `feedback`: what the plan should change");
  }
  if (feedback.size() > 64 * 1024) co_return invalid("the feedback is over 64 KiB");
  const LoopStatus status = plan->status();
  if (status != LoopStatus::awaiting_approval && status != LoopStatus::waiting &&
      status != LoopStatus::blocked && status != LoopStatus::failed) {
    co_return invalid_state("plan " + plan->id() + " is " + std::string(to_string(status)) +
                                "; only a plan awaiting approval, being carried out, blocked or "
                                "failed can be iterated",
                            status == LoopStatus::running ? "wait until it shows its plan"
                                                          : "make a new plan: looprctl plan");
  }
  if (plan->running()) co_return invalid_state("plan " + plan->id() + " is still running");
  if (!co_await wait_until_tree_ended(plan->id())) {
    co_return invalid_state("plan " + plan->id() + " is still stopping its loops",
                            "try again in a moment");
  }
  // First the plan's own record (a new generation of children, the branch
  // to go back to, a new iteration): after a crash from here on, the tree
  // finds its old children stale and invalidates them.
  std::vector<std::string> invalidated;
  for (const auto& run : tree_.descendants_of(plan->id()))
    if (run->status() != LoopStatus::invalidated) invalidated.push_back(run->id());
  LoopProgress& progress = plan->progress_for_update();
  progress.generation += 1;
  progress.reset_to = progress.children_base;
  progress.children_base.clear();
  progress.finished_at_ms = 0;
  plan->prepare_rerun(feedback);
  if (!plan->record("approval", {{"decision", "iterate"},
                                 {"feedback", feedback},
                                 {"invalidated", invalidated},
                                 {"generation", progress.generation}})) {
    co_return make_error(errc::io, "the store refused the iteration");
  }
  for (const auto& run : tree_.descendants_of(plan->id())) {
    if (run->status() == LoopStatus::invalidated) continue;
    co_await stop_and_mark(run, LoopStatus::invalidated,
                           "invalidated: plan " + plan->id() + " is being iterated");
  }
  services_.publish(
      "plan.iterating",
      {{"plan", plan->to_json(false)}, {"feedback", feedback}, {"invalidated", invalidated}});
  services_.publish("loop.updated", {{"loop", plan->to_json(false)}});
  launch(plan);
  co_return json{{"plan", plan->to_json(false)}, {"invalidated", invalidated}};
}

asio::awaitable<Result<json>> LoopEngine::plan_merge(proto::PlanMergeParams params) {
  auto found = find_plan(params.id);
  if (!found) co_return std::move(found).error();
  std::shared_ptr<LoopRun> plan = *found;
  if (plan->status() != LoopStatus::completed) {
    co_return invalid_state("plan " + plan->id() + " is " + std::string(to_string(plan->status())) +
                                "; only a completed plan is merged",
                            "see where it stands: looprctl plan show " + plan->id());
  }
  std::string into = std::move(params.into);
  if (into.empty()) into = plan->spec().user_branch;
  if (into.empty()) {
    co_return invalid("the repository was on no branch when the plan was made",
                      "name the branch: looprctl plan merge " + plan->id() + " --into BRANCH");
  }
  const LoopSpec spec = plan->spec();
  std::string title = plan->progress().artifact.value("title", std::string());
  const std::string message = "loopr: plan " + spec.id + (title.empty() ? "" : ": " + title);
  const std::string scratch = services_.settings.worktree_folder() + "/.merge-" + spec.id;
  auto git_work = [=] { return merge_into_branch(spec.repo, spec.branch, into, message, scratch); };
  auto merged = co_await offload(git_pool_, git_work);
  if (!merged) co_return std::move(merged).error();
  plan->record(
      "merged_into_user_branch",
      {{"into", into}, {"commit", merged->commit}, {"fast_forward", merged->fast_forward}});
  spdlog::info("plan {} merged into {} at {}", spec.id, into, merged->commit);
  co_return json{{"plan_id", spec.id},
                 {"into", into},
                 {"commit", merged->commit},
                 {"fast_forward", merged->fast_forward},
                 {"already_merged", merged->already_merged}};
}

asio::awaitable<Result<json>> LoopEngine::gc(proto::LoopGcParams params) {
  const bool dry_run = params.dry_run;
  json removed = json::array();
  json kept = json::array();
  co_await remove_finished_worktrees(true, dry_run, &removed, &kept);
  co_return json{{"removed_worktrees", removed}, {"kept", kept}, {"dry_run", dry_run}};
}

}  // namespace loopr::loops
