// WireFormat: what HttpProvider needs to know about one provider API — how a
// ModelRequest becomes an HTTP request, how a whole JSON answer or a stream of
// Server-Sent Events becomes a ModelTurn, and where the provider puts its
// error message. Implemented by AnthropicWire (Messages API) and OpenAiWire
// (Chat Completions). Codecs are pure: no I/O, no clock, no retries.
//
// Error codes the codecs return: provider_protocol (not the documented
// format), provider_unavailable (an error event inside a stream that says
// retrying may help: overloaded, server error), context_overflow (an error
// answer or event that says the request did not fit the context window; each
// codec recognises its providers' words), provider_request (another error
// event that says retrying will not help).
// Threads: thread-compatible.
#pragma once

#include <algorithm>
#include <cstdint>
#include <functional>
#include <memory>
#include <optional>
#include <string>
#include <string_view>

#include "common/error.hpp"
#include "llm/conversation.hpp"
#include "llm/credentials.hpp"
#include "llm/http_client.hpp"
#include "llm/sse_parser.hpp"
#include "proto/json_bounded.hpp"

namespace loopr::llm {

struct WireOptions {
  std::string base_url;  // without a trailing slash
  std::string model;     // used when ModelRequest::model is empty
  bool stream = true;
  bool prompt_caching = true;  // Anthropic only
  // OpenAI only: the request field that carries ModelRequest::max_tokens,
  // "max_tokens" or "max_completion_tokens".
  std::string max_tokens_field = "max_tokens";
  // OpenAI only: sent as reasoning_effort ("minimal", "low", "medium",
  // "high") when not empty.
  std::string reasoning_effort;
};

using TextSink = std::function<void(std::string_view text)>;

// Builds a ModelTurn from one response's events, in order.
class StreamAccumulator {
 public:
  virtual ~StreamAccumulator() = default;
  // One event; text deltas go to `on_text` (may be null) as they arrive.
  virtual Result<void> feed(const SseEvent& event, const TextSink& on_text) = 0;
  // The stream's own end marker was seen (message_stop, data: [DONE]).
  virtual bool complete() const = 0;
  // The turn so far; an error when the stream never said how it ended.
  virtual Result<ModelTurn> finish() = 0;
};

// Helpers both codecs share.
namespace wire {
// `text` as JSON; provider_protocol naming `what` when it is not JSON or is
// nested deeper than proto::kDefaultMaxJsonDepth (a server's bytes are not
// trusted, and nlohmann's parser recurses per level).
inline Result<nlohmann::json> parse_json(std::string_view text, std::string_view what) {
  auto value = proto::parse_json_bounded(text);
  if (!value) {
    return make_error("provider_protocol",
                      std::string(what) + " is not valid JSON (" + value.error().message + ")");
  }
  return std::move(value).value();
}
// Compact JSON; invalid UTF-8 in strings becomes U+FFFD instead of throwing.
inline std::string dump(const nlohmann::json& value) {
  return value.dump(-1, ' ', false, nlohmann::json::error_handler_t::replace);
}
// The string member `key` of `object`, or "" when absent or not a string.
inline std::string string_member(const nlohmann::json& object, const char* key) {
  if (!object.is_object()) return {};
  auto it = object.find(key);
  return it != object.end() && it->is_string() ? it->get<std::string>() : std::string();
}
// The whole-number member `key` (0 or more), or 0.
inline std::int64_t count_member(const nlohmann::json& object, const char* key) {
  if (!object.is_object()) return 0;
  auto it = object.find(key);
  if (it == object.end()) return 0;
  if (it->is_number_unsigned()) {
    return static_cast<std::int64_t>(
        std::min<std::uint64_t>(it->get<std::uint64_t>(), std::uint64_t{INT64_MAX}));
  }
  if (it->is_number_integer()) return std::max<std::int64_t>(0, it->get<std::int64_t>());
  return 0;
}
// The whole number that follows the first `marker` in `text` (spaces
// skipped), or nullopt: the counts in a provider's "prompt is too long: N
// tokens > M maximum".
std::optional<std::int64_t> number_after(std::string_view text, std::string_view marker);
// errc::context_overflow from `wire` ("anthropic") with the provider's own
// `words`; `prompt_tokens` and `context_window` go into details when above 0,
// `status` when it is an HTTP status (0: an event inside a stream).
Error context_overflow_error(std::string_view wire, std::string_view words,
                             std::int64_t prompt_tokens, std::int64_t context_window, long status);
// `base_url` + `path` without a doubled slash.
inline std::string join_url(std::string_view base_url, std::string_view path) {
  while (!base_url.empty() && base_url.back() == '/')
    base_url.remove_suffix(1);
  return std::string(base_url) + std::string(path);
}
}  // namespace wire

class WireFormat {
 public:
  virtual ~WireFormat() = default;
  virtual std::string_view name() const = 0;  // "anthropic", "openai"
  // URL, headers (the key's header only when `key` is not null) and body.
  // Timeouts and caps are the caller's to set.
  virtual HttpRequest build_request(const ModelRequest& request, const Secret* key) const = 0;
  virtual Result<ModelTurn> parse_response(std::string_view body) const = 0;
  virtual std::unique_ptr<StreamAccumulator> start_stream() const = 0;
  // The provider's own words from an error body ("overloaded_error:
  // Overloaded"); empty when the body is not the documented error shape.
  virtual std::string error_message(std::string_view body) const = 0;
  // errc::context_overflow when an error answer (HTTP `status`, `body`) says
  // the request did not fit the model's context window; nullopt for any other
  // error. The stream accumulators recognise the same words in error events.
  virtual std::optional<Error> context_overflow(long status, std::string_view body) const = 0;
  virtual const WireOptions& options() const = 0;
};

}  // namespace loopr::llm
