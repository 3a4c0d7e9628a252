// ModelApiServer: the token count, both context-window refusals, the
// malformed-request 400s, Anthropic's prompt-cache accounting (rolling
// breakpoint, changed prefix, the 20-block lookback, the 1024-token floor,
// expiry) and OpenAI's automatic prefix cache, then both wire formats,
// streamed and whole, decoded by loopr's own HttpProvider over HTTP.
#include "tests/support/model_api_server.hpp"

#include <gtest/gtest.h>

#include <asio/co_spawn.hpp>
#include <asio/io_context.hpp>
#include <asio/steady_timer.hpp>
#include <optional>

#include "llm/http_provider.hpp"
#include "llm/make_provider.hpp"

namespace loopr::test {
namespace {

using nlohmann::json;

std::string text_of(std::size_t bytes, char fill = 'x') {
  return std::string(bytes, fill);
}

// The body of the HTTP reply ScriptedReply::json made (status line, head, body).
struct Answer {
  int status = 0;
  json body;
  std::string raw;  // all the bytes, for streams
  std::size_t writes = 0;
};

Answer post(ModelApiServer& server, const std::string& path, const json& body) {
  RecordedRequest request{"POST", path, {{"content-type", "application/json"}}, body.dump()};
  ScriptedReply reply = server.answer(request);
  Answer out;
  for (const auto& step : reply.steps) {
    if (step.kind != HttpStep::Kind::write) continue;
    out.raw += step.bytes;
    ++out.writes;
  }
  out.status = std::stoi(out.raw.substr(9, 3));
  const auto head_end = out.raw.find("\r\n\r\n");
  const std::string body_text = out.raw.substr(head_end + 4);
  if (out.raw.find("text/event-stream") == std::string::npos) out.body = json::parse(body_text);
  return out;
}

ModelPolicy answer_with_text(const std::string& text) {
  return [text](const ModelCall&) { return ModelReply::say(text); };
}

json ephemeral() {
  return {{"type", "ephemeral"}};
}

// ---- counting ----

TEST(ModelApiCount, CeilOfUtf8BytesOverFour) {
  EXPECT_EQ(count_tokens(""), 0);
  EXPECT_EQ(count_tokens("a"), 1);
  EXPECT_EQ(count_tokens("abcd"), 1);
  EXPECT_EQ(count_tokens("abcde"), 2);
  EXPECT_EQ(count_tokens("\xc3\xa9\xc3\xa9\xc3\xa9"), 2);  // "ééé": 6 bytes
}

TEST(ModelApiCount, AnthropicRequestCountsEachPieceOfToolsSystemAndMessages) {
  const json tool = {
      {"name", "read_file"}, {"description", "Reads."}, {"input_schema", {{"type", "object"}}}};
  json marked_tool = tool;
  marked_tool["cache_control"] = ephemeral();
  const json input = {{"path", "a.txt"}};
  const json body = {
      {"model", "m"},
      {"max_tokens", 100},
      {"tools", {marked_tool}},
      {"system", {{{"type", "text"}, {"text", text_of(10)}, {"cache_control", ephemeral()}}}},
      {"messages",
       {{{"role", "user"}, {"content", text_of(7)}},
        {{"role", "assistant"},
         {"content",
          {{{"type", "text"}, {"text", text_of(5)}},
           {{"type", "tool_use"}, {"id", "toolu_1"}, {"name", "read_file"}, {"input", input}}}}},
        {{"role", "user"},
         {"content",
          {{{"type", "tool_result"},
            {"tool_use_id", "toolu_1"},
            {"content", {{{"type", "text"}, {"text", text_of(9)}}}}}}}}}}};
  const auto parsed = parse_anthropic_request(body.dump());
  ASSERT_TRUE(parsed.prompt) << parsed.error.message;
  const std::int64_t expected = count_tokens(tool.dump()) + count_tokens(text_of(10)) +
                                count_tokens(text_of(7)) + count_tokens(text_of(5)) +
                                count_tokens("read_file" + input.dump()) + count_tokens(text_of(9));
  EXPECT_EQ(parsed.prompt->input_tokens, expected);
  EXPECT_EQ(parsed.prompt->blocks.size(), 6u);
  EXPECT_EQ(parsed.prompt->breakpoints, 2u);
  EXPECT_EQ(parsed.prompt->tools, std::vector<std::string>{"read_file"});
  ASSERT_EQ(parsed.prompt->messages.size(), 3u);
  EXPECT_EQ(parsed.prompt->messages[2].blocks[0].kind, CallBlock::Kind::tool_result);
  EXPECT_EQ(parsed.prompt->messages[2].blocks[0].text, text_of(9));
}

TEST(ModelApiCount, OpenAiRequestCountsToolsAndOnePiecePerMessage) {
  const json tool = {{"type", "function"},
                     {"function", {{"name", "grep"}, {"parameters", {{"type", "object"}}}}}};
  const json body = {
      {"model", "m"},
      {"messages",
       {{{"role", "system"}, {"content", text_of(12)}},
        {{"role", "user"}, {"content", text_of(3)}},
        {{"role", "assistant"},
         {"content", nullptr},
         {"tool_calls",
          {{{"id", "call_1"},
            {"type", "function"},
            {"function", {{"name", "grep"}, {"arguments", "{\"pattern\":\"x\"}"}}}}}}},
        {{"role", "tool"}, {"tool_call_id", "call_1"}, {"content", text_of(21)}}}},
      {"tools", {tool}}};
  const auto parsed = parse_openai_request(body.dump());
  ASSERT_TRUE(parsed.prompt) << parsed.error.message;
  EXPECT_EQ(parsed.prompt->input_tokens,
            count_tokens(tool.dump()) + count_tokens(text_of(12)) + count_tokens(text_of(3)) +
                count_tokens("grep{\"pattern\":\"x\"}") + count_tokens(text_of(21)));
  EXPECT_EQ(parsed.prompt->system, text_of(12));
  ASSERT_EQ(parsed.prompt->messages.size(), 3u);
  EXPECT_EQ(parsed.prompt->messages[1].blocks[0].kind, CallBlock::Kind::tool_use);
  EXPECT_EQ(parsed.prompt->messages[1].blocks[0].input, json({{"pattern", "x"}}));
  EXPECT_EQ(parsed.prompt->messages[2].role, "user");
  EXPECT_EQ(parsed.prompt->messages[2].blocks[0].id, "call_1");
}

// ---- context window ----

json anthropic_request(const std::string& user_text, std::int64_t max_tokens) {
  return {{"model", "claude-test"},
          {"max_tokens", max_tokens},
          {"messages", {{{"role", "user"}, {"content", user_text}}}}};
}

TEST(ModelApiWindow, AnthropicPromptTooLong) {
  ModelApiOptions options;
  options.context_window = 1000;
  ModelApiServer server(answer_with_text("no"), options);
  const Answer answer = post(server, "/v1/messages", anthropic_request(text_of(4004), 10));
  EXPECT_EQ(answer.status, 400);
  EXPECT_EQ(answer.body["type"], "error");
  EXPECT_EQ(answer.body["error"],
            json({{"type", "invalid_request_error"},
                  {"message", "prompt is too long: 1001 tokens > 1000 maximum"}}));
  EXPECT_TRUE(answer.body["request_id"].get<std::string>().starts_with("req_"));
  const auto served = server.requests();
  ASSERT_EQ(served.size(), 1u);
  EXPECT_TRUE(served[0].refused);
  EXPECT_EQ(served[0].input_tokens, 1001);
  EXPECT_EQ(served[0].usage.input_tokens, 0);
}

TEST(ModelApiWindow, AnthropicInputPlusMaxTokensOverTheWindow) {
  ModelApiOptions options;
  options.context_window = 1000;
  ModelApiServer server(answer_with_text("no"), options);
  const Answer answer = post(server, "/v1/messages", anthropic_request(text_of(3600), 200));
  EXPECT_EQ(answer.status, 400);
  EXPECT_EQ(answer.body["error"]["message"],
            "input length and `max_tokens` exceed context limit: 900 + 200 > 1000, decrease "
            "input length or `max_tokens` and try again");
  // Exactly at the window fits.
  const Answer fits = post(server, "/v1/messages", anthropic_request(text_of(3600), 100));
  EXPECT_EQ(fits.status, 200);
}

TEST(ModelApiWindow, OpenAiContextLengthExceeded) {
  ModelApiOptions options;
  options.context_window = 1000;
  ModelApiServer server(answer_with_text("no"), options);
  const json body = {{"model", "gpt-test"},
                     {"messages", {{{"role", "user"}, {"content", text_of(4004)}}}}};
  const Answer answer = post(server, "/v1/chat/completions", body);
  EXPECT_EQ(answer.status, 400);
  EXPECT_EQ(answer.body,
            json({{"error",
                   {{"message",
                     "This model's maximum context length is 1000 tokens. However, your messages "
                     "resulted in 1001 tokens. Please reduce the length of the messages."},
                    {"type", "invalid_request_error"},
                    {"param", "messages"},
                    {"code", "context_length_exceeded"}}}}));
  json with_completion = body;
  with_completion["messages"][0]["content"] = text_of(3600);
  with_completion["max_tokens"] = 200;
  const Answer both = post(server, "/v1/chat/completions", with_completion);
  EXPECT_EQ(both.status, 400);
  EXPECT_EQ(both.body["error"]["code"], "context_length_exceeded");
  EXPECT_NE(both.body["error"]["message"].get<std::string>().find(
                "you requested 1100 tokens (900 in the messages, 200 in the completion)"),
            std::string::npos);
}

// ---- malformed requests ----

TEST(ModelApiMalformed, AnthropicMissingMaxTokens) {
  ModelApiServer server(answer_with_text("no"));
  json body = anthropic_request("hi", 10);
  body.erase("max_tokens");
  const Answer answer = post(server, "/v1/messages", body);
  EXPECT_EQ(answer.status, 400);
  EXPECT_EQ(answer.body["error"]["message"], "max_tokens: Field required");
}

TEST(ModelApiMalformed, AnthropicToolResultWithoutItsToolUse) {
  ModelApiServer server(answer_with_text("no"));
  const json body = {
      {"model", "m"},
      {"max_tokens", 10},
      {"messages",
       {{{"role", "user"}, {"content", "hi"}},
        {{"role", "assistant"},
         {"content",
          {{{"type", "tool_use"}, {"id", "toolu_A"}, {"name", "x"}, {"input", json::object()}}}}},
        {{"role", "user"},
         {"content", {{{"type", "tool_result"}, {"tool_use_id", "toolu_B"}, {"content", "r"}}}}}}}};
  const Answer answer = post(server, "/v1/messages", body);
  EXPECT_EQ(answer.status, 400);
  EXPECT_EQ(answer.body["error"]["message"],
            "messages.2.content.0: unexpected `tool_use_id` found in `tool_result` blocks: "
            "toolu_B. Each `tool_result` block must have a corresponding `tool_use` block in the "
            "previous message.");
}

TEST(ModelApiMalformed, AnthropicMoreThanFourCacheBreakpoints) {
  ModelApiServer server(answer_with_text("no"));
  json content = json::array();
  for (int i = 0; i < 5; ++i)
    content.push_back({{"type", "text"}, {"text", "t"}, {"cache_control", ephemeral()}});
  const json body = {
      {"model", "m"}, {"max_tokens", 10}, {"messages", {{{"role", "user"}, {"content", content}}}}};
  const Answer answer = post(server, "/v1/messages", body);
  EXPECT_EQ(answer.status, 400);
  EXPECT_EQ(answer.body["error"]["message"],
            "A maximum of 4 blocks with cache_control may be provided. Found 5.");
}

TEST(ModelApiMalformed, OpenAiToolMessageWithoutToolCalls) {
  ModelApiServer server(answer_with_text("no"));
  const json body = {{"model", "m"},
                     {"messages",
                      {{{"role", "user"}, {"content", "hi"}},
                       {{"role", "tool"}, {"tool_call_id", "call_1"}, {"content", "r"}}}}};
  const Answer answer = post(server, "/v1/chat/completions", body);
  EXPECT_EQ(answer.status, 400);
  EXPECT_EQ(answer.body["error"]["param"], "messages.[1].role");
  EXPECT_EQ(answer.body["error"]["code"], nullptr);
}

// ---- Anthropic prompt caching ----

// A loop's request: a small tool list (its breakpoint's prefix is under
// 1024 tokens), a system prompt of `system_bytes` (breakpoint), then the
// conversation with a rolling breakpoint on its last block.
json loop_request(const std::string& system, const json& messages) {
  json last = messages;
  json& tail = last.back()["content"];
  tail.back()["cache_control"] = ephemeral();
  return {{"model", "claude-test"},
          {"max_tokens", 1000},
          {"tools",
           {{{"name", "read_file"},
             {"description", "Reads a file."},
             {"input_schema", {{"type", "object"}}},
             {"cache_control", ephemeral()}}}},
          {"system", {{{"type", "text"}, {"text", system}, {"cache_control", ephemeral()}}}},
          {"messages", last}};
}

json user_text(const std::string& text) {
  return {{"role", "user"}, {"content", {{{"type", "text"}, {"text", text}}}}};
}

json assistant_call(const std::string& id) {
  return {
      {"role", "assistant"},
      {"content",
       {{{"type", "tool_use"}, {"id", id}, {"name", "read_file"}, {"input", {{"path", "a"}}}}}}};
}

json user_result(const std::string& id, const std::string& text) {
  return {{"role", "user"},
          {"content", {{{"type", "tool_result"}, {"tool_use_id", id}, {"content", text}}}}};
}

ModelPolicy read_forever() {
  return [](const ModelCall&) { return ModelReply::call("read_file", {{"path", "a"}}); };
}

TEST(ModelApiCache, ARollingBreakpointReadsThePreviousRequestsPrefix) {
  ModelApiServer server(read_forever());
  const std::string system = text_of(8000);  // 2000 tokens
  const json first_messages = json::array({user_text(text_of(2000))});
  const json first = loop_request(system, first_messages);
  const auto first_prompt = parse_anthropic_request(first.dump()).prompt;
  ASSERT_TRUE(first_prompt);
  ASSERT_EQ(post(server, "/v1/messages", first).status, 200);

  json second_messages = first_messages;
  second_messages.push_back(assistant_call("toolu_1"));
  second_messages.push_back(user_result("toolu_1", text_of(4000)));
  const json second = loop_request(system, second_messages);
  const auto second_prompt = parse_anthropic_request(second.dump()).prompt;
  ASSERT_TRUE(second_prompt);
  ASSERT_EQ(post(server, "/v1/messages", second).status, 200);

  const auto served = server.requests();
  ASSERT_EQ(served.size(), 2u);
  // First: nothing to read; everything up to the last breakpoint is written.
  EXPECT_EQ(served[0].usage.cache_read_tokens, 0);
  EXPECT_EQ(served[0].usage.cache_write_tokens, first_prompt->input_tokens);
  EXPECT_EQ(served[0].usage.input_tokens, 0);
  // Second: the whole first prompt is read (its last block lost its
  // cache_control, which the key ignores); the new turn is written.
  EXPECT_EQ(served[1].usage.cache_read_tokens, first_prompt->input_tokens);
  EXPECT_EQ(served[1].usage.cache_write_tokens,
            second_prompt->input_tokens - first_prompt->input_tokens);
  EXPECT_EQ(served[1].usage.input_tokens, 0);
  EXPECT_EQ(served[1].usage.cache_read_tokens + served[1].usage.cache_write_tokens +
                served[1].usage.input_tokens,
            served[1].input_tokens);
}

TEST(ModelApiCache, AChangedSystemPromptReadsNothing) {
  ModelApiServer server(read_forever());
  const json messages = json::array({user_text(text_of(2000))});
  ASSERT_EQ(post(server, "/v1/messages", loop_request(text_of(8000, 'a'), messages)).status, 200);
  ASSERT_EQ(post(server, "/v1/messages", loop_request(text_of(8000, 'b'), messages)).status, 200);
  const auto served = server.requests();
  EXPECT_EQ(served[1].usage.cache_read_tokens, 0);
  EXPECT_EQ(served[1].usage.cache_write_tokens, served[1].input_tokens);
}

TEST(ModelApiCache, UnchangedRequestReadsAllAndExpiresAfterFiveMinutes) {
  ModelApiServer server(read_forever());
  const json request = loop_request(text_of(8000), json::array({user_text("hello")}));
  ASSERT_EQ(post(server, "/v1/messages", request).status, 200);
  server.advance_clock(std::chrono::seconds(299));
  ASSERT_EQ(post(server, "/v1/messages", request).status, 200);  // renews the entry
  server.advance_clock(std::chrono::seconds(299));
  ASSERT_EQ(post(server, "/v1/messages", request).status, 200);
  server.advance_clock(std::chrono::seconds(301));
  ASSERT_EQ(post(server, "/v1/messages", request).status, 200);
  const auto served = server.requests();
  EXPECT_EQ(served[1].usage.cache_read_tokens, served[1].input_tokens);
  EXPECT_EQ(served[1].usage.cache_write_tokens, 0);
  EXPECT_EQ(served[2].usage.cache_read_tokens, served[2].input_tokens);
  EXPECT_EQ(served[3].usage.cache_read_tokens, 0);
  EXPECT_EQ(served[3].usage.cache_write_tokens, served[3].input_tokens);
}

TEST(ModelApiCache, PrefixesUnder1024TokensAreNotCached) {
  ModelApiServer server(read_forever());
  // 4 + ~3 + 750 + 250 tokens: every breakpoint's prefix is under 1024.
  const json request = loop_request(text_of(3000), json::array({user_text(text_of(1000))}));
  const auto prompt = parse_anthropic_request(request.dump()).prompt;
  ASSERT_TRUE(prompt);
  ASSERT_LT(prompt->input_tokens, 1024);
  ASSERT_EQ(post(server, "/v1/messages", request).status, 200);
  ASSERT_EQ(post(server, "/v1/messages", request).status, 200);
  for (const auto& served : server.requests()) {
    EXPECT_EQ(served.usage.cache_read_tokens, 0);
    EXPECT_EQ(served.usage.cache_write_tokens, 0);
    EXPECT_EQ(served.usage.input_tokens, prompt->input_tokens);
  }
}

// One user message of 30 small blocks after a 2000-token system block
// (block 0): message block j is prompt block j + 1. Only `breakpoint` is marked.
json thirty_blocks(std::size_t breakpoint) {
  json content = json::array();
  for (std::size_t j = 0; j < 30; ++j) {
    json block = {{"type", "text"}, {"text", "block " + std::to_string(j) + " " + text_of(40)}};
    if (j + 1 == breakpoint) block["cache_control"] = ephemeral();
    content.push_back(block);
  }
  return {{"model", "claude-test"},
          {"max_tokens", 100},
          {"system", text_of(8000)},
          {"messages", {{{"role", "user"}, {"content", content}}}}};
}

TEST(ModelApiCache, TheLookbackFindsAnEntryTwentyBlocksBackButNotTwentyOne) {
  std::int64_t prefix_5 = 0;
  {
    const auto prompt = parse_anthropic_request(thirty_blocks(5).dump()).prompt;
    ASSERT_TRUE(prompt);
    for (std::size_t k = 0; k <= 5; ++k)
      prefix_5 += prompt->blocks[k].tokens;
  }
  ModelApiServer near(read_forever());
  ASSERT_EQ(post(near, "/v1/messages", thirty_blocks(5)).status, 200);
  ASSERT_EQ(post(near, "/v1/messages", thirty_blocks(25)).status, 200);
  EXPECT_EQ(near.requests()[1].usage.cache_read_tokens, prefix_5);

  ModelApiServer far(read_forever());
  ASSERT_EQ(post(far, "/v1/messages", thirty_blocks(5)).status, 200);
  ASSERT_EQ(post(far, "/v1/messages", thirty_blocks(26)).status, 200);
  EXPECT_EQ(far.requests()[1].usage.cache_read_tokens, 0);
  EXPECT_EQ(far.requests()[1].usage.cache_write_tokens,
            far.requests()[1].input_tokens - far.requests()[1].usage.input_tokens);
}

// ---- OpenAI automatic prefix caching ----

TEST(ModelApiCache, OpenAiCachesTheLongestSeenPrefixIn128TokenSteps) {
  ModelApiServer server(answer_with_text("ok"));
  json messages = {{{"role", "system"}, {"content", text_of(6000)}},
                   {{"role", "user"}, {"content", text_of(1001)}}};
  const json first = {{"model", "gpt-test"}, {"messages", messages}};
  ASSERT_EQ(post(server, "/v1/chat/completions", first).status, 200);
  messages.push_back({{"role", "assistant"}, {"content", "ok"}});
  messages.push_back({{"role", "user"}, {"content", text_of(400)}});
  const Answer second =
      post(server, "/v1/chat/completions", {{"model", "gpt-test"}, {"messages", messages}});
  ASSERT_EQ(second.status, 200);
  const std::int64_t first_tokens = 1500 + 251;  // 1751 → 1664 cached
  EXPECT_EQ(server.requests()[0].usage.cache_read_tokens, 0);
  EXPECT_EQ(second.body["usage"]["prompt_tokens_details"]["cached_tokens"],
            first_tokens / 128 * 128);
  EXPECT_EQ(second.body["usage"]["prompt_tokens"], server.requests()[1].input_tokens);
}

// ---- the wire formats through loopr's HttpProvider ----

struct Mode {
  ModelApi api;
  bool stream;
};

class ModelApiProvider : public ::testing::TestWithParam<Mode> {
 protected:
  bool anthropic() const { return GetParam().api == ModelApi::anthropic; }

