#include "retry/http_retry.hpp"

#include <curl/curl.h>

#include <algorithm>
#include <cmath>
#include <memory>
#include <random>

#include "common/ascii_text.hpp"

namespace loopr {

namespace {

bool all_digits(std::string_view text) {
  return !text.empty() &&
         std::all_of(text.begin(), text.end(), [](char c) { return c >= '0' && c <= '9'; });
}

// A count of whole units; saturates far beyond any cap instead of overflowing.
long long parse_count(std::string_view digits) {
  long long value = 0;
  for (char c : digits) {
    value = value * 10 + (c - '0');
    if (value > 1'000'000'000'000LL) return 1'000'000'000'000LL;
  }
  return value;
}

std::optional<std::chrono::milliseconds> parse_milliseconds(std::string_view text) {
  text = trim_blanks(text);
  auto dot = text.find('.');
  std::string_view whole = text.substr(0, dot);
  if (!all_digits(whole)) return std::nullopt;
  if (dot != std::string_view::npos && !all_digits(text.substr(dot + 1)) &&
      dot + 1 != text.size()) {
    return std::nullopt;
  }
  long long ms = parse_count(whole);
  // A fraction rounds up: waiting slightly longer never hurts.
  if (dot != std::string_view::npos && text.find_first_not_of("0", dot + 1) != std::string::npos) {
    ++ms;
  }
  return std::chrono::milliseconds(ms);
}

std::optional<std::chrono::milliseconds> parse_retry_after_value(
    std::string_view text, std::chrono::system_clock::time_point now) {
  text = trim_blanks(text);
  if (all_digits(text)) return std::chrono::milliseconds(parse_count(text) * 1000);
  std::string date(text);
  time_t when = curl_getdate(date.c_str(), nullptr);
  if (when == -1) return std::nullopt;
  auto at = std::chrono::system_clock::from_time_t(when);
  if (at <= now) return std::chrono::milliseconds(0);
  return std::chrono::ceil<std::chrono::milliseconds>(at - now);
}

}  // namespace

bool is_retryable_status(long status) {
  switch (status) {
    case 408:
    case 409:
    case 429:
    case 500:
    case 502:
    case 503:
    case 504:
    case 529:
      return true;
    default:
      return false;
  }
}

std::optional<std::chrono::milliseconds> parse_retry_after(
    const std::map<std::string, std::string>& headers, std::chrono::system_clock::time_point now) {
  if (auto it = headers.find("retry-after-ms"); it != headers.end()) {
    if (auto ms = parse_milliseconds(it->second)) return ms;
  }
  if (auto it = headers.find("retry-after"); it != headers.end()) {
    return parse_retry_after_value(it->second, now);
  }
  return std::nullopt;
}

RandomSource default_random_source() {
  auto engine = std::make_shared<std::mt19937_64>(std::random_device{}());
  return [engine] { return std::uniform_real_distribution<double>(0.0, 1.0)(*engine); };
}

std::chrono::milliseconds retry_delay(int attempt, std::optional<std::chrono::milliseconds> server,
                                      const BackoffSettings& settings, const RandomSource& random) {
  const auto cap = std::max(settings.max, std::chrono::milliseconds(0));
  if (server) return std::clamp(*server, std::chrono::milliseconds(0), cap);
  // base * 2^(attempt-1), computed in double so a large attempt saturates.
  double exponential = static_cast<double>(settings.base.count()) *
                       std::pow(2.0, static_cast<double>(std::max(attempt, 1) - 1));
  double capped = std::min(exponential, static_cast<double>(cap.count()));
  double draw = random ? std::clamp(random(), 0.0, 1.0) : 1.0;
  double jittered = capped / 2.0 + capped / 2.0 * draw;
  auto ms = std::chrono::milliseconds(static_cast<long long>(std::llround(jittered)));
  return std::clamp(ms, std::chrono::milliseconds(0), cap);
}

}  // namespace loopr
