// ContextBudget: how many tokens the next model request of an iteration
// will hold, against the provider's context window (issue 24).
//
// Counted, not guessed per call: after each model call the provider reports
// the request's input (input + cache read + cache write tokens); the next
// request is that plus what the conversation grew by since, at a
// conservative 3 bytes a token (estimate_tokens). A provider that reports
// nothing, or a count under a token per 12 bytes (a scripted session's
// made-up usage), leaves the estimate to the bytes alone. A provider's own
// count from a "prompt is too long" error is taken as a measurement too.
//
// should_hand_off(): the estimate passes handoff_percent of the window, or
// the estimate plus the answer's max_tokens passes the window itself.
// Pure: no I/O. Threads: one owner.
#pragma once

#include <cstddef>
#include <cstdint>

#include "llm/conversation.hpp"

namespace loopr::loops {

class ContextBudget {
 public:
  // window: the provider's context window in tokens (0: unknown, never full).
  ContextBudget(std::int64_t window, std::int64_t handoff_percent, std::int64_t max_tokens)
      : window_(window), percent_(handoff_percent), max_tokens_(max_tokens) {}

  // A fresh context: no measurement yet.
  void reset() { measured_tokens_ = 0, measured_bytes_ = 0; }
  // The provider's usage for a request of `request_bytes` bytes.
  void measured(const llm::Usage& usage, std::size_t request_bytes);
  // The provider counted `tokens` for a request of `request_bytes` (an
  // overflow error that says how many).
  void measured_tokens(std::int64_t tokens, std::size_t request_bytes);

  // The provider refused a request as too long: its window is smaller than
  // configured. `window` as the provider said it (0: unknown, then below
  // the refused request's estimate, 90 % of it).
  void refused_as_too_long(std::int64_t window, std::size_t request_bytes);

  // Tokens a request of `request_bytes` bytes is expected to hold.
  std::int64_t estimate(std::size_t request_bytes) const;
  // The threshold in tokens (0 when the window is unknown).
  std::int64_t threshold() const { return window_ * percent_ / 100; }
  std::int64_t window() const { return window_; }
  std::int64_t max_tokens() const { return max_tokens_; }
  bool should_hand_off(std::size_t request_bytes) const;
  // Whether a request of `request_bytes` with an answer of `answer_tokens`
  // fits the window at all (with a 5 % margin for the estimate's error).
  bool fits(std::size_t request_bytes, std::int64_t answer_tokens) const;
  // The estimate as a share of the window, in percent (0 when unknown).
  std::int64_t percent_full(std::size_t request_bytes) const;

 private:
  std::int64_t window_;
  std::int64_t percent_;
  std::int64_t max_tokens_;
  std::int64_t measured_tokens_ = 0;
  std::size_t measured_bytes_ = 0;
};

}  // namespace loopr::loops
