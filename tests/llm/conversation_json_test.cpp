#include <gtest/gtest.h>

#include "llm/conversation.hpp"

namespace loopr::llm {
namespace {

using nlohmann::json;

TEST(ConversationJson, ToolCallRoundTripsAndKeepsArgumentsText) {
  ToolCall call{"toolu_1", "read_file", R"({"path": "a.txt"})"};
  json value = to_json(call);
  EXPECT_EQ(value, json::parse(R"({"id":"toolu_1","name":"read_file",
                                  "arguments":"{\"path\": \"a.txt\"}"})"));
  auto back = tool_call_from_json(value);
  ASSERT_TRUE(back) << back.error().message;
  EXPECT_EQ(*back, call);
}

TEST(ConversationJson, ToolCallArgumentsMayBeAnyJsonInAHandWrittenScript) {
  auto call = tool_call_from_json(json::parse(R"({"id":"c","name":"n","arguments":{"a":1}})"));
  ASSERT_TRUE(call);
  EXPECT_EQ(call->arguments, R"({"a":1})");
  auto missing = tool_call_from_json(json::parse(R"({"id":"c","name":"n"})"));
  ASSERT_TRUE(missing);
  EXPECT_EQ(missing->arguments, "{}");
}

TEST(ConversationJson, ToolCallFieldErrorsNameTheField) {
  auto no_id = tool_call_from_json(json::parse(R"({"name":"n"})"));
  ASSERT_FALSE(no_id);
  EXPECT_EQ(no_id.error().code, "invalid_arguments");
  EXPECT_NE(no_id.error().message.find("\"id\""), std::string::npos);
  auto bad_name = tool_call_from_json(json::parse(R"({"id":"c","name":3})"));
  ASSERT_FALSE(bad_name);
  EXPECT_NE(bad_name.error().message.find("\"name\""), std::string::npos);
  EXPECT_FALSE(tool_call_from_json(json::array()));
  EXPECT_FALSE(tool_call_from_json(json()));
}

TEST(ConversationJson, ToolResultRoundTrips) {
  ToolResult result{"toolu_1", "read_file", R"({"error":"nope"})", true};
  auto back = tool_result_from_json(to_json(result));
  ASSERT_TRUE(back);
  EXPECT_EQ(*back, result);
  auto bad = tool_result_from_json(json::parse(R"({"call_id":"x","is_error":"yes"})"));
  ASSERT_FALSE(bad);
  EXPECT_NE(bad.error().message.find("is_error"), std::string::npos);
}

TEST(ConversationJson, MessagesRoundTrip) {
  Message user{Role::user, "go on", {}, {{"c1", "grep", "[]", false}}};
  Message assistant{Role::assistant, "looking", {{"c1", "grep", R"({"q":"x"})"}}, {}};
  for (const Message& message : {user, assistant}) {
    auto back = message_from_json(to_json(message));
    ASSERT_TRUE(back) << back.error().message;
    EXPECT_EQ(*back, message);
  }
  EXPECT_EQ(to_json(Message{Role::user, "hi", {}, {}}),
            json::parse(R"({"role":"user","text":"hi"})"));
}

TEST(ConversationJson, MessageErrors) {
  auto role = message_from_json(json::parse(R"({"role":"system","text":"x"})"));
  ASSERT_FALSE(role);
  EXPECT_NE(role.error().message.find("role"), std::string::npos);
  auto nested = message_from_json(
      json::parse(R"({"role":"assistant","tool_calls":[{"id":"a","name":"b"},{"id":1}]})"));
  ASSERT_FALSE(nested);
  EXPECT_NE(nested.error().message.find("\"tool_calls\"[1]"), std::string::npos);
  EXPECT_NE(nested.error().message.find("\"id\""), std::string::npos);
  auto misplaced =
      message_from_json(json::parse(R"({"role":"user","tool_calls":[{"id":"a","name":"b"}]})"));
  EXPECT_FALSE(misplaced);
  EXPECT_FALSE(message_from_json(json::parse(R"({"role":"user","tool_results":{}})")));
}

TEST(ConversationJson, UsageRoundTripsAndRejectsNegatives) {
  Usage usage{10, 20, 30, 40};
  auto back = usage_from_json(to_json(usage));
  ASSERT_TRUE(back);
  EXPECT_EQ(*back, usage);
  EXPECT_EQ(usage.total(), 100);
  auto negative = usage_from_json(json::parse(R"({"input_tokens":-1})"));
  ASSERT_FALSE(negative);
  EXPECT_NE(negative.error().message.find("input_tokens"), std::string::npos);
  EXPECT_FALSE(usage_from_json(json::parse(R"({"output_tokens":1.5})")));
  EXPECT_FALSE(usage_from_json(json::parse(R"({"output_tokens":"3"})")));
  auto partial = usage_from_json(json::parse(R"({"output_tokens":3})"));
  ASSERT_TRUE(partial);
  EXPECT_EQ(*partial, (Usage{0, 3, 0, 0}));
}

TEST(ConversationJson, UsageAddsByClass) {
  Usage a{1, 2, 3, 4};
  a += Usage{10, 20, 30, 40};
  EXPECT_EQ(a, (Usage{11, 22, 33, 44}));
}

TEST(ConversationJson, ModelTurnRoundTrips) {
  ModelTurn turn{"hello", {{"c", "n", "{}"}}, StopReason::tool_use, "claude", {1, 2, 3, 4}};
  json value = to_json(turn);
  EXPECT_EQ(value["stop_reason"], "tool_use");
  auto back = model_turn_from_json(value);
  ASSERT_TRUE(back);
  EXPECT_EQ(*back, turn);
}

TEST(ConversationJson, ModelTurnDefaultsForHandWrittenScripts) {
  auto text = model_turn_from_json(json::parse(R"({"text":"done"})"));
  ASSERT_TRUE(text);
  EXPECT_EQ(text->stop_reason, StopReason::end_turn);
  auto calls = model_turn_from_json(json::parse(R"({"tool_calls":[{"id":"a","name":"b"}]})"));
  ASSERT_TRUE(calls);
  EXPECT_EQ(calls->stop_reason, StopReason::tool_use);
  auto bad = model_turn_from_json(json::parse(R"({"stop_reason":"bored"})"));
  ASSERT_FALSE(bad);
  EXPECT_NE(bad.error().message.find("stop_reason"), std::string::npos);
  auto bad_usage = model_turn_from_json(json::parse(R"({"usage":{"input_tokens":"x"}})"));
  ASSERT_FALSE(bad_usage);
  EXPECT_NE(bad_usage.error().message.find("input_tokens"), std::string::npos);
}

TEST(ConversationJson, RoleAndStopReasonNames) {
  EXPECT_EQ(to_string(Role::user), "user");
  EXPECT_EQ(to_string(Role::assistant), "assistant");
  for (StopReason reason : {StopReason::end_turn, StopReason::tool_use, StopReason::max_tokens,
                            StopReason::stop_sequence, StopReason::refusal, StopReason::other}) {
    EXPECT_EQ(parse_stop_reason(to_string(reason)), reason);
  }
  EXPECT_EQ(parse_stop_reason("pause_turn"), StopReason::other);
}

}  // namespace
}  // namespace loopr::llm
