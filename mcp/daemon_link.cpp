#include "mcp/daemon_link.hpp"

#include <utility>

namespace loopr::mcp {

void CallControl::on_abort(std::function<void()> action) {
  bool run_now;
  {
    std::lock_guard lock(mutex_);
    action_ = std::move(action);
    run_now = aborted_;
  }
  if (run_now) abort();
}

void CallControl::clear() {
  std::lock_guard lock(mutex_);
  action_ = nullptr;
}

void CallControl::abort() {
  std::function<void()> action;
  {
    std::lock_guard lock(mutex_);
    aborted_ = true;
    action = action_;
  }
  if (action) action();
}

bool CallControl::aborted() const {
  std::lock_guard lock(mutex_);
  return aborted_;
}

}  // namespace loopr::mcp
