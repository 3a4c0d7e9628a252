// HttpProvider end to end, both wire formats, streamed and not, against a
// loopback server that answers byte for byte as scripted.
#include <gtest/gtest.h>
#include <sys/stat.h>

#include <asio/co_spawn.hpp>
#include <asio/io_context.hpp>
#include <asio/post.hpp>
#include <asio/steady_timer.hpp>

#include "llm/anthropic_wire.hpp"
#include "llm/http_provider.hpp"
#include "llm/make_provider.hpp"
#include "llm/openai_wire.hpp"
#include "tests/support/scripted_http_server.hpp"
#include "tests/support/temp_tree.hpp"

namespace loopr::llm {
namespace {

using nlohmann::json;
using std::chrono::milliseconds;
using test::HttpStep;
using test::ScriptedReply;

constexpr const char* kKey = "sk-secret-test-key-42";

enum class Format { anthropic, openai };

struct Mode {
  Format format;
  bool stream;
};

std::string mode_name(const ::testing::TestParamInfo<Mode>& info) {
  return std::string(info.param.format == Format::anthropic ? "Anthropic" : "OpenAI") +
         (info.param.stream ? "Streamed" : "Whole");
}

std::string event(const std::string& type, const json& data) {
  return "event: " + type + "\ndata: " + data.dump() + "\n\n";
}
std::string data_line(const json& data) {
  return "data: " + data.dump() + "\n\n";
}

// What a provider answers with, in each format. Tool calls' arguments are
// sent in two deltas when streamed.
struct Answer {
  std::string text;
  std::vector<ToolCall> calls;
  bool ping = false;
};

std::vector<std::string> anthropic_events(const Answer& answer) {
  std::vector<std::string> out;
  out.push_back(
      event("message_start",
            {{"type", "message_start"},
             {"message",
              {{"id", "msg_1"},
               {"model", "claude-test"},
               {"content", json::array()},
               {"usage",
                {{"input_tokens", 10}, {"output_tokens", 1}, {"cache_read_input_tokens", 5}}}}}}));
  if (answer.ping) out.push_back(event("ping", {{"type", "ping"}}));
  int index = 0;
  if (!answer.text.empty()) {
    out.push_back(
        event("content_block_start", {{"type", "content_block_start"},
                                      {"index", index},
                                      {"content_block", {{"type", "text"}, {"text", ""}}}}));
    std::size_t half = answer.text.size() / 2;
    for (const std::string& part : {answer.text.substr(0, half), answer.text.substr(half)}) {
      out.push_back(
          event("content_block_delta", {{"type", "content_block_delta"},
                                        {"index", index},
                                        {"delta", {{"type", "text_delta"}, {"text", part}}}}));
    }
    out.push_back(event("content_block_stop", {{"type", "content_block_stop"}, {"index", index}}));
    ++index;
  }
  for (const auto& call : answer.calls) {
    out.push_back(event("content_block_start", {{"type", "content_block_start"},
                                                {"index", index},
                                                {"content_block",
                                                 {{"type", "tool_use"},
                                                  {"id", call.id},
                                                  {"name", call.name},
                                                  {"input", json::object()}}}}));
    std::size_t half = call.arguments.size() / 2;
    for (const std::string& part : {call.arguments.substr(0, half), call.arguments.substr(half)}) {
      out.push_back(event("content_block_delta",
                          {{"type", "content_block_delta"},
                           {"index", index},
                           {"delta", {{"type", "input_json_delta"}, {"partial_json", part}}}}));
    }
    out.push_back(event("content_block_stop", {{"type", "content_block_stop"}, {"index", index}}));
    ++index;
  }
  if (answer.ping) out.push_back(event("ping", {{"type", "ping"}}));
  out.push_back(event("message_delta",
                      {{"type", "message_delta"},
                       {"delta", {{"stop_reason", answer.calls.empty() ? "end_turn" : "tool_use"}}},
                       {"usage", {{"output_tokens", 7}}}}));
  out.push_back(event("message_stop", {{"type", "message_stop"}}));
  return out;
}

std::vector<std::string> openai_events(const Answer& answer) {
  std::vector<std::string> out;
  auto chunk = [](json delta, json finish = nullptr) {
    return data_line(
        {{"id", "chatcmpl-1"},
         {"model", "gpt-test"},
         {"choices", {{{"index", 0}, {"delta", std::move(delta)}, {"finish_reason", finish}}}}});
  };
  out.push_back(chunk({{"role", "assistant"}, {"content", ""}}));
  if (answer.ping) out.push_back(": keep-alive\n\n");
  if (!answer.text.empty()) {
    std::size_t half = answer.text.size() / 2;
    out.push_back(chunk({{"content", answer.text.substr(0, half)}}));
    out.push_back(chunk({{"content", answer.text.substr(half)}}));
  }
  for (std::size_t i = 0; i < answer.calls.size(); ++i) {
    const auto& call = answer.calls[i];
    std::size_t half = call.arguments.size() / 2;
    out.push_back(
        chunk({{"tool_calls",
                {{{"index", i},
                  {"id", call.id},
                  {"type", "function"},
                  {"function",
                   {{"name", call.name}, {"arguments", call.arguments.substr(0, half)}}}}}}}));
    out.push_back(
        chunk({{"tool_calls",
                {{{"index", i}, {"function", {{"arguments", call.arguments.substr(half)}}}}}}}));
  }
  out.push_back(chunk(json::object(), answer.calls.empty() ? "stop" : "tool_calls"));
  out.push_back(data_line({{"id", "chatcmpl-1"},
                           {"choices", json::array()},
                           {"usage",
                            {{"prompt_tokens", 15},
                             {"completion_tokens", 7},
                             {"prompt_tokens_details", {{"cached_tokens", 5}}}}}}));
  out.push_back("data: [DONE]\n\n");
  return out;
}

json anthropic_body(const Answer& answer) {
  json content = json::array();
  if (!answer.text.empty()) content.push_back({{"type", "text"}, {"text", answer.text}});
  for (const auto& call : answer.calls) {
    content.push_back({{"type", "tool_use"},
                       {"id", call.id},
                       {"name", call.name},
                       {"input", json::parse(call.arguments)}});
  }
  return {{"id", "msg_1"},
          {"type", "message"},
          {"role", "assistant"},
          {"model", "claude-test"},
          {"content", content},
          {"stop_reason", answer.calls.empty() ? "end_turn" : "tool_use"},
          {"usage", {{"input_tokens", 10}, {"output_tokens", 7}, {"cache_read_input_tokens", 5}}}};
}

json openai_body(const Answer& answer) {
  json message = {{"role", "assistant"}, {"content", answer.text}};
  if (!answer.calls.empty()) {
    json calls = json::array();
    for (const auto& call : answer.calls) {
      calls.push_back({{"id", call.id},
                       {"type", "function"},
                       {"function", {{"name", call.name}, {"arguments", call.arguments}}}});
    }
    message["tool_calls"] = calls;
  }
  return {{"id", "chatcmpl-1"},
          {"model", "gpt-test"},
          {"choices",
           {{{"index", 0},
             {"message", message},
             {"finish_reason", answer.calls.empty() ? "stop" : "tool_calls"}}}},
          {"usage",
           {{"prompt_tokens", 15},
            {"completion_tokens", 7},
            {"prompt_tokens_details", {{"cached_tokens", 5}}}}}};
}

const Usage kExpectedUsage{10, 7, 5, 0};

class ProviderHttpTest : public ::testing::TestWithParam<Mode> {
 protected:
  bool anthropic() const { return GetParam().format == Format::anthropic; }
  bool streamed() const { return GetParam().stream; }

