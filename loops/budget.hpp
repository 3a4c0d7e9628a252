// Budgets enforced by the daemon (DESIGN.md §8): per loop and global, on
// model turns per iteration, tool calls, wall-clock time, tokens by class
// and cost in USD. The worst case of the next model call (its estimated
// input plus max_tokens of output) is checked before the call is made, so a
// budget is overrun by at most what one call's estimate missed; tool calls
// and time are checked before each turn's calls run.
// Pure functions and values; thread-compatible.
#pragma once

#include <cstdint>
#include <nlohmann/json.hpp>
#include <optional>
#include <string>

#include "common/error.hpp"
#include "config/settings.hpp"
#include "llm/conversation.hpp"

namespace loopr::loops {

// What a loop (or all loops) used so far.
struct Spend {
  llm::Usage tokens;
  std::int64_t model_turns = 0;
  std::int64_t tool_calls = 0;
  double usd = 0;
  std::int64_t wall_clock_ms = 0;

  Spend& operator+=(const Spend& other);
  nlohmann::json to_json() const;
  static Spend from_json(const nlohmann::json& value);  // missing fields: 0
};

// USD of `usage` at `price` (per million tokens of each class).
double cost_usd(const llm::Usage& usage, const config::ModelPrice& price);

// `base` with the keys of `overrides` (loop.create's `budget` object) over
// it; an unknown key or a value of the wrong type or range is
// invalid_arguments naming it.
Result<config::BudgetLimits> merge_limits(const config::BudgetLimits& base,
                                          const nlohmann::json& overrides);
nlohmann::json limits_to_json(const config::BudgetLimits& limits);
// limit - used for every set limit (never below 0).
nlohmann::json left_to_json(const config::BudgetLimits& limits, const Spend& used);
bool has_usd_limit(const config::BudgetLimits& limits);

// The next model call in the worst case.
struct NextCall {
  std::int64_t input_tokens_estimate = 0;
  std::int64_t max_output_tokens = 0;
  std::int64_t turns_this_iteration = 0;      // turns already made in this iteration
  const config::ModelPrice* price = nullptr;  // null: cost unknown (no USD check possible)
};

// The budget that the next model call could exceed, as "<name>: <why>", or
// nullopt when it fits. `scope` ("loop" or "global") starts the name.
std::optional<std::string> exceeded_by_call(const config::BudgetLimits& limits, const Spend& used,
                                            const NextCall& call, const std::string& scope);
// The same for running `count` more tool calls, and for the time spent.
std::optional<std::string> exceeded_by_tool_calls(const config::BudgetLimits& limits,
                                                  const Spend& used, std::int64_t count,
                                                  const std::string& scope);
std::optional<std::string> exceeded_by_time(const config::BudgetLimits& limits, const Spend& used,
                                            const std::string& scope);

// Tokens a request of `bytes` may take, erring high: a token is rarely under
// three bytes of English or JSON.
std::int64_t estimate_tokens(std::size_t bytes);

}  // namespace loopr::loops
