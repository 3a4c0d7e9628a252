// LoopTree: the daemon's loops by id, and what their tree says of each —
// a loop's parent, its children (of the current generation or all), the
// loops under and above it, whether it still belongs to its tree, the id its
// next child gets, what a plan's tree has spent, and which dependency keeps a
// queued loop waiting (DESIGN.md §8, docs/control-protocol.md "Plans").
//
// Contract: it only reads the runs it holds — no store, no git, no
// coroutine — so every answer is about the loops as they are in memory at
// the moment of the call. LoopEngine owns the one tree of the daemon and is
// the only one that adds to it. Lists come in creation order (seq).
// Threads: io thread only, like the runs.
#pragma once

#include <cstddef>
#include <cstdint>
#include <map>
#include <memory>
#include <string>
#include <vector>

#include "budget/budget.hpp"
#include "config/settings.hpp"
#include "loops/loop_status.hpp"

namespace loopr::loops {

class LoopRun;

class LoopTree {
 public:
  using RunPtr = std::shared_ptr<LoopRun>;

  // Adds (or replaces) the loop under its id.
  void add(RunPtr run);
  std::size_t size() const { return runs_.size(); }

  // The loop `id`, or null.
  RunPtr run_of(const std::string& id) const;
  // Every loop in creation order; deleted loops only with `with_deleted`.
  std::vector<RunPtr> in_creation_order(bool with_deleted) const;

  // The children of `id`; with `current_generation_only`, neither
  // invalidated ones nor those of a generation its parent has left behind.
  std::vector<RunPtr> children_of(const std::string& id, bool current_generation_only) const;
  std::vector<std::string> children_ids(const std::string& id) const;
  // Every loop under `id`, of any generation.
  std::vector<RunPtr> descendants_of(const std::string& id) const;
  // The loop's parent, its parent's parent, ... up to the root (nearest first).
  std::vector<RunPtr> ancestors_of(const LoopRun& run) const;
  // Of an older generation than a loop above it, or under an invalidated
  // loop: no longer part of its tree.
  bool is_stale(const LoopRun& loop) const;
  // The id of the next child of `parent_id` with `prefix` (p3-s1, p3-s2, ...):
  // children keep counting across generations, so an id is never reused.
  // `offset`: children of the same parent named before this one and not
  // added yet (a batch).
  std::string next_child_id(const std::string& parent_id, const std::string& prefix,
                            std::int64_t offset) const;
  // What keeps a queued loop from starting: its parent's id when the parent
  // is not waiting for its children, or the first dependency not completed
  // and merged; empty when nothing does.
  std::string unmet_dependency(const LoopRun& run) const;

  // Loops whose status runs a model (loop_status.hpp runs_model), all and of
  // one type: what the scheduler's limits count.
  std::int64_t running_models() const;
  std::int64_t running_models_of_type(const std::string& type) const;
  std::size_t count_with_status(LoopStatus status) const;

  // A plan's tree budget (null: no such plan), its tree's spend (the plan's
  // own included), and everything every loop has spent.
  const config::BudgetLimits* plan_budget(const std::string& plan_id) const;
  Spend tree_spend(const std::string& plan_id) const;
  Spend total_spend() const;

 private:
  std::map<std::string, RunPtr> runs_;  // by id
};

}  // namespace loopr::loops