  config::ProviderSettings settings() const {
    config::ProviderSettings s;
    s.kind = anthropic() ? config::ProviderKind::anthropic : config::ProviderKind::openai;
    s.base_url = anthropic() ? server_.base_url() : server_.base_url() + "/v1";
    s.model = anthropic() ? "claude-test" : "gpt-test";
    s.api_key_env = "TEST_PROVIDER_KEY";
    s.max_retries = 3;
    s.stream = streamed();
    s.prompt_caching = caching_;
    s.connect_timeout_ms = 2000;
    s.first_byte_timeout_ms = 2000;
    s.idle_timeout_ms = 150;
    s.retry_base_delay_ms = 1;
    s.retry_max_delay_ms = 100;
    return s;
  }

  std::unique_ptr<Provider> make(config::ProviderSettings s) {
    auto provider = make_provider(s, http_, config::fixed_env({{"TEST_PROVIDER_KEY", kKey}}));
    EXPECT_TRUE(provider) << provider.error().message;
    return provider ? std::move(*provider) : nullptr;
  }

  // The reply a successful answer takes in this mode.
  ScriptedReply success(const Answer& answer) const {
    if (streamed())
      return ScriptedReply::sse(anthropic() ? anthropic_events(answer) : openai_events(answer));
    return ScriptedReply::json(200,
                               (anthropic() ? anthropic_body(answer) : openai_body(answer)).dump());
  }

  // A provider error body in this format.
  std::string error_body(const std::string& type, const std::string& message) const {
    if (anthropic()) {
      return json{{"type", "error"}, {"error", {{"type", type}, {"message", message}}}}.dump();
    }
    return json{{"error", {{"message", message}, {"type", type}, {"code", nullptr}}}}.dump();
  }

