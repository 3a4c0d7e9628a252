// Which failed model calls are worth another attempt, and how long to wait
// before it (DESIGN.md §8). Pure functions: the clock and the random source
// are parameters, so every rule is unit-tested.
//
// Retryable: HTTP 408, 409, 429, 500, 502, 503, 504 and Anthropic's 529; a
// transport failure (errc::io: reset, DNS, TLS; errc::timeout: connect,
// first byte, idle stream); an error event inside a stream that says the
// provider is overloaded or failed (the wire codecs report those with code
// errc::provider_unavailable).
//
// Delay before retry number `attempt` (1-based): the server's retry-after-ms
// or retry-after when it sent one; otherwise base * 2^(attempt-1) with
// "equal jitter" (a uniform draw in [half, all] of that). Always capped at
// the configured maximum.
#pragma once

#include <chrono>
#include <functional>
#include <map>
#include <optional>
#include <string>
#include <string_view>

#include "common/error.hpp"

namespace loopr::llm {

bool is_retryable_status(long status);
// errc::io, errc::timeout (transport) and errc::provider_unavailable (a
// stream's overloaded/api error event).
bool is_retryable_error(const Error& error);

// The server's requested wait, from headers with lower-case names:
// "retry-after-ms" (milliseconds, may be fractional) wins over "retry-after"
// (delta-seconds, or an HTTP-date relative to `now`; a date in the past is
// 0). nullopt when neither is present or parseable.
std::optional<std::chrono::milliseconds> parse_retry_after(
    const std::map<std::string, std::string>& headers, std::chrono::system_clock::time_point now);

struct BackoffSettings {
  std::chrono::milliseconds base{1000};
  std::chrono::milliseconds max{60000};
};

// Returns a uniform draw from [0, 1).
using RandomSource = std::function<double()>;
// A RandomSource seeded from std::random_device (the production default).
RandomSource default_random_source();

std::chrono::milliseconds retry_delay(int attempt, std::optional<std::chrono::milliseconds> server,
                                      const BackoffSettings& settings, const RandomSource& random);

}  // namespace loopr::llm
