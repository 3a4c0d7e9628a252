// HttpProvider: a Provider that speaks one WireFormat (Anthropic Messages or
// OpenAI Chat Completions) over HttpClient (DESIGN.md §8).
//
// One complete() call: build the request once; then per attempt start an
// exchange, and either feed a text/event-stream body through SseParser into
// the wire's StreamAccumulator (text reaches on_text as it arrives) or parse
// a JSON body whole (text reaches on_text once). The response's Content-Type
// decides, so a server that ignores "stream" still works.
//
// Failures:
//   401, 403                      → errc::provider_auth at once, no retry;
//   an answer the wire recognises as "the prompt is too long" (any status;
//   413; an error event in a stream: WireFormat::context_overflow)
//                                 → errc::context_overflow at once, with the
//                                   counts in details when the provider
//                                   gave them;
//   other 4xx (not 408/409/429)   → errc::provider_request at once, with the
//                                   provider's own message and a hint;
//   408, 409, 429, 5xx, 529, a reset or failed connection, a timeout (connect,
//   first byte, idle stream), a stream that ends early, an overloaded/api
//   error event mid-stream        → retried up to max_retries times, each
//                                   announced through on_retry after its
//                                   delay is known (retry_policy.hpp), then
//                                   errc::provider_unavailable naming the
//                                   last failure;
//   an answer not in the format   → errc::provider_protocol;
//   CancelToken fired             → errc::cancelled (the exchange or the
//                                   back-off wait is aborted).
// When a stream fails after some text went to on_text, the retry streams the
// turn again from its start: a consumer showing live text should drop what
// it showed when on_retry is called.
//
// No Error or RetryNotice holds the API key: besides never putting it there,
// every text from the server is passed through redact() before it is used.
// Threads: io thread only (HttpClient's contract).
#pragma once

#include <chrono>
#include <cstdint>
#include <memory>
#include <string>

#include "config/settings.hpp"
#include "llm/credentials.hpp"
#include "llm/http_client.hpp"
#include "llm/provider.hpp"
#include "llm/retry_policy.hpp"
#include "llm/wire_format.hpp"

namespace loopr::llm {

struct HttpProviderSettings {
  int max_retries = 3;
  BackoffSettings backoff;
  std::chrono::milliseconds connect_timeout{10'000};
  std::chrono::milliseconds first_byte_timeout{120'000};
  std::chrono::milliseconds idle_timeout{60'000};
  std::int64_t context_window = 0;

  // The retry, timeout and context-window fields of a [providers.X] table.
  static HttpProviderSettings from(const config::ProviderSettings& settings);
};

class HttpProvider : public Provider {
 public:
  // `http` must outlive the provider. `random` defaults to
  // default_random_source() (tests pass a fixed one).
  HttpProvider(HttpClient& http, std::unique_ptr<WireFormat> wire, Credential credential,
               HttpProviderSettings settings, RandomSource random = {});

  asio::awaitable<Result<ModelTurn>> complete(const ModelRequest& request,
                                              const TurnCallbacks& callbacks) override;
  const std::string& model() const override { return wire_->options().model; }
  std::int64_t context_window() const override { return settings_.context_window; }

 private:
  struct Attempt;
  asio::awaitable<Attempt> attempt(const HttpRequest& request, const TurnCallbacks& callbacks);
  Attempt status_failure(const HttpHead& head, const std::string& body) const;
  Attempt transport_failure(const Error& error) const;
  Error redacted(Error error) const;
  const Secret* key() const { return credential_.key ? &*credential_.key : nullptr; }

  HttpClient& http_;
  std::unique_ptr<WireFormat> wire_;
  Credential credential_;
  HttpProviderSettings settings_;
  RandomSource random_;
};

}  // namespace loopr::llm