  Result<ModelTurn> run(Provider& provider, const ModelRequest& request) {
    std::optional<Result<ModelTurn>> out;
    asio::co_spawn(
        io_,
        [&]() -> asio::awaitable<void> {
          out.emplace(co_await provider.complete(request, callbacks_));
        },
        [this](std::exception_ptr error) {
          if (error) ADD_FAILURE() << "complete() threw";
          io_.stop();
        });
    asio::steady_timer watchdog(io_, std::chrono::seconds(20));
    watchdog.async_wait([this](std::error_code error) {
      if (!error) {
        ADD_FAILURE() << "complete() did not finish";
        io_.stop();
      }
    });
    io_.run();
    io_.restart();
    watchdog.cancel();
    io_.poll();
    io_.restart();
    if (!out) return make_error("test", "did not finish");
    return std::move(*out);
  }

  ModelRequest request() const {
    ModelRequest r;
    r.system = "Be brief.";
    r.max_tokens = 256;
    r.tools = {{"read_file", "Reads a file", json::parse(R"({"type":"object"})")},
               {"grep", "Searches", json::parse(R"({"type":"object"})")}};
    r.messages = {{Role::user, "What is in a.txt?", {}, {}}};
    return r;
  }

  void expect_key_absent(const Error& error) const {
    EXPECT_EQ(error.message.find(kKey), std::string::npos) << error.message;
    EXPECT_EQ(error.hint.find(kKey), std::string::npos) << error.hint;
    EXPECT_EQ(error.details.dump().find(kKey), std::string::npos);
  }

