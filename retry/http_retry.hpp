// When a failed HTTP request to a remote API is worth another attempt, and
// how long to wait before it — shared by the model providers (llm/) and the
// web search providers (loopr-fetch/), so the sandboxed fetcher links this
// small room instead of the provider library. Pure functions: the clock and
// the random source are parameters, so every rule is unit-tested
// (tests/llm/retry_policy_test.cpp).
//
// Retryable: HTTP 408, 409, 429, 500, 502, 503, 504 and Anthropic's 529.
//
// Delay before retry number `attempt` (1-based): the server's retry-after-ms
// or retry-after when it sent one; otherwise base * 2^(attempt-1) with
// "equal jitter" (a uniform draw in [half, all] of that). Always capped at
// the configured maximum. An HTTP-date is read with libcurl's curl_getdate
// (the three date formats HTTP allows).
#pragma once

#include <chrono>
#include <functional>
#include <map>
#include <optional>
#include <string>

namespace loopr {

bool is_retryable_status(long status);

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

}  // namespace loopr
