// Loops as trees by parent_id (docs/control-protocol.md, "Plans"), for
// `looprctl loops --tree`, `plan show` and the lines of `plan approve
// --follow`. Pure functions over JSON, as client/loop_view.hpp: any shape is
// accepted (a missing or mistyped field renders as "-"), every string the
// daemon sent goes through printable(). Thread-compatible.
#pragma once

#include <cstddef>
#include <iosfwd>
#include <nlohmann/json.hpp>
#include <string>
#include <vector>

namespace loopr::client {

// Indentation stops growing below this depth (a daemon's parent chain may be
// arbitrarily long; a plan's tree is five deep).
inline constexpr std::size_t kMaxTreeDepth = 16;

struct TreeRow {
  const nlohmann::json* loop = nullptr;  // into the list given to loop_tree_rows
  std::size_t depth = 0;                 // 0: a root
  std::string lead;                      // drawn before the id: "", "├─ ", "│  └─ ", ...
};

// The loops in tree order. A loop is an object with a non-empty string id;
// other entries, and later entries repeating an id, are left out. Roots are
// the loops without a parent_id or whose parent is not in the list (e.g.
// filtered out by status), oldest first by created_at_ms; each is followed by
// its descendants, depth first, children in the order of the parent's
// `children`, then any other loop naming it as parent in list order. Loops
// caught in a parent cycle come last, as roots. Rows point into `loops`.
std::vector<TreeRow> loop_tree_rows(const nlohmann::json& loops);

// The status and why, for one line: "queued (waiting for p1-s1)" (the
// queue_reason), "failed (child p1-s2 failed)" (the status_reason's first
// line cut to `reason_width`, for failed, blocked, budget_exhausted and stuck,
// or for any status with `every_reason`), " (deleted)" added for a deleted
// loop.
std::string status_with_reason(const nlohmann::json& loop, std::size_t reason_width,
                               bool every_reason = false);

// ID TYPE STATUS ITER ELAPSED TOKENS COST MERGED, one row per loop in tree
// order, the id drawn under its parent; ELAPSED is created_at_ms to
// updated_at_ms, MERGED says "merged" once the loop's branch is merged into
// its parent's. "no loops" when there are none.
void print_loop_tree(const nlohmann::json& loops, std::ostream& out);

}  // namespace loopr::client