  test::ScriptedHttpServer server_;
  asio::io_context io_;
  HttpClient http_{io_};
  bool caching_ = true;
  std::string streamed_text_;
  std::vector<RetryNotice> retries_;
  TurnCallbacks callbacks_{[this](std::string_view text) { streamed_text_ += text; },
                           [this](const RetryNotice& notice) { retries_.push_back(notice); },
                           nullptr};
};

TEST_P(ProviderHttpTest, TextTurn) {
  server_.push(success({"Hello there, world.", {}, false}));
  auto provider = make(settings());
  ASSERT_TRUE(provider);
  auto turn = run(*provider, request());
  ASSERT_TRUE(turn) << turn.error().message;
  EXPECT_EQ(turn->text, "Hello there, world.");
  EXPECT_TRUE(turn->tool_calls.empty());
  EXPECT_EQ(turn->stop_reason, StopReason::end_turn);
  EXPECT_EQ(turn->usage, kExpectedUsage);
  EXPECT_EQ(streamed_text_, "Hello there, world.");
  EXPECT_TRUE(retries_.empty());
  EXPECT_EQ(provider->model(), anthropic() ? "claude-test" : "gpt-test");
  EXPECT_EQ(provider->context_window(), anthropic() ? 200000 : 128000);

  auto requests = server_.requests();
  ASSERT_EQ(requests.size(), 1U);
  const auto& sent = requests[0];
  EXPECT_EQ(sent.method, "POST");
  json body = json::parse(sent.body);
  EXPECT_EQ(body["max_tokens"], 256);
  EXPECT_EQ(body.contains("stream"), streamed());
  if (anthropic()) {
    EXPECT_EQ(sent.path, "/v1/messages");
    EXPECT_EQ(sent.headers.at("x-api-key"), kKey);
    EXPECT_EQ(sent.headers.at("anthropic-version"), "2023-06-01");
    EXPECT_EQ(sent.headers.count("authorization"), 0U);
    EXPECT_EQ(body["model"], "claude-test");
    EXPECT_EQ(body["system"][0]["cache_control"], json::parse(R"({"type":"ephemeral"})"));
    EXPECT_EQ(body["tools"][1]["cache_control"], json::parse(R"({"type":"ephemeral"})"));
    EXPECT_FALSE(body["tools"][0].contains("cache_control"));
    EXPECT_EQ(body["messages"][0]["content"][0]["text"], "What is in a.txt?");
  } else {
    EXPECT_EQ(sent.path, "/v1/chat/completions");
    EXPECT_EQ(sent.headers.at("authorization"), std::string("Bearer ") + kKey);
    EXPECT_EQ(sent.headers.count("x-api-key"), 0U);
    EXPECT_EQ(body["messages"][0], json::parse(R"({"role":"system","content":"Be brief."})"));
    EXPECT_EQ(body["tools"][0]["function"]["name"], "read_file");
    if (streamed()) {
      EXPECT_EQ(body["stream_options"]["include_usage"], true);
    }
  }
  EXPECT_NE(sent.headers.at("content-type").find("application/json"), std::string::npos);
}

TEST_P(ProviderHttpTest, NoCacheControlWhenCachingIsOff) {
  caching_ = false;
  server_.push(success({"ok", {}, false}));
  auto provider = make(settings());
  ASSERT_TRUE(provider);
  ASSERT_TRUE(run(*provider, request()));
  auto requests = server_.requests();
  ASSERT_EQ(requests.size(), 1U);
  EXPECT_EQ(requests[0].body.find("cache_control"), std::string::npos);
}

TEST_P(ProviderHttpTest, NoKeyHeaderWithoutAKey) {
  server_.push(success({"ok", {}, false}));
  config::ProviderSettings s = settings();
  s.api_key_env.clear();
  auto provider = make(s);
  ASSERT_TRUE(provider);
  ASSERT_TRUE(run(*provider, request()));
  auto requests = server_.requests();
  ASSERT_EQ(requests.size(), 1U);
  EXPECT_EQ(requests[0].headers.count("x-api-key"), 0U);
  EXPECT_EQ(requests[0].headers.count("authorization"), 0U);
}

TEST_P(ProviderHttpTest, ToolUseTurnWithPings) {
  Answer answer{"Reading.",
                {{"call_1", "read_file", R"({"path":"a.txt","limit":10})"},
                 {"call_2", "grep", R"({"pattern":"x"})"}},
                true};
  server_.push(success(answer));
  auto provider = make(settings());
  ASSERT_TRUE(provider);
  auto turn = run(*provider, request());
  ASSERT_TRUE(turn) << turn.error().message;
  EXPECT_EQ(turn->text, "Reading.");
  ASSERT_EQ(turn->tool_calls.size(), 2U);
  EXPECT_EQ(turn->tool_calls[0].id, "call_1");
  EXPECT_EQ(turn->tool_calls[0].name, "read_file");
  EXPECT_EQ(json::parse(turn->tool_calls[0].arguments), json::parse(answer.calls[0].arguments));
  EXPECT_EQ(json::parse(turn->tool_calls[1].arguments), json::parse(answer.calls[1].arguments));
  EXPECT_EQ(turn->stop_reason, StopReason::tool_use);
}

// Failures only a stream can have.
class ProviderHttpStreamTest : public ProviderHttpTest {};

TEST_P(ProviderHttpStreamTest, ErrorEventMidStreamIsRetried) {
  std::vector<std::string> pieces = anthropic() ? anthropic_events({"Partial", {}, false})
                                                : openai_events({"Partial", {}, false});
  pieces.resize(2);
  pieces.push_back(anthropic()
                       ? event("error", json::parse(error_body("overloaded_error", "Overloaded")))
                       : data_line(json::parse(error_body("server_error", "Overloaded"))));
  server_.push(ScriptedReply::sse(pieces));
  server_.push(success({"Recovered.", {}, false}));
  auto provider = make(settings());
  ASSERT_TRUE(provider);
  auto turn = run(*provider, request());
  ASSERT_TRUE(turn) << turn.error().message;
  EXPECT_EQ(turn->text, "Recovered.");
  ASSERT_EQ(retries_.size(), 1U);
  EXPECT_EQ(retries_[0].attempt, 1);
  EXPECT_EQ(retries_[0].max_retries, 3);
  EXPECT_NE(retries_[0].reason.find("Overloaded"), std::string::npos) << retries_[0].reason;
  EXPECT_EQ(server_.requests().size(), 2U);
}

TEST_P(ProviderHttpTest, TooManyRequestsHonoursRetryAfter) {
  server_.push(ScriptedReply::json(429, error_body("rate_limit_error", "slow down"),
                                   {{"retry-after-ms", "60"}}));
  server_.push(success({"ok", {}, false}));
  auto provider = make(settings());
  ASSERT_TRUE(provider);
  auto start = std::chrono::steady_clock::now();
  auto turn = run(*provider, request());
  ASSERT_TRUE(turn) << turn.error().message;
  EXPECT_GE(std::chrono::steady_clock::now() - start, milliseconds(60));
  ASSERT_EQ(retries_.size(), 1U);
  EXPECT_EQ(retries_[0].delay, milliseconds(60));
  EXPECT_NE(retries_[0].reason.find("HTTP 429"), std::string::npos);
  EXPECT_NE(retries_[0].reason.find("slow down"), std::string::npos);
}

TEST_P(ProviderHttpTest, RetryAfterIsCapped) {
  server_.push(
      ScriptedReply::json(429, error_body("rate_limit_error", "later"), {{"retry-after", "3600"}}));
  server_.push(success({"ok", {}, false}));
  auto provider = make(settings());
  ASSERT_TRUE(provider);
  ASSERT_TRUE(run(*provider, request()));
  ASSERT_EQ(retries_.size(), 1U);
  EXPECT_EQ(retries_[0].delay, milliseconds(100));  // retry_max_delay_ms
}

TEST_P(ProviderHttpTest, OverloadedIsRetried) {
  server_.push(ScriptedReply::json(529, error_body("overloaded_error", "Overloaded")));
  server_.push(ScriptedReply::json(503, "<html>Service Unavailable</html>",
                                   {{"Content-Type", "text/html"}}));
  server_.push(success({"ok", {}, false}));
  auto provider = make(settings());
  ASSERT_TRUE(provider);
  auto turn = run(*provider, request());
  ASSERT_TRUE(turn) << turn.error().message;
  ASSERT_EQ(retries_.size(), 2U);
  EXPECT_NE(retries_[0].reason.find("HTTP 529 overloaded_error: Overloaded"), std::string::npos)
      << retries_[0].reason;
  EXPECT_NE(retries_[1].reason.find("HTTP 503"), std::string::npos);
  EXPECT_EQ(retries_[1].attempt, 2);
  for (const auto& notice : retries_)
    EXPECT_LE(notice.delay, milliseconds(100));
}

TEST_P(ProviderHttpTest, ConnectionResetMidResponseIsRetried) {
  ScriptedReply reset;
  if (streamed()) {
    auto pieces = anthropic() ? anthropic_events({"Half an answer", {}, false})
                              : openai_events({"Half an answer", {}, false});
    pieces.resize(3);
    reset = ScriptedReply::sse(pieces);
  } else {
    std::string whole = success({"Half an answer", {}, false}).steps[0].bytes;
    reset.steps.push_back(HttpStep::write(whole.substr(0, whole.size() - 10)));
  }
  reset.steps.push_back(HttpStep::pause(milliseconds(20)));
  reset.steps.push_back(HttpStep::reset());
  server_.push(reset);
  server_.push(success({"Whole answer", {}, false}));
  auto provider = make(settings());
  ASSERT_TRUE(provider);
  auto turn = run(*provider, request());
  ASSERT_TRUE(turn) << turn.error().message;
  EXPECT_EQ(turn->text, "Whole answer");
  EXPECT_EQ(retries_.size(), 1U);
}

TEST_P(ProviderHttpStreamTest, ServerThatIgnoresStreamIsReadAsJson) {
  Answer answer{"Plain JSON.", {}, false};
  server_.push(ScriptedReply::json(
      200, (anthropic() ? anthropic_body(answer) : openai_body(answer)).dump()));
  auto provider = make(settings());
  ASSERT_TRUE(provider);
  auto turn = run(*provider, request());
  ASSERT_TRUE(turn) << turn.error().message;
  EXPECT_EQ(turn->text, "Plain JSON.");
  EXPECT_EQ(streamed_text_, "Plain JSON.");
}

TEST_P(ProviderHttpStreamTest, StreamEndingEarlyIsRetried) {
  auto pieces =
      anthropic() ? anthropic_events({"Half", {}, false}) : openai_events({"Half", {}, false});
  pieces.resize(3);
  server_.push(ScriptedReply::sse(pieces));  // closes cleanly without the end marker
  server_.push(success({"Whole", {}, false}));
  auto provider = make(settings());
  ASSERT_TRUE(provider);
  auto turn = run(*provider, request());
  ASSERT_TRUE(turn) << turn.error().message;
  EXPECT_EQ(turn->text, "Whole");
  ASSERT_EQ(retries_.size(), 1U);
}

TEST_P(ProviderHttpTest, IdleStreamIsRetriedAfterTheIdleTimeout) {
  ScriptedReply stalled;
  if (streamed()) {
    auto pieces = anthropic() ? anthropic_events({"Stalled", {}, false})
                              : openai_events({"Stalled", {}, false});
    pieces.resize(2);
    stalled = ScriptedReply::sse(pieces);
  } else {
    std::string whole = success({"Stalled", {}, false}).steps[0].bytes;
    stalled.steps.push_back(HttpStep::write(whole.substr(0, whole.size() - 5)));
  }
  stalled.steps.push_back(HttpStep::pause(milliseconds(3000)));
  server_.push(stalled);
  server_.push(success({"Fresh", {}, false}));
  auto provider = make(settings());
  ASSERT_TRUE(provider);
  auto start = std::chrono::steady_clock::now();
  auto turn = run(*provider, request());
  ASSERT_TRUE(turn) << turn.error().message;
  EXPECT_EQ(turn->text, "Fresh");
  EXPECT_LT(std::chrono::steady_clock::now() - start, milliseconds(2500));
  ASSERT_EQ(retries_.size(), 1U);
}

TEST_P(ProviderHttpTest, BadKeyIsProviderAuthAtOnce) {
  // A server that echoes the key back must not get it into the error.
  server_.push(ScriptedReply::json(
      401, error_body("authentication_error", std::string("invalid x-api-key ") + kKey)));
  auto provider = make(settings());
  ASSERT_TRUE(provider);
  auto turn = run(*provider, request());
  ASSERT_FALSE(turn);
  EXPECT_EQ(turn.error().code, errc::provider_auth);
  EXPECT_NE(turn.error().message.find("invalid x-api-key [redacted]"), std::string::npos)
      << turn.error().message;
  EXPECT_NE(turn.error().message.find("TEST_PROVIDER_KEY"), std::string::npos);
  expect_key_absent(turn.error());
  EXPECT_TRUE(retries_.empty());
  EXPECT_EQ(server_.requests().size(), 1U);
}

TEST_P(ProviderHttpTest, BadRequestIsProviderRequestWithTheProvidersWords) {
  server_.push(ScriptedReply::json(
      400, error_body("invalid_request_error", "max_tokens: must be at most 4096")));
  auto provider = make(settings());
  ASSERT_TRUE(provider);
  auto turn = run(*provider, request());
  ASSERT_FALSE(turn);
  EXPECT_EQ(turn.error().code, errc::provider_request);
  EXPECT_NE(turn.error().message.find("max_tokens: must be at most 4096"), std::string::npos);
  EXPECT_FALSE(turn.error().hint.empty());
  EXPECT_TRUE(retries_.empty());
}

// The provider's "the prompt is too long", in each shape a server sends.
struct OverflowShape {
  std::string name;
  int status;
  std::string body;
  json details;  // what Error::details must be
};

std::vector<OverflowShape> overflow_shapes(bool anthropic) {
  if (anthropic) {
    return {
        {"prompt is too long",
         400,
         R"({"type":"error","error":{"type":"invalid_request_error",)"
         R"("message":"prompt is too long: 210000 tokens > 200000 maximum"}})",
         {{"prompt_tokens", 210000}, {"context_window", 200000}, {"status", 400}}},
        {"input and max_tokens exceed the limit",
         400,
         R"({"type":"error","error":{"type":"invalid_request_error","message":"input length )"
         R"(and `max_tokens` exceed context limit: 150000 + 64000 > 200000, decrease input )"
         R"(length or `max_tokens` and try again"}})",
         {{"prompt_tokens", 150000}, {"context_window", 200000}, {"status", 400}}},
        {"request_too_large",
         413,
         R"({"type":"error","error":{"type":"request_too_large",)"
         R"("message":"Request exceeds the maximum allowed number of bytes."}})",
         {{"status", 413}}},
    };
  }
  return {
      {"OpenAI context_length_exceeded",
       400,
       R"({"error":{"message":"This model's maximum context length is 128000 tokens. However, )"
       R"(your messages resulted in 130000 tokens. Please reduce the length of the messages.",)"
       R"("type":"invalid_request_error","param":"messages","code":"context_length_exceeded"}})",
       {{"prompt_tokens", 130000}, {"context_window", 128000}, {"status", 400}}},
      {"llama.cpp exceed_context_size_error",
       400,
       R"({"error":{"code":400,"message":"the request exceeds the available context size, )"
       R"(try increasing it","type":"exceed_context_size_error","n_prompt_tokens":9000,)"
       R"("n_ctx":8192}})",
       {{"prompt_tokens", 9000}, {"context_window", 8192}, {"status", 400}}},
      {"vLLM (object: error)",
       400,
       R"({"object":"error","message":"This model's maximum context length is 4096 tokens. )"
       R"(However, you requested 5000 tokens (4000 in the messages, 1000 in the completion). )"
       R"(Please reduce the length of the messages or completion.","type":"BadRequestError",)"
       R"("param":null,"code":400})",
       {{"prompt_tokens", 4000}, {"context_window", 4096}, {"status", 400}}},
      {"vLLM (error object, no breakdown)",
       400,
       R"({"error":{"message":"This model's maximum context length is 4096 tokens. However, )"
       R"(you requested 5000 tokens. Please reduce the length of the messages or )"
       R"(completion.","type":"BadRequestError","param":null,"code":400}})",
       {{"context_window", 4096}, {"status", 400}}},
      {"HTTP 413 from a proxy",
       413,
       "<html><body>413 Request Entity Too Large</body></html>",
       {{"status", 413}}},
  };
}

