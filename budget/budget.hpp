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

namespace loopr {

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

// The error code of a call refused because a budget is spent.
inline constexpr const char* kBudgetExhausted = "budget_exhausted";

// What a tool call that consults a model itself (the oracle, which looprd
// hosts) may still spend: for each token class and for USD, the least that
// any of the caller's budgets leaves, with that budget's name. Unset: no
// budget limits it (a client's own call has no allowance at all). A loop
// narrows it by each of its budgets before a turn's calls run and shares it
// among that turn's calls, so that together they cannot overspend; the tool
// then caps its model call to it (max_output_within).
struct Allowance {
  template <typename T>
  struct Left {
    T amount{};
    std::string budget;  // "loop.output_tokens", "plan p1.usd", "global.input_tokens"
  };
  std::optional<Left<std::int64_t>> input_tokens;
  std::optional<Left<std::int64_t>> output_tokens;
  std::optional<Left<std::int64_t>> cache_read_tokens;
  std::optional<Left<std::int64_t>> cache_write_tokens;
  std::optional<Left<double>> usd;

  // Lowers each item to what `limits` leave after `used` (never below 0);
  // `scope` ("loop", "global", "plan <id>") starts the budget's name.
  void narrow(const config::BudgetLimits& limits, const Spend& used, const std::string& scope);
  // Each item divided among `calls` calls (rounded down; `calls` < 1 counts as 1).
  Allowance share(std::int64_t calls) const;
};

// The max_tokens of a model call with `input_tokens` (an estimate, erring
// high) of input that keeps within `allowance`: `wanted` lowered to the
// output tokens left and to what USD is left once the input is paid for at
// the dearest input class. A budget_exhausted Error naming the budget when
// the input alone may not fit, or no output token is left; also when the
// allowance has USD and `price` is null (the cost of `model` is unknown,
// as a loop with a USD budget refuses a model without a price).
Result<std::int64_t> max_output_within(const Allowance& allowance, std::int64_t input_tokens,
                                       std::int64_t wanted, const config::ModelPrice* price,
                                       const std::string& model);

}  // namespace loopr
