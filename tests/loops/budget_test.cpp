// Budgets: every limit is checked against the worst case of what comes next,
// names itself when it is the one that stops a loop, and takes overrides
// only of the known keys and shapes.
#include "budget/budget.hpp"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include "loops/loop_health.hpp"

namespace loopr::loops {
namespace {

using nlohmann::json;
using ::testing::HasSubstr;
using ::testing::StartsWith;

NextCall call_of(std::int64_t input, std::int64_t output,
                 const config::ModelPrice* price = nullptr) {
  NextCall call;
  call.input_tokens_estimate = input;
  call.max_output_tokens = output;
  call.price = price;
  return call;
}

TEST(Budget, EachTokenClassIsCheckedAgainstTheNextCallsWorstCase) {
  Spend used;
  used.tokens = {900, 90, 500, 500};
  struct Case {
    const char* key;
    std::int64_t limit;
  };
  for (const Case& c : {Case{"input_tokens", 1000}, Case{"cache_read_tokens", 600},
                        Case{"cache_write_tokens", 600}, Case{"output_tokens", 100}}) {
    auto limits = merge_limits({}, json{{c.key, c.limit}});
    ASSERT_TRUE(limits.ok()) << c.key;
    // 101 input tokens may all land in any input class; 11 output tokens.
    auto why = exceeded_by_call(*limits, used, call_of(101, 11), "loop");
    ASSERT_TRUE(why.has_value()) << c.key;
    EXPECT_THAT(*why, StartsWith(std::string("loop.") + c.key + ":"));
    // A call that fits is let through.
    EXPECT_FALSE(exceeded_by_call(*limits, used, call_of(10, 1), "loop").has_value()) << c.key;
  }
}

TEST(Budget, UsdIsCheckedWithTheDearestInputClassAndTheOutput) {
  const config::ModelPrice price{3.0, 15.0, 0.3, 3.75};
  config::BudgetLimits limits;
  limits.usd = 0.10;
  Spend used;
  used.usd = 0.09;
  // 1000 input at 3.75/M (the dearest class) + 500 output at 15/M = 0.01125.
  auto why = exceeded_by_call(limits, used, call_of(1000, 500, &price), "global");
  ASSERT_TRUE(why.has_value());
  EXPECT_THAT(*why, StartsWith("global.usd: $0.0100 left"));
  EXPECT_FALSE(exceeded_by_call(limits, used, call_of(100, 100, &price), "global").has_value());
  EXPECT_NEAR(cost_usd({1'000'000, 1'000'000, 1'000'000, 1'000'000}, price), 22.05, 1e-9);
}

TEST(Allowance, IsTheLeastAnyBudgetLeavesNamedAfterThatBudget) {
  config::BudgetLimits loop;
  loop.output_tokens = 1000;
  loop.usd = 1.0;
  config::BudgetLimits plan;
  plan.output_tokens = 5000;
  plan.usd = 0.25;
  Spend loop_used;
  loop_used.tokens.output_tokens = 400;
  loop_used.usd = 0.5;
  Spend plan_used;
  plan_used.tokens.output_tokens = 4900;
  plan_used.usd = 0.05;
  Allowance allowance;
  allowance.narrow(loop, loop_used, "loop");
  allowance.narrow(plan, plan_used, "plan p1");
  allowance.narrow(config::BudgetLimits{}, Spend{}, "global");  // no limit: no change
  ASSERT_TRUE(allowance.output_tokens && allowance.usd);
  EXPECT_EQ(allowance.output_tokens->amount, 100);
  EXPECT_EQ(allowance.output_tokens->budget, "plan p1.output_tokens");
  EXPECT_NEAR(allowance.usd->amount, 0.2, 1e-12);
  EXPECT_EQ(allowance.usd->budget, "plan p1.usd");
  EXPECT_FALSE(allowance.input_tokens.has_value());
  // Spent beyond its limit: nothing is left, never less.
  loop_used.tokens.output_tokens = 2000;
  allowance.narrow(loop, loop_used, "loop");
  EXPECT_EQ(allowance.output_tokens->amount, 0);
  EXPECT_EQ(allowance.output_tokens->budget, "loop.output_tokens");
  // Three calls of one turn share it.
  Allowance wide;
  wide.narrow(plan, Spend{}, "plan p1");
  const Allowance third = wide.share(3);
  EXPECT_EQ(third.output_tokens->amount, 1666);
  EXPECT_NEAR(third.usd->amount, 0.25 / 3, 1e-12);
}

TEST(Allowance, CapsAModelCallsOutputToWhatTokensAndUsdLeave) {
  const config::ModelPrice price{3.0, 15.0, 0.3, 3.75};
  Allowance none;
  EXPECT_EQ(max_output_within(none, 1'000'000, 4096, nullptr, "m").value(), 4096);

  Allowance tokens;
  tokens.output_tokens.emplace(300, "loop.output_tokens");
  EXPECT_EQ(max_output_within(tokens, 1000, 4096, nullptr, "m").value(), 300);
  EXPECT_EQ(max_output_within(tokens, 1000, 200, nullptr, "m").value(), 200);
  tokens.output_tokens->amount = 0;
  auto spent = max_output_within(tokens, 1000, 4096, nullptr, "m");
  ASSERT_FALSE(spent.ok());
  EXPECT_EQ(spent.error().code, kBudgetExhausted);
  EXPECT_THAT(spent.error().message, StartsWith("loop.output_tokens: 0 output tokens left"));

  // 1000 input tokens at 3.75/M (the dearest class) cost $0.00375; $0.01
  // leaves $0.00625, which buys 416 output tokens at 15/M.
  Allowance usd;
  usd.usd.emplace(0.01, "global.usd");
  EXPECT_EQ(max_output_within(usd, 1000, 4096, &price, "m").value(), 416);
  auto dear = max_output_within(usd, 3000, 4096, &price, "m");
  ASSERT_FALSE(dear.ok());
  EXPECT_THAT(dear.error().message, StartsWith("global.usd: $0.0100 left, this call's input"));
  auto unpriced = max_output_within(usd, 10, 4096, nullptr, "mystery-model");
  ASSERT_FALSE(unpriced.ok());
  EXPECT_THAT(unpriced.error().message, HasSubstr("cost of model mystery-model is unknown"));

  Allowance input;
  input.cache_write_tokens.emplace(500, "plan p2.cache_write_tokens");
  auto big = max_output_within(input, 501, 4096, nullptr, "m");
  ASSERT_FALSE(big.ok());
  EXPECT_THAT(big.error().message, StartsWith("plan p2.cache_write_tokens: 500 left"));
  EXPECT_TRUE(max_output_within(input, 500, 4096, nullptr, "m").ok());
}

TEST(Budget, TurnsToolCallsAndTimeAreCountedToo) {
  config::BudgetLimits limits;
  limits.turns_per_iteration = 3;
  limits.tool_calls = 10;
  limits.wall_clock_s = 60;
  Spend used;
  used.tool_calls = 8;
  NextCall call = call_of(1, 1);
  call.turns_this_iteration = 3;
  EXPECT_THAT(*exceeded_by_call(limits, used, call, "loop"),
              StartsWith("loop.turns_per_iteration"));
  EXPECT_THAT(*exceeded_by_tool_calls(limits, used, 3, "loop"),
              StartsWith("loop.tool_calls: 2 left"));
  EXPECT_FALSE(exceeded_by_tool_calls(limits, used, 2, "loop").has_value());
  used.wall_clock_ms = 60'000;
  EXPECT_THAT(*exceeded_by_time(limits, used, "loop"), StartsWith("loop.wall_clock_s"));
}

TEST(Budget, OverridesTakeOnlyKnownKeysOfTheRightShape) {
  config::BudgetLimits base;
  base.turns_per_iteration = 50;
  auto merged = merge_limits(base, json{{"usd", 2.5}, {"tool_calls", 7}});
  ASSERT_TRUE(merged.ok());
  EXPECT_EQ(merged->usd, 2.5);
  EXPECT_EQ(merged->tool_calls, 7);
  EXPECT_EQ(merged->turns_per_iteration, 50);
  EXPECT_THAT(merge_limits(base, json{{"tokens", 5}}).error().message,
              HasSubstr("no key 'tokens'"));
  EXPECT_FALSE(merge_limits(base, json{{"usd", -1}}).ok());
  EXPECT_FALSE(merge_limits(base, json{{"tool_calls", 0}}).ok());
  EXPECT_FALSE(merge_limits(base, json{{"tool_calls", 1.5}}).ok());
  EXPECT_FALSE(merge_limits(base, json::array()).ok());
  EXPECT_EQ(limits_to_json(*merged)["usd"], 2.5);
  Spend used;
  used.tool_calls = 9;
  EXPECT_EQ(left_to_json(*merged, used)["tool_calls"], 0);  // never below zero
}

TEST(Budget, SpendSurvivesItsJsonForm) {
  Spend spend;
  spend.tokens = {1, 2, 3, 4};
  spend.model_turns = 5;
  spend.tool_calls = 6;
  spend.usd = 0.25;
  spend.wall_clock_ms = 7;
  const Spend back = Spend::from_json(spend.to_json());
  EXPECT_EQ(back.tokens, spend.tokens);
  EXPECT_EQ(back.tool_calls, 6);
  EXPECT_EQ(back.usd, 0.25);
  EXPECT_EQ(Spend::from_json(json("garbage")).tool_calls, 0);
}

TEST(LoopHealth, StrikesEscalateFromANoteToAFreshContextToStop) {
  EXPECT_EQ(action_for_strike(1), HealthAction::note);
  EXPECT_EQ(action_for_strike(2), HealthAction::fresh_context);
  EXPECT_EQ(action_for_strike(3), HealthAction::stop);
  CallRepeats repeats;
  EXPECT_EQ(repeats.record("read_file", R"({"path":"a"})", "same"), 1);
  EXPECT_EQ(repeats.record("read_file", R"({"path":"a"})", "same"), 2);
  EXPECT_EQ(repeats.record("read_file", R"({"path":"a"})", "other result"), 1);
  EXPECT_EQ(repeats.record("read_file", R"({"path":"b"})", "same"), 1);
  repeats.reset();
  EXPECT_EQ(repeats.record("read_file", R"({"path":"a"})", "same"), 1);
  EXPECT_TRUE(unchanged_iteration(false, "FAIL x", "FAIL x", true));
  EXPECT_FALSE(unchanged_iteration(true, "FAIL x", "FAIL x", true));
  EXPECT_FALSE(unchanged_iteration(false, "FAIL y", "FAIL x", true));
  EXPECT_FALSE(unchanged_iteration(false, "FAIL x", "", false));
}

}  // namespace
}  // namespace loopr::loops