void expect_overflow(const Result<ModelTurn>& turn, const json& details, const std::string& name) {
  ASSERT_FALSE(turn) << name;
  EXPECT_EQ(turn.error().code, errc::context_overflow) << name << ": " << turn.error().message;
  EXPECT_EQ(turn.error().details, details) << name;
  EXPECT_NE(turn.error().message.find("context overflow"), std::string::npos)
      << name << ": " << turn.error().message;
  EXPECT_NE(turn.error().hint.find("shrink the conversation"), std::string::npos)
      << name << ": " << turn.error().hint;
}

TEST_P(ProviderHttpTest, PromptTooLongIsContextOverflowAtOnce) {
  for (const auto& shape : overflow_shapes(anthropic())) {
    server_.push(ScriptedReply::json(shape.status, shape.body));
    auto provider = make(settings());
    ASSERT_TRUE(provider);
    const std::size_t before = server_.requests().size();
    auto turn = run(*provider, request());
    expect_overflow(turn, shape.details, shape.name);
    EXPECT_EQ(server_.requests().size(), before + 1) << shape.name;
  }
  EXPECT_TRUE(retries_.empty());
}

TEST_P(ProviderHttpTest, OverflowMessageQuotesTheProvider) {
  auto shape = overflow_shapes(anthropic()).front();
  server_.push(ScriptedReply::json(shape.status, shape.body));
  auto provider = make(settings());
  ASSERT_TRUE(provider);
  auto turn = run(*provider, request());
  ASSERT_FALSE(turn);
  const std::string& message = turn.error().message;
  EXPECT_NE(message.find(anthropic() ? "210000 input tokens, window 200000"
                                     : "130000 input tokens, window 128000"),
            std::string::npos)
      << message;
  EXPECT_NE(message.find(anthropic() ? "prompt is too long" : "maximum context length"),
            std::string::npos)
      << message;
  EXPECT_NE(message.find("HTTP 400"), std::string::npos) << message;
}

