#include "llm/openai_wire.hpp"

#include <gtest/gtest.h>

#include "llm/provider.hpp"
#include "tests/llm/wire_stream.hpp"

namespace loopr::llm {
namespace {

using nlohmann::json;
using wire_test::run_stream;

WireOptions openai_options(bool stream = false) {
  WireOptions out;
  out.base_url = "http://127.0.0.1:8080/v1";
  out.model = "local-model";
  out.stream = stream;
  return out;
}

ModelRequest sample_openai_request() {
  ModelRequest request;
  request.system = "You are careful.";
  request.max_tokens = 500;
  request.tools = {{"read_file", "Reads a file", json::parse(R"({"type":"object"})")}};
  request.messages = {
      {Role::user, "Fix the bug", {}, {}},
      {Role::assistant,
       "Looking.",
       {{"call_a", "read_file", R"({"path":"a.c"})"}, {"call_b", "read_file", "not json"}},
       {}},
      {Role::user,
       "and then?",
       {},
       {{"call_a", "read_file", "int main;", false}, {"call_b", "read_file", "bad", true}}},
      {Role::assistant, "", {{"call_c", "read_file", "{}"}}, {}},
  };
  return request;
}

TEST(OpenAIWire, RequestBody) {
  OpenAiWire wire(openai_options());
  json expected = json::parse(R"({
    "model": "local-model",
    "max_tokens": 500,
    "messages": [
      {"role": "system", "content": "You are careful."},
      {"role": "user", "content": "Fix the bug"},
      {"role": "assistant", "content": "Looking.", "tool_calls": [
        {"id": "call_a", "type": "function",
         "function": {"name": "read_file", "arguments": "{\"path\":\"a.c\"}"}},
        {"id": "call_b", "type": "function",
         "function": {"name": "read_file", "arguments": "not json"}}
      ]},
      {"role": "tool", "tool_call_id": "call_a", "content": "int main;"},
      {"role": "tool", "tool_call_id": "call_b", "content": "bad"},
      {"role": "user", "content": "and then?"},
      {"role": "assistant", "content": null, "tool_calls": [
        {"id": "call_c", "type": "function", "function": {"name": "read_file", "arguments": "{}"}}
      ]}
    ],
    "tools": [{"type": "function", "function": {"name": "read_file",
               "description": "Reads a file", "parameters": {"type": "object"}}}]
  })");
  HttpRequest http = wire.build_request(sample_openai_request(), nullptr);
  EXPECT_EQ(json::parse(http.body), expected);
  EXPECT_EQ(http.url, "http://127.0.0.1:8080/v1/chat/completions");
}

TEST(OpenAIWire, MaxCompletionTokensAndReasoningEffort) {
  WireOptions reasoning = openai_options();
  reasoning.base_url = "https://api.openai.com/v1";
  reasoning.model = "o4-mini";
  reasoning.max_tokens_field = "max_completion_tokens";
  reasoning.reasoning_effort = "high";
  ModelRequest request;
  request.max_tokens = 16000;
  request.messages = {{Role::user, "hi", {}, {}}};
  EXPECT_EQ(OpenAiWire(reasoning).request_body(request), json::parse(R"({
    "model": "o4-mini",
    "max_completion_tokens": 16000,
    "reasoning_effort": "high",
    "messages": [{"role": "user", "content": "hi"}]
  })"));

  reasoning.reasoning_effort = "minimal";
  EXPECT_EQ(json::parse(OpenAiWire(reasoning).build_request(request, nullptr).body),
            json::parse(R"({
    "model": "o4-mini",
    "max_completion_tokens": 16000,
    "reasoning_effort": "minimal",
    "messages": [{"role": "user", "content": "hi"}]
  })"));
}

TEST(OpenAIWire, MaxTokensAndNoReasoningEffortByDefault) {
  ModelRequest request;
  request.max_tokens = 4096;
  request.messages = {{Role::user, "hi", {}, {}}};
  EXPECT_EQ(OpenAiWire(openai_options()).request_body(request), json::parse(R"({
    "model": "local-model",
    "max_tokens": 4096,
    "messages": [{"role": "user", "content": "hi"}]
  })"));
  WireOptions local = openai_options();
  local.reasoning_effort = "low";
  EXPECT_EQ(OpenAiWire(local).request_body(request), json::parse(R"({
    "model": "local-model",
    "max_tokens": 4096,
    "reasoning_effort": "low",
    "messages": [{"role": "user", "content": "hi"}]
  })"));
}

TEST(OpenAIWire, StreamingRequestAsksForUsage) {
  OpenAiWire wire(openai_options(true));
  ModelRequest request;
  request.messages = {{Role::user, "hi", {}, {}}};
  json body = wire.request_body(request);
  EXPECT_EQ(body["stream"], true);
  EXPECT_EQ(body["stream_options"], json::parse(R"({"include_usage": true})"));
  EXPECT_FALSE(body.contains("tools"));
  EXPECT_EQ(body["messages"].size(), 1U);
}

TEST(OpenAIWire, BearerOnlyWithAKey) {
  OpenAiWire wire(openai_options());
  Secret key("sk-abc");
  bool found = false;
  for (const auto& [name, value] : wire.build_request(sample_openai_request(), &key).headers) {
    if (name == "authorization") {
      EXPECT_EQ(value, "Bearer sk-abc");
      found = true;
    }
  }
  EXPECT_TRUE(found);
  for (const auto& [name, value] : wire.build_request(sample_openai_request(), nullptr).headers) {
    EXPECT_NE(name, "authorization");
  }
}

TEST(OpenAIWire, ParseResponse) {
  OpenAiWire wire(openai_options());
  auto turn = wire.parse_response(R"({
    "id": "chatcmpl-1", "object": "chat.completion", "model": "gpt-test",
    "choices": [{"index": 0, "finish_reason": "tool_calls", "message": {
      "role": "assistant", "content": "Reading.",
      "tool_calls": [{"id": "call_1", "type": "function",
                      "function": {"name": "read_file", "arguments": "{\"path\":\"x\"}"}},
                     {"type": "function", "function": {"name": "grep", "arguments": ""}}]}}],
    "usage": {"prompt_tokens": 100, "completion_tokens": 20, "total_tokens": 120,
              "prompt_tokens_details": {"cached_tokens": 64}}
  })");
  ASSERT_TRUE(turn) << turn.error().message;
  EXPECT_EQ(turn->text, "Reading.");
  ASSERT_EQ(turn->tool_calls.size(), 2U);
  EXPECT_EQ(turn->tool_calls[0], (ToolCall{"call_1", "read_file", R"({"path":"x"})"}));
  EXPECT_EQ(turn->tool_calls[1], (ToolCall{"call_2", "grep", "{}"}));
  EXPECT_EQ(turn->stop_reason, StopReason::tool_use);
  EXPECT_EQ(turn->model, "gpt-test");
  EXPECT_EQ(turn->usage, (Usage{36, 20, 64, 0}));
}

