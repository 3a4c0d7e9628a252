#include "llm/http_provider.hpp"

#include <algorithm>
#include <asio/redirect_error.hpp>
#include <asio/steady_timer.hpp>
#include <asio/this_coro.hpp>
#include <asio/use_awaitable.hpp>
#include <optional>
#include <utility>
#include <vector>

#include "llm/sse_parser.hpp"

namespace loopr::llm {

namespace {

// What an error answer's body may take before the rest is dropped.
constexpr std::size_t kMaxErrorBody = 64 * 1024;
constexpr std::size_t kMaxQuotedBody = 200;

Error cancelled_error() {
  return make_error(errc::cancelled, "the model call was cancelled");
}

bool is_cancelled(const TurnCallbacks& callbacks) {
  return callbacks.cancel != nullptr && callbacks.cancel->cancelled();
}

// A short, printable quote of a body that is not the provider's error shape
// (a proxy's HTML page, say).
std::string quote_body(const std::string& body) {
  std::string out;
  for (char c : body) {
    if (out.size() >= kMaxQuotedBody) {
      out += "...";
      break;
    }
    auto byte = static_cast<unsigned char>(c);
    out += (byte < 0x20 || byte == 0x7f) ? ' ' : c;
  }
  while (!out.empty() && out.back() == ' ')
    out.pop_back();
  return out;
}

std::string status_hint(long status) {
  switch (status) {
    case 400:
    case 422:
      return "the provider refused the request as invalid: check model and max_tokens for this "
             "provider in loopr.toml, or shorten the conversation if it is too long";
    case 404:
      return "check base_url and model for this provider in loopr.toml";
    default:
      return "retrying the same request will not help; check this provider's settings in "
             "loopr.toml";
  }
}

}  // namespace

struct HttpProvider::Attempt {
  std::optional<ModelTurn> turn;
  Error error;
  bool retryable = false;
  std::optional<std::chrono::milliseconds> retry_after;
  std::string reason;  // for RetryNotice and the final error
  long status = 0;     // the HTTP status of a refused attempt; 0: none (a broken connection)
};

HttpProviderSettings HttpProviderSettings::from(const config::ProviderSettings& settings) {
  HttpProviderSettings out;
  out.max_retries = static_cast<int>(std::clamp<std::int64_t>(settings.max_retries, 0, 1000));
  out.backoff.base = std::chrono::milliseconds(settings.retry_base_delay_ms);
  out.backoff.max = std::chrono::milliseconds(settings.retry_max_delay_ms);
  out.connect_timeout = std::chrono::milliseconds(settings.connect_timeout_ms);
  out.first_byte_timeout = std::chrono::milliseconds(settings.first_byte_timeout_ms);
  out.idle_timeout = std::chrono::milliseconds(settings.idle_timeout_ms);
  out.context_window = settings.context_window;
  return out;
}

HttpProvider::HttpProvider(HttpClient& http, std::unique_ptr<WireFormat> wire,
                           Credential credential, HttpProviderSettings settings,
                           RandomSource random)
    : http_(http),
      wire_(std::move(wire)),
      credential_(std::move(credential)),
      settings_(settings),
      random_(random ? std::move(random) : default_random_source()) {}

Error HttpProvider::redacted(Error error) const {
  error.message = redact(std::move(error.message), key());
  error.hint = redact(std::move(error.hint), key());
  return error;
}

HttpProvider::Attempt HttpProvider::transport_failure(const Error& error) const {
  Attempt out;
  out.error = error;
  out.reason = error.message;
  if (error.code == loopr::errc::io || error.code == loopr::errc::timeout) {
    out.retryable = true;
  } else if (error.code == errc::cancelled || error.code == "cancelled") {
    out.error = cancelled_error();
  } else {
    out.error = make_error(
        errc::provider_protocol,
        std::string(wire_->name()) + " at " + wire_->options().base_url + ": " + error.message,
        error.hint);
  }
  return out;
}

HttpProvider::Attempt HttpProvider::status_failure(const HttpHead& head,
                                                   const std::string& body) const {
  Attempt out;
  out.status = head.status;
  std::string words = wire_->error_message(body);
  if (words.empty()) words = quote_body(body);
  out.reason = "HTTP " + std::to_string(head.status) + (words.empty() ? "" : " " + words);
  const std::string name(wire_->name());
  if (head.status == 401 || head.status == 403) {
    std::string message = name + " refused ";
    message += key() != nullptr ? "the API key from " + credential_.source
                                : "a request without an API key";
    message += " (" + out.reason + ")";
    std::string hint = key() != nullptr
                           ? "check the key in " + credential_.source +
                                 ": it may be mistyped, revoked, or lack access to model " +
                                 wire_->options().model
                           : "set api_key_env or key_file for this provider in loopr.toml";
    out.error = make_error(errc::provider_auth, std::move(message), std::move(hint));
    return out;
  }
  // Before the retryable statuses: a server that answers an overflow with a
  // 5xx would only be asked the same again.
  if (auto overflow = wire_->context_overflow(head.status, body)) {
    out.error = std::move(*overflow);
    return out;
  }
  if (is_retryable_status(head.status)) {
    out.retryable = true;
    out.retry_after = parse_retry_after(head.headers, std::chrono::system_clock::now());
    out.error = make_error(errc::provider_unavailable, name + ": " + out.reason);
    return out;
  }
  out.error = make_error(errc::provider_request, name + " refused the request (" + out.reason + ")",
                         status_hint(head.status));
  out.error.details = {{"status", head.status}};
  return out;
}

asio::awaitable<HttpProvider::Attempt> HttpProvider::attempt(const HttpRequest& request,
                                                             const TurnCallbacks& callbacks) {
  std::shared_ptr<HttpExchange> exchange = http_.start(request);
  CancelHook hook(callbacks.cancel, [exchange] { exchange->cancel(); });

  auto head = co_await exchange->head();
  if (!head) co_return transport_failure(head.error());

  if (head->status < 200 || head->status >= 300) {
    std::string body;
    for (;;) {
      auto chunk = co_await exchange->next_chunk();
      if (!chunk || !*chunk) break;
      body += **chunk;
      if (body.size() > kMaxErrorBody) {
        body.resize(kMaxErrorBody);
        exchange->cancel();
        break;
      }
    }
    co_return status_failure(*head, body);
  }

  auto content_type = head->headers.find("content-type");
  bool event_stream = content_type != head->headers.end() &&
                      content_type->second.find("text/event-stream") != std::string::npos;
  Attempt out;
  if (!event_stream) {
    std::string body;
    for (;;) {
      auto chunk = co_await exchange->next_chunk();
      if (!chunk) co_return transport_failure(chunk.error());
      if (!*chunk) break;
      body += **chunk;
    }
    auto turn = wire_->parse_response(body);
    if (!turn) {
      out.error = std::move(turn).error();
      out.reason = out.error.message;
      out.retryable = is_retryable_error(out.error);
      co_return out;
    }
    if (callbacks.on_text && !turn->text.empty()) callbacks.on_text(turn->text);
    out.turn = std::move(*turn);
    co_return out;
  }

  SseParser parser;
  auto stream = wire_->start_stream();
  std::vector<SseEvent> events;
  while (!stream->complete()) {
    auto chunk = co_await exchange->next_chunk();
    if (!chunk) co_return transport_failure(chunk.error());
    if (!*chunk) break;
    events.clear();
    if (auto fed = parser.feed(**chunk, events); !fed) {
      out.error = make_error(errc::provider_protocol,
                             std::string(wire_->name()) + " stream: " + fed.error().message,
                             fed.error().hint);
      out.reason = out.error.message;
      co_return out;
    }
    for (const auto& event : events) {
      if (auto r = stream->feed(event, callbacks.on_text); !r) {
        out.error = std::move(r).error();
        out.reason = out.error.message;
        out.retryable = is_retryable_error(out.error);
        co_return out;
      }
      if (stream->complete()) break;
    }
  }
  // The stream said it is done: what follows (a close) is not waited for.
  exchange->cancel();
  auto turn = stream->finish();
  if (!turn) {
    out.error = std::move(turn).error();
    out.reason = out.error.message;
    out.retryable = is_retryable_error(out.error);
    co_return out;
  }
  out.turn = std::move(*turn);
  co_return out;
}

asio::awaitable<Result<ModelTurn>> HttpProvider::complete(const ModelRequest& request,
                                                          const TurnCallbacks& callbacks) {
  HttpRequest http = wire_->build_request(request, key());
  http.connect_timeout = settings_.connect_timeout;
  http.first_byte_timeout = settings_.first_byte_timeout;
  http.idle_timeout = settings_.idle_timeout;

  for (int retry = 0;; ++retry) {
    if (is_cancelled(callbacks)) co_return cancelled_error();
    Attempt outcome = co_await attempt(http, callbacks);
    if (is_cancelled(callbacks)) co_return cancelled_error();
    if (outcome.turn) co_return std::move(*outcome.turn);
    if (!outcome.retryable) co_return redacted(std::move(outcome.error));

    std::string reason = redact(outcome.reason, key());
    if (retry >= settings_.max_retries) {
      std::string message = std::string(wire_->name()) + " at " + wire_->options().base_url;
      message += settings_.max_retries == 0
                     ? " failed (retries are off): " + reason
                     : " still failing after " + std::to_string(settings_.max_retries) +
                           (settings_.max_retries == 1 ? " retry: " : " retries: ") + reason;
      Error error = make_error(
          errc::provider_unavailable, std::move(message),
          "the provider is overloaded or unreachable: try again later, or raise max_retries / "
          "retry_max_delay_ms for this provider in loopr.toml");
      // The last attempt's HTTP status (absent for a broken connection or a
      // stream that failed): loops fall back to another provider on a 5xx
      // but not on a 429 (config::LlmSettings::fallback).
      error.details = {{"retries", settings_.max_retries}};
      if (outcome.status != 0) error.details["status"] = outcome.status;
      co_return error;
    }

    RetryNotice notice;
    notice.attempt = retry + 1;
    notice.max_retries = settings_.max_retries;
    notice.delay = retry_delay(notice.attempt, outcome.retry_after, settings_.backoff, random_);
    notice.reason = reason;
    if (callbacks.on_retry) callbacks.on_retry(notice);

    asio::steady_timer timer(co_await asio::this_coro::executor, notice.delay);
    CancelHook hook(callbacks.cancel, [&timer] { timer.cancel(); });
    std::error_code ignored;
    co_await timer.async_wait(asio::redirect_error(asio::use_awaitable, ignored));
  }
}

}  // namespace loopr::llm