TEST_P(ProviderHttpStreamTest, OverflowErrorEventIsContextOverflowAtOnce) {
  std::vector<std::string> pieces = anthropic() ? anthropic_events({"Partial", {}, false})
                                                : openai_events({"Partial", {}, false});
  pieces.resize(1);
  json error =
      anthropic()
          ? json::parse(R"({"type":"error","error":{"type":"invalid_request_error",)"
                        R"("message":"prompt is too long: 210000 tokens > 200000 maximum"}})")
          : json::parse(R"({"error":{"message":"This model's maximum context length is 128000 )"
                        R"(tokens. However, your messages resulted in 130000 tokens.",)"
                        R"("type":"invalid_request_error","code":"context_length_exceeded"}})");
  pieces.push_back(anthropic() ? event("error", error) : data_line(error));
  server_.push(ScriptedReply::sse(pieces));
  auto provider = make(settings());
  ASSERT_TRUE(provider);
  auto turn = run(*provider, request());
  expect_overflow(turn,
                  anthropic() ? json{{"prompt_tokens", 210000}, {"context_window", 200000}}
                              : json{{"prompt_tokens", 130000}, {"context_window", 128000}},
                  "stream error event");
  EXPECT_TRUE(retries_.empty());
  EXPECT_EQ(server_.requests().size(), 1U);
}