TEST(OpenAIWire, FinishReasons) {
  OpenAiWire wire(openai_options());
  for (auto [text, reason] :
       {std::pair{"stop", StopReason::end_turn}, std::pair{"length", StopReason::max_tokens},
        std::pair{"content_filter", StopReason::refusal},
        std::pair{"tool_calls", StopReason::tool_use}, std::pair{"weird", StopReason::other}}) {
    json body = {{"choices", {{{"message", {{"content", "x"}}}, {"finish_reason", text}}}}};
    auto turn = wire.parse_response(body.dump());
    ASSERT_TRUE(turn) << turn.error().message;
    EXPECT_EQ(turn->stop_reason, reason) << text;
    EXPECT_EQ(turn->usage, Usage{});
  }
  // llama.cpp and others say "stop" even when they called tools.
  auto turn = wire.parse_response(R"({"choices":[{"finish_reason":"stop","message":{
      "content":null,"tool_calls":[{"id":"a","function":{"name":"n","arguments":"{}"}}]}}]})");
  ASSERT_TRUE(turn);
  EXPECT_EQ(turn->stop_reason, StopReason::tool_use);
  EXPECT_EQ(turn->text, "");
}

TEST(OpenAIWire, ParseResponseRejectsOtherShapes) {
  OpenAiWire wire(openai_options());
  for (const char* body : {"", "nope", "[]", R"({"choices": []})", R"({"choices": [{}]})"}) {
    auto turn = wire.parse_response(body);
    ASSERT_FALSE(turn) << body;
    EXPECT_EQ(turn.error().code, errc::provider_protocol) << body;
  }
}

TEST(OpenAIWire, ErrorMessages) {
  OpenAiWire wire(openai_options());
  EXPECT_EQ(wire.error_message(R"({"error":{"message":"Incorrect API key provided",
                                  "type":"invalid_request_error","code":"invalid_api_key"}})"),
            "invalid_request_error: Incorrect API key provided");
  EXPECT_EQ(wire.error_message(
                R"({"object":"error","message":"model not found","type":"NotFoundError"})"),
            "NotFoundError: model not found");
  EXPECT_EQ(wire.error_message(R"({"error":"model is loading"})"), "model is loading");
  EXPECT_EQ(wire.error_message("Bad Gateway"), "");
}

