// LoopEngine (DESIGN.md §8): creates loops, runs each as a coroutine on the
// io thread, and answers the loop.* control methods
// (docs/control-protocol.md "Loops"). One LoopRun per loop holds its spec
// and progress; the journal and the row live in the store, written before
// anything they describe is acted on, so start() resumes every loop that was
// running when looprd stopped, from its last stored step.
//
// It reaches tools through ToolGateway, models through a provider lookup,
// clients through an event sink, and git through loops/git/ (worktrees,
// commits, merges) on a worker thread (offload.hpp). Its parts:
// - loop_engine.cpp: start and stop, and the loop.* methods;
// - loop_engine_tree.cpp: the tree's work — naming, storing, starting,
//   making children (child_specs.hpp), merging them, ending parents and
//   trees — driven by one reconcile pass at a time;
// - loop_engine_plans.cpp: the plan.* methods and loop.gc;
// - loop_engine_rerun.cpp: loop.rerun (whether it may: rerun_check.hpp).
// The loops themselves are a LoopTree (loop_tree.hpp); each runs as a
// LoopRun that sees the engine only as its RunHost (run_host.hpp). The methods take the
// typed params of proto/loop_messages.hpp; errors are Result<json> with rpc
// codes 1001 (no such loop) and 1002 (the loop's state forbids it) in
// details.rpc_code.
// Threads: io thread only (git runs on the engine's own worker thread).
#pragma once

#include <asio/awaitable.hpp>
#include <asio/io_context.hpp>
#include <asio/steady_timer.hpp>
#include <asio/thread_pool.hpp>
#include <cstdint>
#include <functional>
#include <map>
#include <memory>
#include <nlohmann/json.hpp>
#include <string>
#include <string_view>

#include "budget/budget.hpp"
#include "common/error.hpp"
#include "config/settings.hpp"
#include "llm/provider.hpp"
#include "loops/git/worktrees.hpp"
#include "loops/loop_record.hpp"
#include "loops/loop_status.hpp"
#include "loops/loop_tree.hpp"
#include "loops/run_host.hpp"
#include "loops/scheduler.hpp"
#include "loops/tool_gateway.hpp"
#include "proto/loop_messages.hpp"
#include "store/store.hpp"

namespace loopr::loops {

class LoopRun;

class LoopEngine final : public RunHost {
 public:
  explicit LoopEngine(LoopEngineServices services);
  ~LoopEngine();

  // Loads every loop from the store and resumes those that were running (or
  // waits at the pause point of those paused). Errors: the store unreadable.
  Result<void> start();
  // looprd is stopping: every run stops where it is, without changing its
  // status, so the next start() resumes it. Returns once all have stopped.
  asio::awaitable<void> stop();

  // The loop.* and plan.* methods, their params read by proto/loop_messages.hpp.
  // Each answers the JSON document docs/control-protocol.md describes (a
  // stored loop as it is shown); an Error is a refusal (no such loop, a
  // state that forbids it, a value the settings do not allow).
  asio::awaitable<Result<nlohmann::json>> create(proto::LoopCreateParams params);
  Result<nlohmann::json> list(const proto::LoopListParams& params) const;
  Result<nlohmann::json> get(const std::string& id) const;
  Result<nlohmann::json> transcript(const proto::LoopTranscriptParams& params) const;
  Result<nlohmann::json> export_turns(const std::string& id) const;
  // What the loop's branch changed since it was made from its parent's
  // branch (or its base): the committed work, its merged children included.
  asio::awaitable<Result<nlohmann::json>> diff(proto::LoopDiffParams params);
  Result<nlohmann::json> pause(const std::string& id);
  Result<nlohmann::json> resume(const std::string& id);
  Result<nlohmann::json> cancel(const std::string& id);
  asio::awaitable<Result<nlohmann::json>> remove(proto::LoopDeleteParams params);

  // Plans (loop_engine_plans.cpp; docs/control-protocol.md "Plans").
  asio::awaitable<Result<nlohmann::json>> create_plan(proto::LoopCreatePlanParams params);
  Result<nlohmann::json> plan_get(const std::string& id) const;
  asio::awaitable<Result<nlohmann::json>> plan_approve(std::string id);
  asio::awaitable<Result<nlohmann::json>> plan_reject(proto::PlanRejectParams params);
  asio::awaitable<Result<nlohmann::json>> plan_iterate(proto::LoopFeedbackParams params);
  asio::awaitable<Result<nlohmann::json>> plan_merge(proto::PlanMergeParams params);
  asio::awaitable<Result<nlohmann::json>> gc(proto::LoopGcParams params);
  // Runs one loop of a tree again (a spec or phase: its own work, with the
  // person's feedback); its descendants are invalidated
  // (loop_engine_rerun.cpp).
  asio::awaitable<Result<nlohmann::json>> rerun(proto::LoopFeedbackParams params);

  std::size_t loop_count() const { return tree_.size(); }
  std::size_t running_count() const;