TEST_P(ProviderHttpTest, PlainBadRequestIsStillProviderRequest) {
  server_.push(ScriptedReply::json(
      400, error_body("invalid_request_error", "messages.0.content: text must not be empty")));
  server_.push(ScriptedReply::json(413, "too big", {{"Content-Type", "text/plain"}}));
  server_.push(ScriptedReply::json(422, error_body("invalid_request_error", "bad tools")));
  auto provider = make(settings());
  ASSERT_TRUE(provider);
  auto plain = run(*provider, request());
  ASSERT_FALSE(plain);
  EXPECT_EQ(plain.error().code, errc::provider_request) << plain.error().message;
  EXPECT_EQ(plain.error().details, json({{"status", 400}}));
  auto too_large = run(*provider, request());
  ASSERT_FALSE(too_large);
  EXPECT_EQ(too_large.error().code, errc::context_overflow);  // any 413
  auto unprocessable = run(*provider, request());
  ASSERT_FALSE(unprocessable);
  EXPECT_EQ(unprocessable.error().code, errc::provider_request);
  EXPECT_TRUE(retries_.empty());
  EXPECT_EQ(server_.requests().size(), 3U);
}

TEST_P(ProviderHttpTest, OutputCapFieldAndReasoningEffortComeFromTheSettings) {
  if (anthropic()) {
    // Chat Completions fields: the Messages API never gets them (the
    // settings refuse them for an anthropic provider; the wire ignores them).
    server_.push(success({"ok", {}, false}));
    config::ProviderSettings set = settings();
    set.max_tokens_field = "max_completion_tokens";
    set.reasoning_effort = "medium";
    auto provider = make(set);
    ASSERT_TRUE(provider);
    ASSERT_TRUE(run(*provider, request()));
    const json body = json::parse(server_.requests().at(0).body);
    EXPECT_EQ(body["max_tokens"], 256);
    EXPECT_FALSE(body.contains("max_completion_tokens"));
    EXPECT_FALSE(body.contains("reasoning_effort"));
    return;
  }
  server_.push(success({"ok", {}, false}));
  server_.push(success({"ok", {}, false}));
  config::ProviderSettings local = settings();  // base_url on 127.0.0.1
  auto provider = make(local);
  ASSERT_TRUE(provider);
  ASSERT_TRUE(run(*provider, request()));
  config::ProviderSettings reasoning = settings();
  reasoning.max_tokens_field = "max_completion_tokens";
  reasoning.reasoning_effort = "medium";
  provider = make(reasoning);
  ASSERT_TRUE(provider);
  ASSERT_TRUE(run(*provider, request()));
  auto requests = server_.requests();
  ASSERT_EQ(requests.size(), 2U);
  json plain = json::parse(requests[0].body);
  EXPECT_EQ(plain["max_tokens"], 256);
  EXPECT_FALSE(plain.contains("max_completion_tokens"));
  EXPECT_FALSE(plain.contains("reasoning_effort"));
  json chosen = json::parse(requests[1].body);
  EXPECT_EQ(chosen["max_completion_tokens"], 256);
  EXPECT_FALSE(chosen.contains("max_tokens"));
  EXPECT_EQ(chosen["reasoning_effort"], "medium");
}

