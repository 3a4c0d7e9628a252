// Provider: one LLM behind loopr's neutral conversation model
// (llm/conversation.hpp). Implementations: HttpProvider with the Anthropic
// Messages or the OpenAI Chat Completions wire format (make_provider), and
// ScriptedProvider, which replays a recorded session.
//
// complete() makes one model call, retries what retrying can fix (429, 5xx,
// Anthropic's 529, a dropped connection, an idle stream) with exponential
// back-off and jitter honouring retry-after / retry-after-ms up to the
// configured cap, announcing each retry through TurnCallbacks::on_retry, and
// streams text through on_text when streaming is on. Errors it returns carry
// one of the codes below; their messages never contain the API key.
// Threads: io thread only.
#pragma once

#include <asio/awaitable.hpp>
#include <chrono>
#include <cstdint>
#include <functional>
#include <memory>
#include <string>
#include <string_view>

#include "common/error.hpp"
#include "llm/cancel_token.hpp"
#include "llm/conversation.hpp"

namespace loopr::llm {

namespace errc {
// The provider codes every remote API shares (common/error.hpp).
using loopr::errc::provider_auth;
using loopr::errc::provider_protocol;
using loopr::errc::provider_request;
using loopr::errc::provider_unavailable;
// The request (its input plus max_tokens) did not fit the model's context
// window — Anthropic's "prompt is too long", OpenAI's context_length_exceeded,
// llama.cpp's exceed_context_size_error, vLLM's "maximum context length", an
// HTTP 413. Retrying the same request cannot help: the caller should shrink
// the conversation (or lower max_tokens). details: "prompt_tokens" (the
// input the provider counted) and "context_window" (the model's window), as
// integers, each only when the provider said it; "status" when it came as an
// HTTP status.
inline constexpr const char* context_overflow = "context_overflow";
// The call was cancelled through its CancelToken.
inline constexpr const char* cancelled = "cancelled";
}  // namespace errc

struct RetryNotice {
  int attempt = 0;      // 1 for the first retry
  int max_retries = 0;  // the configured cap
  std::chrono::milliseconds delay{0};
  std::string reason;  // "HTTP 529 overloaded_error: Overloaded", "connection reset", ...
};

struct TurnCallbacks {
  // Model text as it arrives (streamed), or the whole text once (not streamed).
  std::function<void(std::string_view text)> on_text;
  std::function<void(const RetryNotice&)> on_retry;
  // Cancels the call (and any back-off wait); may be null.
  CancelToken* cancel = nullptr;
};

class Provider {
 public:
  virtual ~Provider() = default;
  virtual asio::awaitable<Result<ModelTurn>> complete(const ModelRequest& request,
                                                      const TurnCallbacks& callbacks) = 0;
  // The model name calls default to, for display ("claude-sonnet-4-5").
  virtual const std::string& model() const = 0;
  // Tokens the model accepts in one call (configured; 0 when unknown).
  virtual std::int64_t context_window() const = 0;
};

}  // namespace loopr::llm
