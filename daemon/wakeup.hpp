// Wakeup: one coroutine waits until another part of the io thread calls
// notify(), or until a deadline. Built on a steady_timer that never expires
// by itself: notify() cancels the wait. A notify() before the wait is not
// lost (the flag stays set until reset()).
// Threads: io thread only, like every daemon object.
#pragma once

#include <asio/awaitable.hpp>
#include <asio/redirect_error.hpp>
#include <asio/steady_timer.hpp>
#include <asio/use_awaitable.hpp>
#include <chrono>

namespace loopr::daemon {

class Wakeup {
 public:
  using Clock = std::chrono::steady_clock;

  explicit Wakeup(const asio::any_io_executor& executor)
      : timer_(executor, Clock::time_point::max()) {}

  // True once notified; false when the deadline passed first.
  asio::awaitable<bool> wait_until(Clock::time_point deadline) {
    while (!notified_) {
      if (Clock::now() >= deadline) co_return false;
      timer_.expires_at(deadline);
      std::error_code ignored;
      co_await timer_.async_wait(asio::redirect_error(asio::use_awaitable, ignored));
    }
    co_return true;
  }
  asio::awaitable<void> wait() { co_await wait_until(Clock::time_point::max()); }

  void notify() {
    notified_ = true;
    timer_.cancel();
  }
  void reset() { notified_ = false; }
  bool notified() const { return notified_; }

 private:
  asio::steady_timer timer_;
  bool notified_ = false;
};

}  // namespace loopr::daemon