TEST_P(ProviderHttpTest, MaxRetriesExhaustedIsProviderUnavailable) {
  config::ProviderSettings s = settings();
  s.max_retries = 2;
  for (int i = 0; i < 3; ++i) {
    server_.push(ScriptedReply::json(503, error_body("api_error", std::string("down ") + kKey)));
  }
  auto provider = make(s);
  ASSERT_TRUE(provider);
  auto turn = run(*provider, request());
  ASSERT_FALSE(turn);
  EXPECT_EQ(turn.error().code, errc::provider_unavailable);
  EXPECT_NE(turn.error().message.find("after 2 retries"), std::string::npos);
  EXPECT_NE(turn.error().message.find("HTTP 503"), std::string::npos);
  expect_key_absent(turn.error());
  ASSERT_EQ(retries_.size(), 2U);
  for (const auto& notice : retries_) {
    EXPECT_EQ(notice.reason.find(kKey), std::string::npos);
  }
  EXPECT_EQ(server_.requests().size(), 3U);
}

TEST_P(ProviderHttpTest, CancelDuringBackoff) {
  server_.push(
      ScriptedReply::json(429, error_body("rate_limit_error", "wait"), {{"retry-after", "10"}}));
  config::ProviderSettings s = settings();
  s.retry_max_delay_ms = 60000;
  auto provider = make(s);
  ASSERT_TRUE(provider);
  CancelToken token;
  callbacks_.cancel = &token;
  callbacks_.on_retry = [&](const RetryNotice&) { asio::post(io_, [&] { token.cancel(); }); };
  auto start = std::chrono::steady_clock::now();
  auto turn = run(*provider, request());
  ASSERT_FALSE(turn);
  EXPECT_EQ(turn.error().code, errc::cancelled);
  EXPECT_LT(std::chrono::steady_clock::now() - start, milliseconds(5000));
}

INSTANTIATE_TEST_SUITE_P(ProviderHttp, ProviderHttpTest,
                         ::testing::Values(Mode{Format::anthropic, true},
                                           Mode{Format::anthropic, false},
                                           Mode{Format::openai, true}, Mode{Format::openai, false}),
                         mode_name);
INSTANTIATE_TEST_SUITE_P(ProviderHttp, ProviderHttpStreamTest,
                         ::testing::Values(Mode{Format::anthropic, true},
                                           Mode{Format::openai, true}),
                         mode_name);

TEST(ProviderMake, ScriptedKindAndErrors) {
  asio::io_context io;
  HttpClient http(io);
  test::TempTree tree;
  tree.write("s.jsonl", R"({"text":"hi"})");
  config::ProviderSettings scripted;
  scripted.kind = config::ProviderKind::scripted;
  scripted.script = tree.path("s.jsonl");
  auto provider = make_provider(scripted, http, config::fixed_env({}));
  ASSERT_TRUE(provider) << provider.error().message;
  EXPECT_EQ((*provider)->context_window(), 200000);

  scripted.script = tree.path("absent.jsonl");
  EXPECT_FALSE(make_provider(scripted, http, config::fixed_env({})));

  config::ProviderSettings anthropic;
  anthropic.base_url = "https://api.anthropic.com";
  anthropic.api_key_env = "ANTHROPIC_API_KEY";
  auto missing = make_provider(anthropic, http, config::fixed_env({}));
  ASSERT_FALSE(missing);
  EXPECT_EQ(missing.error().code, errc::provider_auth);
  EXPECT_NE(missing.error().message.find("ANTHROPIC_API_KEY"), std::string::npos);

  config::ProviderSettings local;
  local.kind = config::ProviderKind::openai;
  local.base_url = "http://127.0.0.1:1/v1";
  local.context_window = 32768;
  auto keyless = make_provider(local, http, config::fixed_env({}));
  ASSERT_TRUE(keyless);
  EXPECT_EQ((*keyless)->context_window(), 32768);
}

TEST(ProviderMake, KeyFileNoteIsPassedOn) {
  asio::io_context io;
  HttpClient http(io);
  test::TempTree tree;
  tree.write("key", "k\n");
  ::chmod(tree.path("key").c_str(), 0644);
  config::ProviderSettings settings;
  settings.base_url = "https://api.anthropic.com";
  settings.key_file = tree.path("key");
  std::vector<std::string> notes;
  ASSERT_TRUE(make_provider(settings, http, config::fixed_env({}), &notes));
  ASSERT_EQ(notes.size(), 1U);
  EXPECT_NE(notes[0].find("chmod 600"), std::string::npos);
}

}  // namespace
}  // namespace loopr::llm