TEST(OpenAIWire, ContextOverflowShapes) {
  OpenAiWire wire(openai_options());
  struct Case {
    long status;
    const char* body;
    json details;
  };
  const Case cases[] = {
      {400,
       R"({"error":{"message":"This model's maximum context length is 128000 tokens. However, )"
       R"(you requested 140000 tokens (130000 in the messages, 10000 in the completion). )"
       R"(Please reduce the length of the messages or completion.","type":)"
       R"("invalid_request_error","param":"messages","code":"context_length_exceeded"}})",
       {{"prompt_tokens", 130000}, {"context_window", 128000}, {"status", 400}}},
      {400,
       R"({"object":"error","message":"This model's maximum context length is 4096 tokens. )"
       R"(However, you requested 5000 tokens in the messages, Please reduce the length of the )"
       R"(messages.","type":"BadRequestError","param":null,"code":400})",
       {{"prompt_tokens", 5000}, {"context_window", 4096}, {"status", 400}}},
      {400,
       R"({"error":{"message":"This model's maximum context length is 8192 tokens. However, )"
       R"(your request has 9000 input tokens. Please reduce the length of the input )"
       R"(messages.","type":"BadRequestError","param":null,"code":400}})",
       {{"prompt_tokens", 9000}, {"context_window", 8192}, {"status", 400}}},
      {400,
       R"({"error":{"code":400,"message":"request (4476 tokens) exceeds the available )"
       R"x(context size (4096 tokens)","type":"exceed_context_size_error",)x"
       R"("n_prompt_tokens":4476,"n_ctx":4096}})",
       {{"prompt_tokens", 4476}, {"context_window", 4096}, {"status", 400}}},
      {413, "", {{"status", 413}}},
  };
  for (const auto& c : cases) {
    auto error = wire.context_overflow(c.status, c.body);
    ASSERT_TRUE(error) << c.body;
    EXPECT_EQ(error->code, errc::context_overflow) << c.body;
    EXPECT_EQ(error->details, c.details) << c.body;
  }
  EXPECT_FALSE(wire.context_overflow(400, R"({"error":{"message":"Invalid 'max_tokens'",)"
                                          R"("type":"invalid_request_error","code":null}})"));
  EXPECT_FALSE(wire.context_overflow(400, "Bad Request"));
  EXPECT_FALSE(wire.context_overflow(500, ""));
}

TEST(OpenAIWire, ContextOverflowInAWholeAnswer) {
  // Some servers answer 200 with an error object.
  auto turn =
      OpenAiWire(openai_options())
          .parse_response(
              R"({"error":{"message":"This model's maximum context length is 128000 tokens. However, )"
              R"(your messages resulted in 130000 tokens.","code":"context_length_exceeded"}})");
  ASSERT_FALSE(turn);
  EXPECT_EQ(turn.error().code, errc::context_overflow);
  EXPECT_EQ(turn.error().details, json({{"prompt_tokens", 130000}, {"context_window", 128000}}));
}

std::string chunk(const json& value) {
  return "data: " + value.dump() + "\n\n";
}

std::string tool_stream() {
  std::string s;
  s += chunk(json::parse(
      R"({"id":"c","object":"chat.completion.chunk","model":"gpt-test","choices":[{"index":0,"delta":{"role":"assistant","content":""},"finish_reason":null}],"usage":null})"));
  s += chunk(json::parse(
      R"({"id":"c","model":"gpt-test","choices":[{"index":0,"delta":{"content":"Let me "},"finish_reason":null}]})"));
  s += ": keep-alive\n\n";
  s += chunk(json::parse(
      R"({"id":"c","model":"gpt-test","choices":[{"index":0,"delta":{"content":"look. é"},"finish_reason":null}]})"));
  s += chunk(json::parse(
      R"({"choices":[{"index":0,"delta":{"tool_calls":[{"index":0,"id":"call_x","type":"function","function":{"name":"read_file","arguments":""}}]}}]})"));
  s += chunk(json::parse(
      R"({"choices":[{"index":0,"delta":{"tool_calls":[{"index":0,"function":{"arguments":"{\"pa"}}]}}]})"));
  s += chunk(json::parse(
      R"({"choices":[{"index":0,"delta":{"tool_calls":[{"index":1,"type":"function","function":{"name":"grep","arguments":"{}"}}]}}]})"));
  s += chunk(json::parse(
      R"({"choices":[{"index":0,"delta":{"tool_calls":[{"index":0,"function":{"arguments":"th\":\"a.c\"}"}}]}}]})"));
  s += chunk(json::parse(R"({"choices":[{"index":0,"delta":{},"finish_reason":"tool_calls"}]})"));
  s += chunk(json::parse(
      R"({"choices":[],"usage":{"prompt_tokens":50,"completion_tokens":9,"prompt_tokens_details":{"cached_tokens":10}}})"));
  s += "data: [DONE]\n\n";
  return s;
}

