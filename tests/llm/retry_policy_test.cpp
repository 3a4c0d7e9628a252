#include "llm/retry_policy.hpp"

#include <gtest/gtest.h>

#include "llm/provider.hpp"

namespace loopr::llm {
namespace {

using std::chrono::milliseconds;
using Headers = std::map<std::string, std::string>;

const auto kNow = std::chrono::system_clock::from_time_t(1'700'000'000);  // 2023-11-14 22:13:20 UTC

TEST(RetryPolicy, RetryableStatuses) {
  for (long status : {408L, 409L, 429L, 500L, 502L, 503L, 504L, 529L}) {
    EXPECT_TRUE(is_retryable_status(status)) << status;
  }
  for (long status : {200L, 400L, 401L, 403L, 404L, 413L, 422L, 501L}) {
    EXPECT_FALSE(is_retryable_status(status)) << status;
  }
}

TEST(RetryPolicy, RetryableErrors) {
  EXPECT_TRUE(is_retryable_error(make_error("io", "connection reset")));
  EXPECT_TRUE(is_retryable_error(make_error("timeout", "idle")));
  EXPECT_TRUE(is_retryable_error(make_error(errc::provider_unavailable, "overloaded")));
  EXPECT_FALSE(is_retryable_error(make_error(errc::provider_request, "bad")));
  EXPECT_FALSE(is_retryable_error(make_error(errc::provider_auth, "key")));
  EXPECT_FALSE(is_retryable_error(make_error(errc::cancelled, "stop")));
  EXPECT_FALSE(is_retryable_error(make_error("too_large", "body")));
}

// [llm] fallback asks another provider after an overloaded or unreachable
// one, never after a refusal (a 4xx, 429 included).
TEST(RetryPolicy, AnotherProviderIsWorthAskingAfterA5xxOrABrokenConnectionOnly) {
  auto unavailable = [](nlohmann::json details) {
    Error error = make_error(errc::provider_unavailable, "still failing");
    error.details = std::move(details);
    return error;
  };
  EXPECT_TRUE(worth_another_provider(unavailable({{"retries", 3}, {"status", 529}})));
  EXPECT_TRUE(worth_another_provider(unavailable({{"retries", 3}, {"status", 503}})));
  EXPECT_TRUE(worth_another_provider(unavailable({{"retries", 3}})));  // connection reset
  EXPECT_TRUE(worth_another_provider(unavailable(nullptr)));            // an overloaded stream
  EXPECT_FALSE(worth_another_provider(unavailable({{"retries", 3}, {"status", 429}})));
  EXPECT_FALSE(worth_another_provider(make_error(errc::provider_request, "400")));
  EXPECT_FALSE(worth_another_provider(make_error(errc::provider_auth, "401")));
  EXPECT_FALSE(worth_another_provider(make_error(errc::context_overflow, "too long")));
  EXPECT_FALSE(worth_another_provider(make_error(errc::cancelled, "stop")));
}

TEST(RetryPolicy, RetryAfterSeconds) {
  EXPECT_EQ(parse_retry_after({{"retry-after", "7"}}, kNow), milliseconds(7000));
  EXPECT_EQ(parse_retry_after({{"retry-after", " 0 "}}, kNow), milliseconds(0));
  EXPECT_EQ(parse_retry_after({{"retry-after", "-3"}}, kNow), std::nullopt);
  EXPECT_EQ(parse_retry_after({{"retry-after", "soon"}}, kNow), std::nullopt);
  EXPECT_EQ(parse_retry_after({}, kNow), std::nullopt);
  // Absurd values saturate instead of overflowing; the cap applies later.
  auto huge = parse_retry_after({{"retry-after", "99999999999999999999999"}}, kNow);
  ASSERT_TRUE(huge);
  EXPECT_GT(*huge, milliseconds(0));
}

TEST(RetryPolicy, RetryAfterHttpDate) {
  EXPECT_EQ(parse_retry_after({{"retry-after", "Tue, 14 Nov 2023 22:13:50 GMT"}}, kNow),
            milliseconds(30000));
  EXPECT_EQ(parse_retry_after({{"retry-after", "Tue, 14 Nov 2023 22:00:00 GMT"}}, kNow),
            milliseconds(0));
}

TEST(RetryPolicy, RetryAfterMsWins) {
  EXPECT_EQ(parse_retry_after({{"retry-after-ms", "250"}, {"retry-after", "7"}}, kNow),
            milliseconds(250));
  EXPECT_EQ(parse_retry_after({{"retry-after-ms", "1.5"}}, kNow), milliseconds(2));
  EXPECT_EQ(parse_retry_after({{"retry-after-ms", "12.000"}}, kNow), milliseconds(12));
  EXPECT_EQ(parse_retry_after({{"retry-after-ms", "x"}, {"retry-after", "2"}}, kNow),
            milliseconds(2000));
}

TEST(RetryPolicy, ExponentialBackoffWithEqualJitter) {
  BackoffSettings settings{milliseconds(100), milliseconds(60000)};
  auto low = [] { return 0.0; };
  auto high = [] { return 0.999999; };
  auto mid = [] { return 0.5; };
  EXPECT_EQ(retry_delay(1, std::nullopt, settings, low), milliseconds(50));
  EXPECT_EQ(retry_delay(1, std::nullopt, settings, high), milliseconds(100));
  EXPECT_EQ(retry_delay(2, std::nullopt, settings, high), milliseconds(200));
  EXPECT_EQ(retry_delay(3, std::nullopt, settings, mid), milliseconds(300));
  EXPECT_EQ(retry_delay(4, std::nullopt, settings, low), milliseconds(400));
}

TEST(RetryPolicy, BackoffIsCapped) {
  BackoffSettings settings{milliseconds(1000), milliseconds(5000)};
  auto high = [] { return 0.999999; };
  EXPECT_EQ(retry_delay(10, std::nullopt, settings, high), milliseconds(5000));
  EXPECT_LE(retry_delay(1000, std::nullopt, settings, high), milliseconds(5000));
  EXPECT_GE(retry_delay(1000, std::nullopt, settings, [] { return 0.0; }), milliseconds(2500));
}

TEST(RetryPolicy, ServerDelayHonouredAndCapped) {
  BackoffSettings settings{milliseconds(1000), milliseconds(5000)};
  auto never = []() -> double {
    ADD_FAILURE() << "no jitter with a server delay";
    return 0.0;
  };
  EXPECT_EQ(retry_delay(1, milliseconds(1234), settings, never), milliseconds(1234));
  EXPECT_EQ(retry_delay(1, milliseconds(999999), settings, never), milliseconds(5000));
  EXPECT_EQ(retry_delay(3, milliseconds(0), settings, never), milliseconds(0));
}

TEST(RetryPolicy, DefaultRandomSourceStaysInRange) {
  auto random = default_random_source();
  for (int i = 0; i < 1000; ++i) {
    double draw = random();
    ASSERT_GE(draw, 0.0);
    ASSERT_LT(draw, 1.0);
  }
}

}  // namespace
}  // namespace loopr::llm