  std::unique_ptr<llm::Provider> provider(const ModelApiServer& server) {
    config::ProviderSettings s;
    s.kind = anthropic() ? config::ProviderKind::anthropic : config::ProviderKind::openai;
    s.base_url = anthropic() ? server.base_url() : server.base_url() + "/v1";
    s.model = anthropic() ? "claude-test" : "gpt-test";
    s.api_key_env = "TEST_MODEL_API_KEY";
    s.stream = GetParam().stream;
    s.max_retries = 0;
    auto made =
        llm::make_provider(s, http_, config::fixed_env({{"TEST_MODEL_API_KEY", "sk-test"}}));
    EXPECT_TRUE(made) << made.error().message;
    return made ? std::move(*made) : nullptr;
  }

  Result<llm::ModelTurn> run(llm::Provider& provider, const llm::ModelRequest& request) {
    std::optional<Result<llm::ModelTurn>> out;
    llm::TurnCallbacks callbacks{[this](std::string_view text) { streamed_ += text; }, {}, nullptr};
    asio::co_spawn(
        io_,
        [&]() -> asio::awaitable<void> {
          out.emplace(co_await provider.complete(request, callbacks));
        },
        [this](std::exception_ptr error) {
          if (error) ADD_FAILURE() << "complete() threw";
          io_.stop();
        });
    asio::steady_timer watchdog(io_, std::chrono::seconds(20));
    watchdog.async_wait([this](std::error_code error) {
      if (!error) io_.stop();
    });
    io_.run();
    io_.restart();
    watchdog.cancel();
    io_.poll();
    io_.restart();
    if (!out) return make_error("test", "complete() did not finish");
    return std::move(*out);
  }

