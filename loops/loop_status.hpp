// A loop's status (docs/control-protocol.md "Loops"): what it is doing, or
// how it ended. Final statuses never change again.
#pragma once

#include <optional>
#include <string_view>

namespace loopr::loops {

enum class LoopStatus {
  queued,
  running,
  paused,
  completed,
  failed,
  cancelled,
  budget_exhausted,
  stuck,
  // Plans (docs/control-protocol.md "Plans").
  awaiting_approval,  // a plan with an artifact, waiting for the person
  waiting,            // its own work done; its children run
  rejected,
  invalidated,  // an ancestor was iterated or re-run: stopped and archived
  blocked       // a child's merge conflicted and could not be resolved
};

std::string_view to_string(LoopStatus status);
std::optional<LoopStatus> parse_loop_status(std::string_view text);
bool is_final(LoopStatus status);
// Whether a run coroutine belongs to this status (running, paused).
bool runs_model(LoopStatus status);

}  // namespace loopr::loops
