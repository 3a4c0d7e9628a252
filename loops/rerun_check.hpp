// Whether a loop of a tree can be re-run now (loop.rerun,
// docs/control-protocol.md "Plans"), and what the re-run brings back.
//
// A loop is refused when it was deleted, has not started, was invalidated,
// spent its budget, completed under a parent (its work is the parent's now),
// belongs to an older generation, lost its worktree, made children before
// loopr recorded where they began, or sits under a loop that was deleted or
// gc'd. Inside a plan that ended (failed or blocked), the re-run brings back
// the loops the tree's end stopped (status_before_tree_ended) — unless one
// of them ended on its own and is not under the re-run loop: re-running
// this one would end the plan again, so the refusal names that loop. Every
// refusal is an invalid_state Error (rpc code 1002) whose hint says what to
// do instead.
//
// Contract: pure over the tree as it is (loop_tree.hpp); the engine checks
// before it stops the loop and again after (loop_engine_rerun.cpp).
#pragma once

#include <memory>
#include <vector>

#include "common/error.hpp"
#include "loops/loop_tree.hpp"

namespace loopr::loops {

// The loops a re-run of `run` brings back (none inside a plan still being
// carried out, or outside a plan), or why it cannot be re-run now.
Result<std::vector<LoopTree::RunPtr>> check_rerun(const LoopTree& tree,
                                                  const LoopTree::RunPtr& run);

}  // namespace loopr::loops