  asio::io_context io_;
  llm::HttpClient http_{io_};
  std::string streamed_;
};

TEST_P(ModelApiProvider, ATurnWithTextAndAToolCallDecodesWithTheServersUsage) {
  std::vector<std::size_t> turns;
  const std::string text = "Reading the file first, then I will fix it. \xc3\xa9t\xc3\xa9";
  const json input = {{"path", "src/main.cpp"}, {"offset", 1}, {"note", std::string(100, 'n')}};
  ModelApiServer server([&](const ModelCall& call) {
    turns.push_back(call.turn);
    EXPECT_EQ(call.tools, (std::vector<std::string>{"read_file", "grep"}));
    EXPECT_EQ(call.system, text_of(8000, 's'));
    EXPECT_EQ(call.max_tokens, 256);
    return ModelReply::call("read_file", input, text);
  });
  auto made = provider(server);
  ASSERT_TRUE(made);
  llm::ModelRequest request;
  request.system = text_of(8000, 's');
  request.max_tokens = 256;
  request.tools = {{"read_file", "Reads a file", json::parse(R"({"type":"object"})")},
                   {"grep", "Searches", json::parse(R"({"type":"object"})")}};
  request.messages = {{llm::Role::user, "What is in src/main.cpp?", {}, {}}};

  auto first = run(*made, request);
  ASSERT_TRUE(first) << first.error().message;
  EXPECT_EQ(first->text, text);
  if (GetParam().stream) {
    EXPECT_EQ(streamed_, text);
  }
  ASSERT_EQ(first->tool_calls.size(), 1u);
  EXPECT_EQ(first->tool_calls[0].name, "read_file");
  EXPECT_EQ(json::parse(first->tool_calls[0].arguments), input);
  EXPECT_TRUE(first->tool_calls[0].id.starts_with(anthropic() ? "toolu_01" : "call_"))
      << first->tool_calls[0].id;
  EXPECT_EQ(first->stop_reason, llm::StopReason::tool_use);

  // The second turn carries the first's call and its result.
  request.messages.push_back({llm::Role::assistant, first->text, first->tool_calls, {}});
  request.messages.push_back(
      {llm::Role::user, "", {}, {{first->tool_calls[0].id, "read_file", text_of(3000), false}}});
  auto second = run(*made, request);
  ASSERT_TRUE(second) << second.error().message;

  const auto served = server.requests();
  ASSERT_EQ(served.size(), 2u);
  EXPECT_EQ(turns, (std::vector<std::size_t>{0, 1}));
  for (std::size_t i = 0; i < 2; ++i) {
    const auto& usage = (i == 0 ? first : second)->usage;
    EXPECT_FALSE(served[i].refused) << served[i].error_message;
    EXPECT_EQ(served[i].stream, GetParam().stream);
    EXPECT_EQ(usage.input_tokens, served[i].usage.input_tokens) << i;
    EXPECT_EQ(usage.cache_read_tokens, served[i].usage.cache_read_tokens) << i;
    EXPECT_EQ(usage.cache_write_tokens, served[i].usage.cache_write_tokens) << i;
    EXPECT_EQ(usage.output_tokens, served[i].usage.output_tokens) << i;
    EXPECT_EQ(usage.input_tokens + usage.cache_read_tokens + usage.cache_write_tokens,
              served[i].input_tokens)
        << i;
  }
  // The system prompt (2000 tokens) is a cacheable prefix in both APIs.
  EXPECT_GT(served[1].usage.cache_read_tokens, 2000);
  if (anthropic()) {
    EXPECT_GT(served[0].usage.cache_write_tokens, 2000);
  }
}

TEST_P(ModelApiProvider, ARefusalReachesTheProviderAsAContextOverflow) {
  ModelApiOptions options;
  options.context_window = 1000;
  ModelApiServer server(answer_with_text("unused"), options);
  auto made = provider(server);
  ASSERT_TRUE(made);
  llm::ModelRequest request;
  request.max_tokens = 100;
  request.messages = {{llm::Role::user, text_of(4400), {}, {}}};
  auto turn = run(*made, request);
  ASSERT_FALSE(turn);
  EXPECT_EQ(turn.error().code, llm::errc::context_overflow);
  EXPECT_EQ(turn.error().details["context_window"], 1000);
  EXPECT_NE(turn.error().message.find(anthropic() ? "prompt is too long"
                                                  : "maximum context length is 1000 tokens"),
            std::string::npos)
      << turn.error().message;
  ASSERT_EQ(server.requests().size(), 1u);
  EXPECT_TRUE(server.requests()[0].refused);
}

std::string mode_name(const ::testing::TestParamInfo<Mode>& param) {
  return std::string(param.param.api == ModelApi::anthropic ? "Anthropic" : "OpenAI") +
         (param.param.stream ? "Streamed" : "Whole");
}

INSTANTIATE_TEST_SUITE_P(Wires, ModelApiProvider,
                         ::testing::Values(Mode{ModelApi::anthropic, true},
                                           Mode{ModelApi::anthropic, false},
                                           Mode{ModelApi::openai, true},
                                           Mode{ModelApi::openai, false}),
                         mode_name);

TEST(ModelApiStream, AStreamIsWrittenInManyPiecesWithInputJsonDeltas) {
  ModelApiServer server([](const ModelCall&) {
    return ModelReply::call("grep", {{"pattern", text_of(200)}}, "Hm.");
  });
  json body = anthropic_request("find it", 100);
  body["stream"] = true;
  const Answer answer = post(server, "/v1/messages", body);
  EXPECT_EQ(answer.status, 200);
  EXPECT_GT(answer.writes, 8u);
  EXPECT_NE(answer.raw.find("\"type\":\"input_json_delta\""), std::string::npos);
  EXPECT_NE(answer.raw.find("event: message_delta"), std::string::npos);
  EXPECT_NE(answer.raw.find("\"id\":\"toolu_01"), std::string::npos);
}

}  // namespace
}  // namespace loopr::test
