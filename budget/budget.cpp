#include "budget/budget.hpp"

#include <algorithm>
#include <cmath>
#include <cstdio>

namespace loopr {
namespace {

using nlohmann::json;

std::string usd_text(double usd) {
  char buffer[64];
  std::snprintf(buffer, sizeof buffer, "$%.4f", usd);
  return buffer;
}

struct TokenLimit {
  const char* name;
  std::optional<std::int64_t> config::BudgetLimits::*limit;
  std::int64_t llm::Usage::*used;
};

constexpr TokenLimit kTokenLimits[] = {
    {"input_tokens", &config::BudgetLimits::input_tokens, &llm::Usage::input_tokens},
    {"output_tokens", &config::BudgetLimits::output_tokens, &llm::Usage::output_tokens},
    {"cache_read_tokens", &config::BudgetLimits::cache_read_tokens, &llm::Usage::cache_read_tokens},
    {"cache_write_tokens", &config::BudgetLimits::cache_write_tokens,
     &llm::Usage::cache_write_tokens},
};

struct CountLimit {
  const char* name;
  std::optional<std::int64_t> config::BudgetLimits::*limit;
};

constexpr CountLimit kCountLimits[] = {
    {"turns_per_iteration", &config::BudgetLimits::turns_per_iteration},
    {"tool_calls", &config::BudgetLimits::tool_calls},
    {"wall_clock_s", &config::BudgetLimits::wall_clock_s},
    {"input_tokens", &config::BudgetLimits::input_tokens},
    {"output_tokens", &config::BudgetLimits::output_tokens},
    {"cache_read_tokens", &config::BudgetLimits::cache_read_tokens},
    {"cache_write_tokens", &config::BudgetLimits::cache_write_tokens},
};

}  // namespace

Spend& Spend::operator+=(const Spend& other) {
  tokens += other.tokens;
  model_turns += other.model_turns;
  tool_calls += other.tool_calls;
  usd += other.usd;
  wall_clock_ms += other.wall_clock_ms;
  return *this;
}

json Spend::to_json() const {
  return {{"input_tokens", tokens.input_tokens},
          {"output_tokens", tokens.output_tokens},
          {"cache_read_tokens", tokens.cache_read_tokens},
          {"cache_write_tokens", tokens.cache_write_tokens},
          {"model_turns", model_turns},
          {"tool_calls", tool_calls},
          {"cost_usd", usd},
          {"wall_clock_ms", wall_clock_ms}};
}

Spend Spend::from_json(const json& value) {
  Spend spend;
  if (!value.is_object()) return spend;
  auto integer = [&](const char* key) -> std::int64_t {
    auto it = value.find(key);
    return it != value.end() && it->is_number_integer() ? it->get<std::int64_t>() : 0;
  };
  spend.tokens.input_tokens = integer("input_tokens");
  spend.tokens.output_tokens = integer("output_tokens");
  spend.tokens.cache_read_tokens = integer("cache_read_tokens");
  spend.tokens.cache_write_tokens = integer("cache_write_tokens");
  spend.model_turns = integer("model_turns");
  spend.tool_calls = integer("tool_calls");
  spend.wall_clock_ms = integer("wall_clock_ms");
  if (auto it = value.find("cost_usd"); it != value.end() && it->is_number()) {
    spend.usd = it->get<double>();
  }
  return spend;
}

double cost_usd(const llm::Usage& usage, const config::ModelPrice& price) {
  constexpr double kPerMillion = 1e-6;
  return (static_cast<double>(usage.input_tokens) * price.input +
          static_cast<double>(usage.output_tokens) * price.output +
          static_cast<double>(usage.cache_read_tokens) * price.cache_read +
          static_cast<double>(usage.cache_write_tokens) * price.cache_write) *
         kPerMillion;
}

Result<config::BudgetLimits> merge_limits(const config::BudgetLimits& base, const json& overrides) {
  config::BudgetLimits limits = base;
  if (overrides.is_null()) return limits;
  if (!overrides.is_object()) {
    return make_error(errc::invalid_arguments, "budget must be an object",
                      "e.g. {\"usd\": 2.5, \"tool_calls\": 200}");
  }
  for (const auto& [key, value] : overrides.items()) {
    if (key == "usd") {
      if (!value.is_number() || !(value.get<double>() >= 0) || value.get<double>() > 1e9) {
        return make_error(errc::invalid_arguments,
                          "budget.usd must be a number of US dollars "
                          "between 0 and 1e9");
      }
      limits.usd = value.get<double>();
      continue;
    }
    const auto* known = std::find_if(std::begin(kCountLimits), std::end(kCountLimits),
                                     [&](const CountLimit& limit) { return key == limit.name; });
    if (known == std::end(kCountLimits)) {
      return make_error(errc::invalid_arguments, "budget has no key '" + key + "'",
                        "budget keys: usd, turns_per_iteration, tool_calls, wall_clock_s, "
                        "input_tokens, output_tokens, cache_read_tokens, cache_write_tokens");
    }
    if (!value.is_number_integer() || value.get<std::int64_t>() < 1) {
      return make_error(errc::invalid_arguments,
                        "budget." + key + " must be a whole number of at least 1");
    }
    limits.*(known->limit) = value.get<std::int64_t>();
  }
  return limits;
}

json limits_to_json(const config::BudgetLimits& limits) {
  json out = json::object();
  for (const CountLimit& limit : kCountLimits) {
    if (limits.*(limit.limit)) out[limit.name] = *(limits.*(limit.limit));
  }
  if (limits.usd) out["usd"] = *limits.usd;
  return out;
}

json left_to_json(const config::BudgetLimits& limits, const Spend& used) {
  json out = json::object();
  auto left = [](std::int64_t limit, std::int64_t spent) {
    return std::max<std::int64_t>(0, limit - spent);
  };
  for (const TokenLimit& token : kTokenLimits) {
    if (limits.*(token.limit))
      out[token.name] = left(*(limits.*(token.limit)), used.tokens.*(token.used));
  }
  if (limits.tool_calls) out["tool_calls"] = left(*limits.tool_calls, used.tool_calls);
  if (limits.wall_clock_s) {
    out["wall_clock_s"] = left(*limits.wall_clock_s, used.wall_clock_ms / 1000);
  }
  if (limits.usd) out["usd"] = std::max(0.0, *limits.usd - used.usd);
  return out;
}

bool has_usd_limit(const config::BudgetLimits& limits) {
  return limits.usd.has_value();
}

std::int64_t estimate_tokens(std::size_t bytes) {
  return static_cast<std::int64_t>((bytes + 2) / 3);
}

void Allowance::narrow(const config::BudgetLimits& limits, const Spend& used,
                       const std::string& scope) {
  auto lower = [&](auto& item, const auto& limit, auto spent, const char* name) {
    if (!limit) return;
    const auto left = std::max(decltype(spent){0}, *limit - spent);
    if (!item || left < item->amount) item.emplace(left, scope + "." + name);
  };
  lower(input_tokens, limits.input_tokens, used.tokens.input_tokens, "input_tokens");
  lower(output_tokens, limits.output_tokens, used.tokens.output_tokens, "output_tokens");
  lower(cache_read_tokens, limits.cache_read_tokens, used.tokens.cache_read_tokens,
        "cache_read_tokens");
  lower(cache_write_tokens, limits.cache_write_tokens, used.tokens.cache_write_tokens,
        "cache_write_tokens");
  lower(usd, limits.usd, used.usd, "usd");
}

Allowance Allowance::share(std::int64_t calls) const {
  const std::int64_t n = std::max<std::int64_t>(1, calls);
  Allowance shared = *this;
  for (auto* item : {&shared.input_tokens, &shared.output_tokens, &shared.cache_read_tokens,
                     &shared.cache_write_tokens}) {
    if (*item) (*item)->amount /= n;
  }
  if (shared.usd) shared.usd->amount /= static_cast<double>(n);
  return shared;
}

Result<std::int64_t> max_output_within(const Allowance& allowance, std::int64_t input_tokens,
                                       std::int64_t wanted, const config::ModelPrice* price,
                                       const std::string& model) {
  const std::string hint =
      "attach fewer or smaller files or a shorter context, or ask the user for a larger budget";
  // Every input token may land in any input class.
  for (const auto* item :
       {&allowance.input_tokens, &allowance.cache_read_tokens, &allowance.cache_write_tokens}) {
    if (*item && input_tokens > (*item)->amount) {
      return make_error(kBudgetExhausted,
                        (*item)->budget + ": " + std::to_string((*item)->amount) +
                            " left, this call's input may use up to " +
                            std::to_string(input_tokens),
                        hint);
    }
  }
  std::int64_t tokens = wanted;
  std::string limited_by;
  if (allowance.output_tokens && allowance.output_tokens->amount < tokens) {
    tokens = allowance.output_tokens->amount;
    limited_by =
        allowance.output_tokens->budget + ": " + std::to_string(tokens) + " output tokens left";
  }
  if (allowance.usd) {
    const auto& usd = *allowance.usd;
    if (price == nullptr) {
      return make_error(kBudgetExhausted,
                        usd.budget + ": the cost of model " + model +
                            " is unknown, so it cannot be kept within the budget",
                        "add [prices.\"" + model + "\"] to loopr.toml");
    }
    const double input_price = std::max({price->input, price->cache_read, price->cache_write});
    const double input_cost = static_cast<double>(input_tokens) * input_price * 1e-6;
    if (input_cost >= usd.amount) {
      return make_error(kBudgetExhausted,
                        usd.budget + ": " + usd_text(usd.amount) +
                            " left, this call's input may cost up to " + usd_text(input_cost),
                        hint);
    }
    if (price->output > 0) {
      const double affordable = (usd.amount - input_cost) / (price->output * 1e-6);
      if (affordable < static_cast<double>(tokens)) {
        tokens = static_cast<std::int64_t>(std::floor(affordable));
        limited_by = usd.budget + ": " + usd_text(usd.amount) + " left, " + usd_text(input_cost) +
                     " of it for the input";
      }
    }
  }
  if (tokens < 1) {
    if (limited_by.empty()) limited_by = "max_tokens " + std::to_string(wanted);
    return make_error(kBudgetExhausted, limited_by + ", not enough for an answer",
                      "ask the user for a larger budget");
  }
  return tokens;
}

std::optional<std::string> exceeded_by_call(const config::BudgetLimits& limits, const Spend& used,
                                            const NextCall& call, const std::string& scope) {
  if (limits.turns_per_iteration && call.turns_this_iteration >= *limits.turns_per_iteration) {
    return scope + ".turns_per_iteration: " + std::to_string(*limits.turns_per_iteration) +
           " model turns in this iteration";
  }
  // Every input token of the next call may land in any input class.
  const std::int64_t worst_input = call.input_tokens_estimate;
  auto check = [&](const char* name, const std::optional<std::int64_t>& limit, std::int64_t spent,
                   std::int64_t next) -> std::optional<std::string> {
    if (limit && spent + next > *limit) {
      return scope + "." + name + ": " + std::to_string(std::max<std::int64_t>(0, *limit - spent)) +
             " left, the next model call may use up to " + std::to_string(next);
    }
    return std::nullopt;
  };
  if (auto why = check("input_tokens", limits.input_tokens, used.tokens.input_tokens, worst_input))
    return why;
  if (auto why = check("cache_read_tokens", limits.cache_read_tokens, used.tokens.cache_read_tokens,
                       worst_input))
    return why;
  if (auto why = check("cache_write_tokens", limits.cache_write_tokens,
                       used.tokens.cache_write_tokens, worst_input))
    return why;
  if (auto why = check("output_tokens", limits.output_tokens, used.tokens.output_tokens,
                       call.max_output_tokens))
    return why;
  if (limits.usd && call.price != nullptr) {
    const config::ModelPrice& p = *call.price;
    const double input_price = std::max({p.input, p.cache_read, p.cache_write});
    const double worst = (static_cast<double>(worst_input) * input_price +
                          static_cast<double>(call.max_output_tokens) * p.output) *
                         1e-6;
    if (used.usd + worst > *limits.usd) {
      return scope + ".usd: " + usd_text(std::max(0.0, *limits.usd - used.usd)) +
             " left, the next model call may cost up to " + usd_text(worst);
    }
  }
  return exceeded_by_time(limits, used, scope);
}

std::optional<std::string> exceeded_by_tool_calls(const config::BudgetLimits& limits,
                                                  const Spend& used, std::int64_t count,
                                                  const std::string& scope) {
  if (limits.tool_calls && used.tool_calls + count > *limits.tool_calls) {
    return scope + ".tool_calls: " +
           std::to_string(std::max<std::int64_t>(0, *limits.tool_calls - used.tool_calls)) +
           " left, the model asked for " + std::to_string(count);
  }
  return exceeded_by_time(limits, used, scope);
}

std::optional<std::string> exceeded_by_time(const config::BudgetLimits& limits, const Spend& used,
                                            const std::string& scope) {
  if (limits.wall_clock_s && used.wall_clock_ms >= *limits.wall_clock_s * 1000) {
    return scope + ".wall_clock_s: " + std::to_string(*limits.wall_clock_s) + " s used";
  }
  return std::nullopt;
}

}  // namespace loopr
