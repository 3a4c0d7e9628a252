#include "llm/anthropic_wire.hpp"

#include <gtest/gtest.h>

#include "llm/provider.hpp"
#include "tests/llm/wire_stream.hpp"

namespace loopr::llm {
namespace {

using wire_test::run_stream;

using nlohmann::json;

WireOptions options(bool stream = false, bool caching = true) {
  return WireOptions{"https://api.anthropic.com/", "claude-test", stream, caching};
}

ModelRequest sample_request() {
  ModelRequest request;
  request.system = "You are careful.";
  request.max_tokens = 1000;
  request.tools = {
      {"read_file", "Reads a file", json::parse(R"({"type":"object","properties":{}})")},
      {"grep", "Searches", json::parse(R"({"type":"object"})")}};
  request.messages = {
      {Role::user, "Fix the bug", {}, {}},
      {Role::assistant,
       "Looking.",
       {{"toolu_1", "read_file", R"({"path":"a.c"})"}, {"toolu_2", "grep", "not json"}},
       {}},
      {Role::user,
       "",
       {},
       {{"toolu_1", "read_file", "int main;", false}, {"toolu_2", "grep", "bad args", true}}},
  };
  return request;
}

TEST(AnthropicWire, RequestBody) {
  AnthropicWire wire(options());
  json expected = json::parse(R"({
    "model": "claude-test",
    "max_tokens": 1000,
    "system": [{"type": "text", "text": "You are careful.", "cache_control": {"type": "ephemeral"}}],
    "tools": [
      {"name": "read_file", "description": "Reads a file",
       "input_schema": {"type": "object", "properties": {}}},
      {"name": "grep", "description": "Searches", "input_schema": {"type": "object"},
       "cache_control": {"type": "ephemeral"}}
    ],
    "messages": [
      {"role": "user", "content": [{"type": "text", "text": "Fix the bug"}]},
      {"role": "assistant", "content": [
        {"type": "text", "text": "Looking."},
        {"type": "tool_use", "id": "toolu_1", "name": "read_file", "input": {"path": "a.c"}},
        {"type": "tool_use", "id": "toolu_2", "name": "grep", "input": {}}
      ]},
      {"role": "user", "content": [
        {"type": "tool_result", "tool_use_id": "toolu_1", "content": "int main;", "is_error": false},
        {"type": "tool_result", "tool_use_id": "toolu_2", "content": "bad args", "is_error": true}
      ]}
    ]
  })");
  HttpRequest http = wire.build_request(sample_request(), nullptr);
  EXPECT_EQ(json::parse(http.body), expected);
  EXPECT_EQ(http.url, "https://api.anthropic.com/v1/messages");
  EXPECT_EQ(http.method, "POST");
}

TEST(AnthropicWire, NoCachingNoStreamAndModelOverride) {
  AnthropicWire wire(options(/*stream=*/true, /*caching=*/false));
  ModelRequest request = sample_request();
  request.model = "claude-other";
  json body = wire.request_body(request);
  EXPECT_EQ(body["model"], "claude-other");
  EXPECT_EQ(body["stream"], true);
  EXPECT_FALSE(body["system"][0].contains("cache_control"));
  for (const auto& tool : body["tools"])
    EXPECT_FALSE(tool.contains("cache_control"));
  EXPECT_EQ(body.dump().find("cache_control"), std::string::npos);

  ModelRequest bare;
  bare.messages = {{Role::user, "hi", {}, {}}};
  json minimal = AnthropicWire(options()).request_body(bare);
  EXPECT_FALSE(minimal.contains("system"));
  EXPECT_FALSE(minimal.contains("tools"));
  EXPECT_FALSE(minimal.contains("stream"));
}

TEST(AnthropicWire, Headers) {
  AnthropicWire wire(options());
  Secret key("sk-ant-xyz");
  auto headers = wire.build_request(sample_request(), &key).headers;
  auto find = [&](const std::string& name) -> std::optional<std::string> {
    for (const auto& [n, v] : headers) {
      if (n == name) return v;
    }
    return std::nullopt;
  };
  EXPECT_EQ(find("x-api-key"), "sk-ant-xyz");
  EXPECT_EQ(find("anthropic-version"), "2023-06-01");
  EXPECT_EQ(find("content-type"), "application/json");
  auto keyless = wire.build_request(sample_request(), nullptr).headers;
  for (const auto& [name, value] : keyless)
    EXPECT_NE(name, "x-api-key");
}

TEST(AnthropicWire, InvalidUtf8InAToolResultDoesNotThrow) {
  AnthropicWire wire(options());
  ModelRequest request;
  request.messages = {{Role::user, "bytes: \xff\xfe", {}, {}}};
  HttpRequest http = wire.build_request(request, nullptr);
  EXPECT_TRUE(json::accept(http.body));
}

TEST(AnthropicWire, ParseResponse) {
  AnthropicWire wire(options());
  auto turn = wire.parse_response(R"({
    "id": "msg_1", "type": "message", "role": "assistant", "model": "claude-test-1",
    "content": [
      {"type": "thinking", "thinking": "hmm", "signature": "x"},
      {"type": "text", "text": "I will read it."},
      {"type": "tool_use", "id": "toolu_9", "name": "read_file", "input": {"path": "b.c"}}
    ],
    "stop_reason": "tool_use", "stop_sequence": null,
    "usage": {"input_tokens": 12, "output_tokens": 34, "cache_read_input_tokens": 56,
              "cache_creation_input_tokens": 78}
  })");
  ASSERT_TRUE(turn) << turn.error().message;
  EXPECT_EQ(turn->text, "I will read it.");
  ASSERT_EQ(turn->tool_calls.size(), 1U);
  EXPECT_EQ(turn->tool_calls[0], (ToolCall{"toolu_9", "read_file", R"({"path":"b.c"})"}));
  EXPECT_EQ(turn->stop_reason, StopReason::tool_use);
  EXPECT_EQ(turn->model, "claude-test-1");
  EXPECT_EQ(turn->usage, (Usage{12, 34, 56, 78}));
}

