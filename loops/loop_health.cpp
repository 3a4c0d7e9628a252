#include "loops/loop_health.hpp"

#include <functional>

namespace loopr::loops {

HealthAction action_for_strike(std::int64_t strikes) {
  if (strikes <= 1) return HealthAction::note;
  if (strikes == 2) return HealthAction::fresh_context;
  return HealthAction::stop;
}

std::int64_t CallRepeats::record(std::string_view tool, std::string_view arguments,
                                 std::string_view result) {
  // A digest, not the texts: results can be large. A collision would only
  // make a note come early.
  const std::hash<std::string_view> hash;
  std::uint64_t key = hash(tool);
  key = key * 1099511628211ULL ^ hash(arguments);
  key = key * 1099511628211ULL ^ hash(result);
  return ++counts_[key];
}

bool unchanged_iteration(bool worktree_changed, const std::string& validation_output,
                         const std::string& previous_validation_output, bool had_previous) {
  return had_previous && !worktree_changed && validation_output == previous_validation_output;
}

}  // namespace loopr::loops
