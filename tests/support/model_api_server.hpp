// ModelApiServer: a loopback HTTP/1.1 server that plays a model API the way
// the real ones behave, for tests and benches: the Anthropic Messages API at
// POST /v1/messages and the OpenAI Chat Completions API at POST
// /v1/chat/completions, each streamed (Server-Sent Events, several writes)
// when the body says "stream": true and plain JSON otherwise.
//
// Per request, in order:
//   1. parse and check it as the real API does (model_api_prompt.hpp: the
//      documented 400s for a malformed request, tool results without their
//      tool call, more than 4 cache breakpoints);
//   2. count its input tokens (count_tokens: ceil(UTF-8 bytes / 4) per
//      piece, the rule in model_api_prompt.hpp) and refuse it, as the real
//      API words it, when it does not fit the context window (with
//      max_tokens);
//   3. ask the policy for the turn (ModelCall in, ModelReply out);
//   4. bill prompt caching (prompt_cache.hpp: Anthropic breakpoints with the
//      20-block lookback, 5-minute entries, nothing under 1024 tokens;
//      OpenAI's automatic prefix cache) and answer in the wire format, usage
//      where the real API puts it: Anthropic input_tokens,
//      cache_creation_input_tokens, cache_read_input_tokens in
//      message_start (output_tokens 1 there) and the whole count of
//      output_tokens in message_delta, or all four in the JSON body's usage;
//      OpenAI prompt_tokens with prompt_tokens_details.cached_tokens,
//      completion_tokens, in the body or in the last chunk before [DONE]
//      (when stream_options.include_usage).
// Ids look like the real ones (msg_01..., toolu_01..., chatcmpl-...,
// call_...) and come from a seeded generator, so a run is reproducible.
// Every request is recorded (ServedRequest) whether answered or refused.
//
// The clock the cache uses is steady_clock plus an offset advance_clock()
// moves forward, so a test can let entries expire without waiting.
// Threads: serves on its own thread (ScriptedHttpServer, one request at a
// time); the policy runs there. answer() may also be called directly (it is
// serialized); requests(), totals() and advance_clock() are thread-safe.
#pragma once

#include <atomic>
#include <chrono>
#include <cstdint>
#include <functional>
#include <memory>
#include <mutex>
#include <nlohmann/json.hpp>
#include <random>
#include <string>
#include <vector>

#include "tests/support/model_api_prompt.hpp"
#include "tests/support/prompt_cache.hpp"
#include "tests/support/scripted_http_server.hpp"

namespace loopr::test {

// What the policy sees of one request (both wire formats alike).
struct ModelCall {
  ModelApi api = ModelApi::anthropic;
  // Requests answered with a turn before this one: 0 for the first. Refused
  // requests do not count, so a retried request asks the same turn again.
  std::size_t turn = 0;
  std::string model;
  std::string system;
  std::vector<CallMessage> messages;
  std::vector<std::string> tools;  // names offered
  std::int64_t max_tokens = 0;
  bool stream = false;
  std::int64_t input_tokens = 0;  // counted, the whole prompt
  nlohmann::json body;            // the request as sent

  // The last message's tool_result blocks (the results of the previous
  // turn's calls), in order.
  std::vector<const CallBlock*> last_tool_results() const;
};

struct ReplyToolCall {
  std::string name;
  nlohmann::json input = nlohmann::json::object();
};

// The policy's answer: text and/or tool calls, or an error to send instead.
struct ModelReply {
  std::string text;
  std::vector<ReplyToolCall> tool_calls;
  // Anthropic's names (end_turn, tool_use, max_tokens, stop_sequence,
  // refusal), mapped for OpenAI; empty: tool_use with calls, else end_turn.
  std::string stop_reason;
  std::int64_t output_tokens = -1;  // < 0: counted from the text and calls
  int error_status = 0;             // > 0: answer this error instead (e.g. 529)
  std::string error_type;           // "overloaded_error", ...
  std::string error_message;

  static ModelReply say(std::string text);
  static ModelReply call(std::string name, nlohmann::json input, std::string text = {});
  static ModelReply error(int status, std::string type, std::string message);
};

using ModelPolicy = std::function<ModelReply(const ModelCall&)>;

// Token classes as the API billed them.
struct ServedUsage {
  std::int64_t input_tokens = 0;  // uncached (Anthropic); OpenAI: prompt minus cached
  std::int64_t cache_read_tokens = 0;
  std::int64_t cache_write_tokens = 0;
  std::int64_t output_tokens = 0;

  ServedUsage& operator+=(const ServedUsage& other);
};

struct ServedRequest {
  ModelApi api = ModelApi::anthropic;
  std::string path;
  std::string body;
  bool stream = false;
  int status = 0;        // 200, or the error's status
  bool refused = false;  // answered with an error
  std::string error_type;
  std::string error_message;
  std::int64_t input_tokens = 0;  // counted (0 when the body could not be parsed)
  std::int64_t max_tokens = 0;
  std::size_t breakpoints = 0;
  ServedUsage usage;                               // as answered; zero when refused
  std::vector<std::string> tool_calls;             // names of the calls answered
  std::chrono::steady_clock::time_point received;  // real time
  std::chrono::steady_clock::time_point answered;  // reply built, before it is written
};

struct ModelApiOptions {
  std::int64_t context_window = 200000;
  std::int64_t max_output_tokens = 64000;  // a larger max_tokens is refused
  std::int64_t min_cacheable_tokens = 1024;
  std::size_t cache_lookback_blocks = 20;
  std::chrono::seconds cache_ttl{300};
  std::int64_t openai_cache_granularity = 128;
  std::uint64_t id_seed = 1;
  std::size_t stream_piece_bytes = 48;  // text and argument deltas at most this long
};

class ModelApiServer {
 public:
  // Listens on 127.0.0.1 on a free port; throws std::runtime_error if it cannot.
  explicit ModelApiServer(ModelPolicy policy, ModelApiOptions options = {});
  ~ModelApiServer();
  ModelApiServer(const ModelApiServer&) = delete;
  ModelApiServer& operator=(const ModelApiServer&) = delete;

  // Anthropic's base_url; OpenAI's is base_url() + "/v1".
  std::string base_url() const;
  // The reply to one request, recorded as if it came over HTTP.
  ScriptedReply answer(const RecordedRequest& request);

  std::vector<ServedRequest> requests() const;
  ServedUsage totals() const;  // over the answered requests
  std::int64_t largest_request_tokens() const;
  void advance_clock(std::chrono::seconds by);
  CacheClock::time_point now() const;

 private:
  ScriptedReply refuse(ServedRequest record, ModelApi api, const ApiError& error);
  ScriptedReply encode(const ParsedPrompt& prompt, const ModelReply& reply,
                       const ServedUsage& usage);
  std::string new_id(std::string_view prefix, std::size_t length);
  void record(ServedRequest record);

  ModelPolicy policy_;
  ModelApiOptions options_;
  std::mutex answer_mutex_;  // serializes answer(): the caches, the ids, turn_
  AnthropicPromptCache anthropic_cache_;
  OpenAiPrefixCache openai_cache_;
  std::mt19937_64 ids_;
  std::size_t turn_ = 0;
  std::atomic<std::int64_t> clock_offset_s_{0};
  mutable std::mutex records_mutex_;
  std::vector<ServedRequest> records_;
  std::unique_ptr<ScriptedHttpServer> http_;  // last: stopped before the rest goes
};

}  // namespace loopr::test