TEST(OpenAIWire, StreamedToolCallsReassembledByIndex) {
  OpenAiWire wire(openai_options(true));
  auto outcome = run_stream(wire, {tool_stream()});
  ASSERT_TRUE(outcome.turn) << outcome.turn.error().message;
  EXPECT_TRUE(outcome.complete);
  const ModelTurn& turn = *outcome.turn;
  EXPECT_EQ(turn.text, "Let me look. é");
  EXPECT_EQ(outcome.streamed_text, turn.text);
  ASSERT_EQ(turn.tool_calls.size(), 2U);
  EXPECT_EQ(turn.tool_calls[0], (ToolCall{"call_x", "read_file", R"({"path":"a.c"})"}));
  EXPECT_EQ(turn.tool_calls[1], (ToolCall{"call_2", "grep", "{}"}));
  EXPECT_EQ(turn.stop_reason, StopReason::tool_use);
  EXPECT_EQ(turn.model, "gpt-test");
  EXPECT_EQ(turn.usage, (Usage{40, 9, 10, 0}));
}

TEST(OpenAIWire, StreamSplitAtEveryByteGivesTheSameTurn) {
  OpenAiWire wire(openai_options(true));
  std::string all_text = tool_stream();
  std::string_view all = all_text;
  auto whole = run_stream(wire, {all});
  ASSERT_TRUE(whole.turn);
  for (std::size_t split = 0; split <= all.size(); ++split) {
    auto outcome = run_stream(wire, {all.substr(0, split), all.substr(split)});
    ASSERT_TRUE(outcome.turn) << "split at " << split << ": " << outcome.turn.error().message;
    ASSERT_EQ(*outcome.turn, *whole.turn) << "split at " << split;
    ASSERT_EQ(outcome.streamed_text, whole.streamed_text) << "split at " << split;
  }
}

TEST(OpenAIWire, StreamWithoutUsageOrDoneButWithFinishReason) {
  OpenAiWire wire(openai_options(true));
  std::string s =
      chunk(json::parse(R"({"choices":[{"index":0,"delta":{"content":"hi"}}]})")) +
      chunk(json::parse(
          R"({"choices":[{"index":0,"delta":{"tool_calls":[{"index":0,"function":{"name":"ls","arguments":"{}"}}]},"finish_reason":"stop"}]})"));
  auto outcome = run_stream(wire, {s});
  ASSERT_TRUE(outcome.turn) << outcome.turn.error().message;
  EXPECT_FALSE(outcome.complete);
  EXPECT_EQ(outcome.turn->text, "hi");
  ASSERT_EQ(outcome.turn->tool_calls.size(), 1U);
  EXPECT_EQ(outcome.turn->tool_calls[0].id, "call_1");
  EXPECT_EQ(outcome.turn->stop_reason, StopReason::tool_use);
  EXPECT_EQ(outcome.turn->usage, Usage{});
}

TEST(OpenAIWire, TruncatedStreamIsRetryable) {
  OpenAiWire wire(openai_options(true));
  auto outcome = run_stream(
      wire, {chunk(json::parse(R"({"choices":[{"index":0,"delta":{"content":"hi"}}]})"))});
  ASSERT_FALSE(outcome.turn);
  EXPECT_EQ(outcome.turn.error().code, errc::provider_unavailable);
}

TEST(OpenAIWire, ErrorChunkMidStream) {
  OpenAiWire wire(openai_options(true));
  auto outcome = run_stream(
      wire, {chunk(json::parse(R"({"error":{"message":"overloaded","type":"server_error"}})"))});
  ASSERT_FALSE(outcome.turn);
  EXPECT_EQ(outcome.turn.error().code, errc::provider_unavailable);
  EXPECT_NE(outcome.turn.error().message.find("server_error: overloaded"), std::string::npos);
}

}  // namespace
}  // namespace loopr::llm
