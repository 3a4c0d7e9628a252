// Loop health (DESIGN.md §8): noticing a loop that goes round in circles.
// Two signs: the same tool call with the same arguments and the same result
// repeated N times ([loop_health] repeated_call_limit), and iterations in a
// row that change nothing in the worktree and fail validation the same way
// (unchanged_iteration_limit). Each sign is a strike; the answer escalates:
// the first strike is a note to the model, the second a fresh context, the
// third stops the loop as `stuck` with the evidence.
// Values; thread-compatible.
#pragma once

#include <cstdint>
#include <map>
#include <string>
#include <string_view>

namespace loopr::loops {

enum class HealthAction { note, fresh_context, stop };

// The answer to the `strikes`-th strike (1, 2, 3...).
HealthAction action_for_strike(std::int64_t strikes);

// Counts identical calls (tool, canonical arguments, result).
class CallRepeats {
 public:
  // How many times this exact call has now been seen since the last reset.
  std::int64_t record(std::string_view tool, std::string_view arguments, std::string_view result);
  void reset() { counts_.clear(); }

 private:
  std::map<std::uint64_t, std::int64_t> counts_;
};

// True when an iteration changed nothing and failed validation exactly as
// the previous one did.
bool unchanged_iteration(bool worktree_changed, const std::string& validation_output,
                         const std::string& previous_validation_output, bool had_previous);

}  // namespace loopr::loops
