// proto/loop_messages.hpp: what looprctl writes, looprd reads back as sent,
// and refusals carry the messages looprd has always answered.
#include "proto/loop_messages.hpp"

#include <gtest/gtest.h>

namespace loopr::proto {
namespace {

using nlohmann::json;

TEST(LoopMessages, RoundTripThroughJson) {
  LoopCreateParams create;
  create.task = "fix the build";
  create.spec.repo = "/src/app";
  create.spec.max_iterations = 3;
  create.spec.include_uncommitted = true;
  create.spec.budget = json{{"tokens", 1000}};
  EXPECT_EQ(*parse_loop_create_params(to_json(create)), create);

  LoopCreatePlanParams plan;
  plan.description = "split the parser";
  plan.spec.repo = "/src/app";
  plan.spec.validate_timeout_s = 60;
  EXPECT_EQ(*parse_loop_create_plan_params(to_json(plan)), plan);

  const LoopTranscriptParams transcript{"c1", 2, 40, 10};
  EXPECT_EQ(*parse_loop_transcript_params(to_json(transcript)), transcript);
  const LoopDeleteParams remove{"c1", true, false};
  EXPECT_EQ(*parse_loop_delete_params(to_json(remove)), remove);
  const PlanRejectParams reject{"p1", "too broad"};
  EXPECT_EQ(*parse_plan_reject_params(to_json(reject)), reject);
  const LoopFeedbackParams rerun{"c4", "keep the old flag"};
  EXPECT_EQ(*parse_loop_rerun_params(to_json(rerun)), rerun);
  const PlanMergeParams merge{"p1", "main"};
  EXPECT_EQ(*parse_plan_merge_params(to_json(merge)), merge);
  const LoopListParams list{"running", "code", true};
  EXPECT_EQ(*parse_loop_list_params(to_json(list)), list);
}

TEST(LoopMessages, RefusalsNameTheField) {
  auto no_id = parse_loop_id_params(json::object());
  ASSERT_FALSE(no_id);
  EXPECT_EQ(no_id.error().code, errc::invalid_arguments);
  EXPECT_EQ(no_id.error().message, "the request needs `id`, a loop id (see looprctl loops)");
  EXPECT_EQ(parse_loop_create_params(json{{"task", "x"}, {"max_iterations", 0}}).error().message,
            "max_iterations must be a whole number from 1 to 10000");
  EXPECT_EQ(parse_loop_create_params(json{{"task", 3}}).error().message, "task must be a string");
  EXPECT_EQ(parse_loop_diff_params(json{{"id", "c1"}, {"stat_only", "yes"}}).error().message,
            "stat_only must be true or false");
  EXPECT_EQ(parse_loop_rerun_params(json{{"id", "c1"}, {"feedback", 1}}).error().message,
            "feedback must be a string");
  EXPECT_EQ(parse_plan_merge_params(json{{"id", "p1"}, {"into", 1}}).error().message,
            "into must be a branch name");
  // plan.iterate and plan.reject read a text of another type as absent.
  EXPECT_EQ(parse_plan_iterate_params(json{{"id", "p1"}, {"feedback", 1}})->feedback, "");
}

}  // namespace
}  // namespace loopr::proto
