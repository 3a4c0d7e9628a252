#include "llm/anthropic_wire.hpp"

#include <gtest/gtest.h>

#include "llm/provider.hpp"
#include "tests/llm/wire_stream.hpp"

namespace loopr::llm {
namespace {

using wire_test::run_stream;

using nlohmann::json;

WireOptions options(bool stream = false, bool caching = true) {
  WireOptions out;
  out.base_url = "https://api.anthropic.com/";
  out.model = "claude-test";
  out.stream = stream;
  out.prompt_caching = caching;
  return out;
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
      {"role": "user", "content": [{"type": "text", "text": "Fix the bug",
                                    "cache_control": {"type": "ephemeral"}}]},
      {"role": "assistant", "content": [
        {"type": "text", "text": "Looking."},
        {"type": "tool_use", "id": "toolu_1", "name": "read_file", "input": {"path": "a.c"}},
        {"type": "tool_use", "id": "toolu_2", "name": "grep", "input": {}}
      ]},
      {"role": "user", "content": [
        {"type": "tool_result", "tool_use_id": "toolu_1", "content": "int main;", "is_error": false},
        {"type": "tool_result", "tool_use_id": "toolu_2", "content": "bad args", "is_error": true,
         "cache_control": {"type": "ephemeral"}}
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

// Every cache_control in `value`, as JSON pointers.
std::vector<std::string> breakpoints(const json& value, const std::string& at = "") {
  std::vector<std::string> out;
  if (value.is_object()) {
    for (const auto& [key, member] : value.items()) {
      if (key == "cache_control") {
        EXPECT_EQ(member, json({{"type", "ephemeral"}})) << at;
        out.push_back(at);
      } else {
        auto inner = breakpoints(member, at + "/" + key);
        out.insert(out.end(), inner.begin(), inner.end());
      }
    }
  } else if (value.is_array()) {
    for (std::size_t i = 0; i < value.size(); ++i) {
      auto inner = breakpoints(value[i], at + "/" + std::to_string(i));
      out.insert(out.end(), inner.begin(), inner.end());
    }
  }
  return out;
}

// A loop's conversation after `turns` model turns: each turn is an
// assistant message with text and `calls` tool calls, answered by a user
// message with their results.
ModelRequest conversation(int turns, int calls) {
  ModelRequest request = sample_request();
  request.messages = {{Role::user, "Fix the bug", {}, {}}};
  for (int turn = 0; turn < turns; ++turn) {
    Message assistant{Role::assistant, "Turn " + std::to_string(turn), {}, {}};
    Message results{Role::user, "", {}, {}};
    for (int call = 0; call < calls; ++call) {
      std::string id = "toolu_" + std::to_string(turn) + "_" + std::to_string(call);
      assistant.tool_calls.push_back({id, "grep", R"({"pattern":"x"})"});
      results.tool_results.push_back({id, "grep", "match " + id, false});
    }
    request.messages.push_back(std::move(assistant));
    request.messages.push_back(std::move(results));
  }
  return request;
}

TEST(AnthropicWire, FirstCallMarksSystemLastToolAndTheOnlyMessage) {
  ModelRequest request = sample_request();
  request.messages = {{Role::user, "Fix the bug", {}, {}}};
  json body = AnthropicWire(options()).request_body(request);
  EXPECT_EQ(breakpoints(body),
            (std::vector<std::string>{"/messages/0/content/0", "/system/0", "/tools/1"}));
}

TEST(AnthropicWire, LaterCallsMarkThePreviousUserMessageAndTheLast) {
  // Three turns of 12 tool calls: the last turn adds 25 blocks, more than
  // the API looks back over from the last breakpoint.
  json body = AnthropicWire(options()).request_body(conversation(3, 12));
  ASSERT_EQ(body["messages"].size(), 7U);
  EXPECT_EQ(breakpoints(body),
            (std::vector<std::string>{"/messages/4/content/11", "/messages/6/content/11",
                                      "/system/0", "/tools/1"}));
  // The previous request's last message is this one's message 4, marked at
  // the same block: its prefix is read from the cache.
  json previous = AnthropicWire(options()).request_body(conversation(2, 12));
  EXPECT_EQ(breakpoints(previous),
            (std::vector<std::string>{"/messages/2/content/11", "/messages/4/content/11",
                                      "/system/0", "/tools/1"}));
  EXPECT_EQ(body["messages"][4], previous["messages"][4]);
}

TEST(AnthropicWire, LastMessageFromTheAssistantStillMarksThePreviousUserMessage) {
  ModelRequest request = conversation(1, 1);
  request.messages.push_back({Role::assistant, "Done.", {}, {}});
  json body = AnthropicWire(options()).request_body(request);
  EXPECT_EQ(breakpoints(body),
            (std::vector<std::string>{"/messages/2/content/0", "/messages/3/content/0", "/system/0",
                                      "/tools/1"}));
}

TEST(AnthropicWire, WithoutSystemAndToolsOnlyTheMessagesAreMarked) {
  ModelRequest request = conversation(2, 1);
  request.system.clear();
  request.tools.clear();
  json body = AnthropicWire(options()).request_body(request);
  EXPECT_EQ(breakpoints(body),
            (std::vector<std::string>{"/messages/2/content/0", "/messages/4/content/0"}));
}

TEST(AnthropicWire, NeverMoreThanFourBreakpoints) {
  AnthropicWire wire(options());
  for (int turns = 0; turns < 30; ++turns) {
    ModelRequest request = conversation(turns, 1 + turns % 5);
    json body = wire.request_body(request);
    auto marks = breakpoints(body);
    EXPECT_LE(marks.size(), 4U) << turns;
    EXPECT_EQ(marks.size(), turns == 0 ? 3U : 4U) << turns;
    const std::size_t last = body["messages"].size() - 1;
    EXPECT_TRUE(body["messages"][last]["content"].back().contains("cache_control")) << turns;
    for (const auto& message : body["messages"]) {
      if (message["role"] == "assistant") {
        EXPECT_EQ(message.dump().find("cache_control"), std::string::npos) << turns;
      }
    }
  }
}

TEST(AnthropicWire, AnEmptyTextBlockIsNeverMarked) {
  ModelRequest request = sample_request();
  request.messages = {{Role::user, "Go on", {}, {}}, {Role::assistant, "", {}, {}}};
  json body = AnthropicWire(options()).request_body(request);
  EXPECT_EQ(body["messages"][1]["content"], json::parse(R"([{"type": "text", "text": ""}])"));
  EXPECT_EQ(breakpoints(body),
            (std::vector<std::string>{"/messages/0/content/0", "/system/0", "/tools/1"}));
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

TEST(AnthropicWire, ContextOverflowShapes) {
  AnthropicWire wire(options());
  auto error_body = [](const std::string& type, const std::string& message) {
    return json{{"type", "error"}, {"error", {{"type", type}, {"message", message}}}}.dump();
  };
  auto too_long = wire.context_overflow(
      400,
      error_body("invalid_request_error", "prompt is too long: 210000 tokens > 200000 maximum"));
  ASSERT_TRUE(too_long);
  EXPECT_EQ(too_long->code, errc::context_overflow);
  EXPECT_EQ(too_long->details,
            json({{"prompt_tokens", 210000}, {"context_window", 200000}, {"status", 400}}));
  EXPECT_NE(too_long->message.find("context overflow"), std::string::npos) << too_long->message;
  EXPECT_NE(too_long->message.find("prompt is too long"), std::string::npos);

  auto with_output = wire.context_overflow(
      400, error_body("invalid_request_error",
                      "input length and `max_tokens` exceed context limit: 150000 + 64000 > "
                      "200000, decrease input length or `max_tokens` and try again"));
  ASSERT_TRUE(with_output);
  EXPECT_EQ(with_output->details,
            json({{"prompt_tokens", 150000}, {"context_window", 200000}, {"status", 400}}));

  auto too_large = wire.context_overflow(
      413, error_body("request_too_large", "Request exceeds the maximum allowed number of bytes."));
  ASSERT_TRUE(too_large);
  EXPECT_EQ(too_large->details, json({{"status", 413}}));
  ASSERT_TRUE(wire.context_overflow(413, "<html>Request Entity Too Large</html>"));

  EXPECT_FALSE(wire.context_overflow(400, error_body("invalid_request_error", "bad")));
  EXPECT_FALSE(wire.context_overflow(529, error_body("overloaded_error", "Overloaded")));
  EXPECT_FALSE(wire.context_overflow(400, "not json"));
}

TEST(AnthropicWire, ContextOverflowErrorEvent) {
  AnthropicWire wire(options(true));
  auto outcome = run_stream(
      wire, {"event: message_start\ndata: {\"type\":\"message_start\",\"message\":{}}\n\n"
             "event: error\ndata: {\"type\":\"error\",\"error\":{\"type\":"
             "\"invalid_request_error\",\"message\":\"prompt is too long: 201000 tokens > "
             "200000 maximum\"}}\n\n"});
  ASSERT_FALSE(outcome.turn);
  EXPECT_EQ(outcome.turn.error().code, errc::context_overflow);
  EXPECT_EQ(outcome.turn.error().details,
            json({{"prompt_tokens", 201000}, {"context_window", 200000}}));
  auto whole =
      wire.parse_response(R"({"type":"error","error":{"type":"invalid_request_error",)"
                          R"("message":"prompt is too long: 201000 tokens > 200000 maximum"}})");
  ASSERT_FALSE(whole);
  EXPECT_EQ(whole.error().code, errc::context_overflow);
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
