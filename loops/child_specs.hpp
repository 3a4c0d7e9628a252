// What a loop's children are (DESIGN.md §8, docs/control-protocol.md
// "Plans"): a plan's specs, a spec's phases, a phase's one code loop — each
// with the task its model is told and what it inherits from its parent —
// and the resolving loop made when a child's merge into its parent
// conflicts.
//
// Contract: pure. They read a parent's spec, its progress (artifact,
// generation) and the settings, and return specs without id, branch or
// worktree except where a child must name a sibling (depends_on): those are
// named through the caller's `NameLoop`, which gives ids in the order it is
// called. Storing, naming rules and starting stay with the engine
// (loop_engine_tree.cpp).
#pragma once

#include <cstdint>
#include <functional>
#include <string>
#include <vector>

#include "config/settings.hpp"
#include "loops/loop_record.hpp"

namespace loopr::loops {

// Gives `spec` its id, branch and worktree as the `offset`-th child of its
// parent named in this batch (0 for the first).
using NameLoop = std::function<void(LoopSpec& spec, std::int64_t offset)>;

// The letters of a loop's id after its parent's (p3-s1, p3-s1-ph2, ...-c1,
// ...-m1 for a resolver); "p" for a plan, "c" for a code loop.
std::string loop_id_prefix(const LoopSpec& spec);

// A child of `type` under a parent: its parent's repository, model, plan,
// branch and generation, the repository's commands as the plan resolved
// them, the type's [loops.TYPE] settings and the daemon's loop budget.
// `type` must be one of settings.loops (plan, spec, phase, code).
LoopSpec child_spec(const LoopSpec& parent, const LoopProgress& parent_progress,
                    const std::string& type, const config::Settings& settings);

// The children the parent's artifact asks for, named: a plan's specs (a
// spec depends on the specs its `dependencies` name), a spec's phases (each
// depends on the one before it), a phase's code loop (validated by the
// phase's validation_command). Empty when the artifact asks for none.
std::vector<LoopSpec> children_from_artifact(const LoopSpec& parent,
                                             const LoopProgress& parent_progress,
                                             const config::Settings& settings,
                                             const NameLoop& name);

// The code loop that resolves the conflicted merge of `child` into
// `parent`: it works in the parent's merge in progress, is told the files
// in conflict, and passes when no conflict marker is left (and, under a
// phase, the phase's own check passes). Not named.
LoopSpec resolver_spec(const LoopSpec& parent, const LoopProgress& parent_progress,
                       const LoopSpec& child, const std::vector<std::string>& conflicts,
                       const config::Settings& settings);

}  // namespace loopr::loops