  // RunHost (run_host.hpp): what a LoopRun may ask of its engine.
  const LoopEngineServices& services() const override { return services_; }
  asio::thread_pool& git_pool() override { return git_pool_; }
  ProviderSlots& provider_slots() override { return provider_slots_; }
  LoopStatus status_after_own_work(const LoopSpec& spec) const override;
  void status_changed(const LoopRun& run) override;
  std::vector<std::string> children_ids(const std::string& id) const override {
    return tree_.children_ids(id);
  }
  const config::BudgetLimits* plan_budget(const std::string& plan_id) const override {
    return tree_.plan_budget(plan_id);
  }
  Spend tree_spend(const std::string& plan_id) const override { return tree_.tree_spend(plan_id); }
  Spend total_spend() const override { return tree_.total_spend(); }
  std::string loop_folder(const std::string& id) const override;

 private:
  // The loop `id`, or an Error (rpc code 1001: no such loop).
  Result<std::shared_ptr<LoopRun>> find(const std::string& id) const;
  Result<std::shared_ptr<LoopRun>> find_plan(const std::string& id) const;
  Result<std::shared_ptr<LoopRun>> find_awaiting_plan(const std::string& id) const;
  void launch(const std::shared_ptr<LoopRun>& run);
  // Reconciles the tree every so often, so [worktrees] keep_finished_s
  // removes worktrees on an idle daemon too; stop() ends it.
  void start_worktree_tick();

  // ---- the tree's work (loop_engine_tree.cpp) ----
  // What a loop.create / loop.create_plan asked for, checked, as a LoopSpec
  // without id, branch or worktree.
  Result<LoopSpec> spec_from_params(const proto::LoopSpecParams& params, const std::string& type,
                                    const std::string& task);
  // The user's checkout as the loop starts from it: its branch, and its
  // uncommitted paths — in a snapshot commit the loop starts from when the
  // spec asks include_uncommitted, else listed as left out.
  asio::awaitable<Result<void>> read_checkout(LoopSpec& spec);
  // Gives a new loop its id (from its parent and type: p3, p3-s1, c4, ...),
  // branch and worktree path.
  // `offset`: children of the same parent named before this one and not
  // stored yet (a batch).
  void name_new_loop(LoopSpec& spec, const std::string& parent_id, std::int64_t offset = 0);
  // A new top-level loop: with a free slot its worktree is made and it
  // starts now (a worktree that cannot be made is the call's error, and
  // nothing is stored); otherwise it is stored `queued`.
  asio::awaitable<Result<nlohmann::json>> start_now_or_queue(LoopSpec spec);
  // Stores new loops under `parent` (null: top level) with `status`, with
  // the parent's `children` step, in one transaction.
  Result<std::vector<std::shared_ptr<LoopRun>>> store_new_loops(
      std::vector<LoopSpec> specs, const std::shared_ptr<LoopRun>& parent, LoopStatus status);
  // Opens or makes the loop's worktree (from its parent's branch); a
  // resolver's also gets the conflicting merge started in it.
  asio::awaitable<Result<WorktreeInfo>> make_worktree(const LoopSpec& spec);
  bool slot_free_for(const std::string& type) const;
  // Brings the tree up to date: makes children, merges finished children
  // into their parents, ends parents, invalidates what an iterate left
  // behind, and starts queued loops the scheduler allows. One pass at a
  // time; a request while one runs makes it run again.
  void request_reconcile();
  asio::awaitable<void> reconcile_loop();
  asio::awaitable<bool> reconcile_once();
  asio::awaitable<bool> reconcile_parent(const std::shared_ptr<LoopRun>& parent);
  asio::awaitable<bool> merge_child(const std::shared_ptr<LoopRun>& parent,
                                    const std::shared_ptr<LoopRun>& child);
  bool make_children(const std::shared_ptr<LoopRun>& parent);
  asio::awaitable<void> start_queued(const std::shared_ptr<LoopRun>& run);
  asio::awaitable<void> stop_and_mark(const std::shared_ptr<LoopRun>& run, LoopStatus status,
                                      std::string reason);
  // Stops the run's coroutine (if any) and waits, at most 10 s, until it
  // has; the status stays as it is.
  asio::awaitable<void> stop_run(const std::shared_ptr<LoopRun>& run);
  asio::awaitable<void> end_tree(const std::string& plan_id, const std::string& reason);
  // Waits (at most 15 s) while end_tree() is still stopping loops of the
  // plan: a re-run must see the tree's end whole. False: it did not end in
  // time, or looprd is stopping.
  asio::awaitable<bool> wait_until_tree_ended(const std::string& plan_id);
  // A parent that cannot complete (failed, blocked): its status, then the
  // rest of its plan's tree ends with the reason.
  asio::awaitable<void> end_parent(const std::shared_ptr<LoopRun>& parent, LoopStatus status,
                                   std::string reason);
  asio::awaitable<void> remove_finished_worktrees(bool everything, bool dry_run,
                                                  nlohmann::json* removed, nlohmann::json* kept);
  // Cancels every loop under `id` that has not ended.
  void cancel_subtree(const std::string& id, const std::string& reason);

  LoopEngineServices services_;
  asio::thread_pool git_pool_{1};
  LoopTree tree_;
  std::int64_t next_seq_ = 1;
  std::size_t active_ = 0;  // run coroutines not yet finished
  bool stopping_ = false;
  ProviderSlots provider_slots_;
  bool reconciling_ = false;
  bool reconcile_again_ = false;
  std::size_t starting_ = 0;  // queued loops whose worktree is being made
  std::unique_ptr<asio::steady_timer> worktree_tick_;
  std::map<std::string, int> trees_ending_;  // plan id -> end_tree() calls in progress
};

}  // namespace loopr::loops
