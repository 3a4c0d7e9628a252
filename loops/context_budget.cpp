#include "loops/context_budget.hpp"

#include <algorithm>

#include "budget/budget.hpp"

namespace loopr::loops {

void ContextBudget::measured(const llm::Usage& usage, std::size_t request_bytes) {
  const std::int64_t input =
      usage.input_tokens + usage.cache_read_tokens + usage.cache_write_tokens;
  if (input <= 0) return;  // nothing reported: bytes alone estimate
  measured_tokens(input, request_bytes);
}

void ContextBudget::measured_tokens(std::int64_t tokens, std::size_t request_bytes) {
  measured_tokens_ = tokens;
  measured_bytes_ = request_bytes;
}

void ContextBudget::refused_as_too_long(std::int64_t window, std::size_t request_bytes) {
  const std::int64_t below = estimate(request_bytes) * 9 / 10;
  const std::int64_t learned = window > 0 ? window : below;
  if (learned > 0 && (window_ <= 0 || learned < window_)) window_ = learned;
}

std::int64_t ContextBudget::estimate(std::size_t request_bytes) const {
  const std::int64_t from_bytes = estimate_tokens(request_bytes);
  // A count under one token per 12 bytes is not a tokenizer's (a scripted
  // session's made-up usage): the bytes decide.
  if (measured_tokens_ <= 0 || measured_tokens_ * 4 < estimate_tokens(measured_bytes_)) {
    return from_bytes;
  }
  if (request_bytes < measured_bytes_) {
    // Smaller than what was measured (results dropped): scaled down.
    return static_cast<std::int64_t>(static_cast<double>(measured_tokens_) *
                                     static_cast<double>(request_bytes) /
                                     static_cast<double>(measured_bytes_)) +
           1;
  }
  return measured_tokens_ + estimate_tokens(request_bytes - measured_bytes_);
}

bool ContextBudget::should_hand_off(std::size_t request_bytes) const {
  if (window_ <= 0) return false;
  const std::int64_t tokens = estimate(request_bytes);
  return tokens > threshold() || !fits(request_bytes, max_tokens_);
}

bool ContextBudget::fits(std::size_t request_bytes, std::int64_t answer_tokens) const {
  if (window_ <= 0) return true;
  return estimate(request_bytes) + answer_tokens <= window_ - window_ / 20;
}

std::int64_t ContextBudget::percent_full(std::size_t request_bytes) const {
  if (window_ <= 0) return 0;
  return estimate(request_bytes) * 100 / window_;
}

}  // namespace loopr::loops