TEST(AnthropicWire, ParseResponseStopReasons) {
  AnthropicWire wire(options());
  for (auto [text, reason] :
       {std::pair{"end_turn", StopReason::end_turn},
        std::pair{"max_tokens", StopReason::max_tokens},
        std::pair{"stop_sequence", StopReason::stop_sequence},
        std::pair{"refusal", StopReason::refusal}, std::pair{"pause_turn", StopReason::other}}) {
    json body = {{"content", json::array()}, {"stop_reason", text}};
    auto turn = wire.parse_response(body.dump());
    ASSERT_TRUE(turn);
    EXPECT_EQ(turn->stop_reason, reason) << text;
  }
}

TEST(AnthropicWire, ParseResponseRejectsOtherShapes) {
  AnthropicWire wire(options());
  for (const char* body : {"", "not json", "[]", R"({"content": 3})", R"({"id": "x"})"}) {
    auto turn = wire.parse_response(body);
    ASSERT_FALSE(turn) << body;
    EXPECT_EQ(turn.error().code, errc::provider_protocol) << body;
  }
}

TEST(AnthropicWire, ErrorMessageFromAnErrorBody) {
  AnthropicWire wire(options());
  EXPECT_EQ(
      wire.error_message(
          R"({"type":"error","error":{"type":"authentication_error","message":"invalid x-api-key"}})"),
      "authentication_error: invalid x-api-key");
  EXPECT_EQ(wire.error_message("<html>bad gateway</html>"), "");
  EXPECT_EQ(wire.error_message(R"({"other":1})"), "");
}

// A whole streamed tool-use turn, as the API sends it.
const std::string kToolStream =
    "event: message_start\n"
    "data: {\"type\":\"message_start\",\"message\":{\"id\":\"msg_1\",\"type\":\"message\","
    "\"role\":\"assistant\",\"content\":[],\"model\":\"claude-test-1\",\"stop_reason\":null,"
    "\"usage\":{\"input_tokens\":25,\"output_tokens\":1,\"cache_read_input_tokens\":100,"
    "\"cache_creation_input_tokens\":7}}}\n"
    "\n"
    "event: content_block_start\n"
    "data: {\"type\":\"content_block_start\",\"index\":0,\"content_block\":{\"type\":\"text\","
    "\"text\":\"\"}}\n"
    "\n"
    "event: ping\n"
    "data: {\"type\": \"ping\"}\n"
    "\n"
    "event: content_block_delta\n"
    "data: {\"type\":\"content_block_delta\",\"index\":0,\"delta\":{\"type\":\"text_delta\","
    "\"text\":\"Let me \"}}\n"
    "\n"
    "event: content_block_delta\n"
    "data: {\"type\":\"content_block_delta\",\"index\":0,\"delta\":{\"type\":\"text_delta\","
    "\"text\":\"look. \xc3\xa9\"}}\n"
    "\n"
    "event: content_block_stop\n"
    "data: {\"type\":\"content_block_stop\",\"index\":0}\n"
    "\n"
    "event: content_block_start\n"
    "data: {\"type\":\"content_block_start\",\"index\":1,\"content_block\":{\"type\":\"tool_use\","
    "\"id\":\"toolu_7\",\"name\":\"read_file\",\"input\":{}}}\n"
    "\n"
    "event: content_block_delta\n"
    "data: {\"type\":\"content_block_delta\",\"index\":1,\"delta\":{\"type\":\"input_json_delta\","
    "\"partial_json\":\"\"}}\n"
    "\n"
    "event: content_block_delta\n"
    "data: {\"type\":\"content_block_delta\",\"index\":1,\"delta\":{\"type\":\"input_json_delta\","
    "\"partial_json\":\"{\\\"path\\\": \\\"a\"}}\n"
    "\n"
    "event: content_block_delta\n"
    "data: {\"type\":\"content_block_delta\",\"index\":1,\"delta\":{\"type\":\"input_json_delta\","
    "\"partial_json\":\".c\\\"}\"}}\n"
    "\n"
    "event: content_block_stop\n"
    "data: {\"type\":\"content_block_stop\",\"index\":1}\n"
    "\n"
    "event: message_delta\n"
    "data: {\"type\":\"message_delta\",\"delta\":{\"stop_reason\":\"tool_use\","
    "\"stop_sequence\":null},\"usage\":{\"output_tokens\":89}}\n"
    "\n"
    "event: message_stop\n"
    "data: {\"type\":\"message_stop\"}\n"
    "\n";

