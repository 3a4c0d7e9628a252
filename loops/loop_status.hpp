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
  stuck
};

std::string_view to_string(LoopStatus status);
std::optional<LoopStatus> parse_loop_status(std::string_view text);
bool is_final(LoopStatus status);

}  // namespace loopr::loops
