#include "loops/loop_status.hpp"

#include <array>
#include <utility>

namespace loopr::loops {
namespace {

constexpr std::array<std::pair<LoopStatus, std::string_view>, 13> kNames = {{
    {LoopStatus::queued, "queued"},
    {LoopStatus::running, "running"},
    {LoopStatus::paused, "paused"},
    {LoopStatus::completed, "completed"},
    {LoopStatus::failed, "failed"},
    {LoopStatus::cancelled, "cancelled"},
    {LoopStatus::budget_exhausted, "budget_exhausted"},
    {LoopStatus::stuck, "stuck"},
    {LoopStatus::awaiting_approval, "awaiting_approval"},
    {LoopStatus::waiting, "waiting"},
    {LoopStatus::rejected, "rejected"},
    {LoopStatus::invalidated, "invalidated"},
    {LoopStatus::blocked, "blocked"},
}};

}  // namespace

std::string_view to_string(LoopStatus status) {
  for (const auto& [value, name] : kNames)
    if (value == status) return name;
  return "failed";
}

std::optional<LoopStatus> parse_loop_status(std::string_view text) {
  for (const auto& [value, name] : kNames)
    if (name == text) return value;
  return std::nullopt;
}

bool is_final(LoopStatus status) {
  return status != LoopStatus::queued && status != LoopStatus::running &&
         status != LoopStatus::paused && status != LoopStatus::awaiting_approval &&
         status != LoopStatus::waiting;
}

bool runs_model(LoopStatus status) {
  return status == LoopStatus::running || status == LoopStatus::paused;
}

}  // namespace loopr::loops