TEST(AnthropicWire, StreamedToolUseTurn) {
  AnthropicWire wire(options(true));
  auto outcome = run_stream(wire, {kToolStream});
  ASSERT_TRUE(outcome.turn) << outcome.turn.error().message;
  EXPECT_TRUE(outcome.complete);
  const ModelTurn& turn = *outcome.turn;
  EXPECT_EQ(turn.text, "Let me look. \xc3\xa9");
  EXPECT_EQ(outcome.streamed_text, turn.text);
  ASSERT_EQ(turn.tool_calls.size(), 1U);
  EXPECT_EQ(turn.tool_calls[0], (ToolCall{"toolu_7", "read_file", R"({"path": "a.c"})"}));
  EXPECT_EQ(turn.stop_reason, StopReason::tool_use);
  EXPECT_EQ(turn.model, "claude-test-1");
  EXPECT_EQ(turn.usage, (Usage{25, 89, 100, 7}));
}

TEST(AnthropicWire, StreamSplitAtEveryByteGivesTheSameTurn) {
  AnthropicWire wire(options(true));
  auto whole = run_stream(wire, {kToolStream});
  ASSERT_TRUE(whole.turn);
  std::string_view all = kToolStream;
  for (std::size_t split = 0; split <= all.size(); ++split) {
    auto outcome = run_stream(wire, {all.substr(0, split), all.substr(split)});
    ASSERT_TRUE(outcome.turn) << "split at " << split << ": " << outcome.turn.error().message;
    ASSERT_EQ(*outcome.turn, *whole.turn) << "split at " << split;
    ASSERT_EQ(outcome.streamed_text, whole.streamed_text) << "split at " << split;
  }
  // And one byte at a time.
  std::vector<std::string_view> bytes;
  for (std::size_t i = 0; i < all.size(); ++i)
    bytes.push_back(all.substr(i, 1));
  auto outcome = run_stream(wire, bytes);
  ASSERT_TRUE(outcome.turn);
  EXPECT_EQ(*outcome.turn, *whole.turn);
}

TEST(AnthropicWire, ToolUseWithoutDeltasHasEmptyObjectArguments) {
  AnthropicWire wire(options(true));
  std::string stream =
      "event: content_block_start\n"
      "data: {\"type\":\"content_block_start\",\"index\":0,\"content_block\":{\"type\":"
      "\"tool_use\",\"id\":\"t\",\"name\":\"list\",\"input\":{}}}\n\n"
      "event: message_stop\ndata: {\"type\":\"message_stop\"}\n\n";
  auto outcome = run_stream(wire, {stream});
  ASSERT_TRUE(outcome.turn);
  ASSERT_EQ(outcome.turn->tool_calls.size(), 1U);
  EXPECT_EQ(outcome.turn->tool_calls[0].arguments, "{}");
  EXPECT_EQ(outcome.turn->stop_reason, StopReason::tool_use);
}

TEST(AnthropicWire, ErrorEventOverloadedIsRetryable) {
  AnthropicWire wire(options(true));
  std::string stream =
      "event: message_start\ndata: {\"type\":\"message_start\",\"message\":{\"usage\":{}}}\n\n"
      "event: error\n"
      "data: {\"type\":\"error\",\"error\":{\"type\":\"overloaded_error\",\"message\":"
      "\"Overloaded\"}}\n\n";
  auto outcome = run_stream(wire, {stream});
  ASSERT_FALSE(outcome.turn);
  EXPECT_EQ(outcome.turn.error().code, errc::provider_unavailable);
  EXPECT_NE(outcome.turn.error().message.find("overloaded_error: Overloaded"), std::string::npos);

  std::string refused =
      "event: error\n"
      "data: {\"type\":\"error\",\"error\":{\"type\":\"invalid_request_error\",\"message\":"
      "\"bad\"}}\n\n";
  auto other = run_stream(wire, {refused});
  ASSERT_FALSE(other.turn);
  EXPECT_EQ(other.turn.error().code, errc::provider_request);
}

TEST(AnthropicWire, TruncatedStreamIsRetryable) {
  AnthropicWire wire(options(true));
  std::string_view all = kToolStream;
  auto cut = all.find("event: message_stop");
  auto outcome = run_stream(wire, {all.substr(0, cut)});
  EXPECT_FALSE(outcome.complete);
  ASSERT_FALSE(outcome.turn);
  EXPECT_EQ(outcome.turn.error().code, errc::provider_unavailable);
}

TEST(AnthropicWire, BadEventDataIsAProtocolError) {
  AnthropicWire wire(options(true));
  auto outcome = run_stream(wire, {"event: content_block_delta\ndata: {oops\n\n"});
  ASSERT_FALSE(outcome.turn);
  EXPECT_EQ(outcome.turn.error().code, errc::provider_protocol);
}

}  // namespace
}  // namespace loopr::llm
