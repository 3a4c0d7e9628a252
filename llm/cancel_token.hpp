// CancelToken: a one-way "stop" for work in flight on the io thread (a model
// call, an HTTP exchange, a retry back-off). Whoever runs the work registers
// a hook that aborts it; cancel() runs every hook once. A hook registered
// after cancel() runs at once.
// Threads: io thread only.
#pragma once

#include <cstddef>
#include <functional>
#include <map>
#include <utility>

namespace loopr::llm {

class CancelToken {
 public:
  using Hook = std::function<void()>;

  bool cancelled() const { return cancelled_; }
  void cancel() {
    if (cancelled_) return;
    cancelled_ = true;
    auto hooks = std::move(hooks_);
    hooks_.clear();
    for (auto& [id, hook] : hooks)
      hook();
  }
  // Returns an id for remove(); 0 when the hook already ran (token cancelled).
  std::size_t on_cancel(Hook hook) {
    if (cancelled_) {
      hook();
      return 0;
    }
    hooks_.emplace(++next_id_, std::move(hook));
    return next_id_;
  }
  void remove(std::size_t id) { hooks_.erase(id); }

 private:
  bool cancelled_ = false;
  std::size_t next_id_ = 0;
  std::map<std::size_t, Hook> hooks_;
};

// Registers a hook for the life of a scope.
class CancelHook {
 public:
  CancelHook(CancelToken* token, CancelToken::Hook hook) : token_(token) {
    if (token_ != nullptr) id_ = token_->on_cancel(std::move(hook));
  }
  ~CancelHook() {
    if (token_ != nullptr && id_ != 0) token_->remove(id_);
  }
  CancelHook(const CancelHook&) = delete;
  CancelHook& operator=(const CancelHook&) = delete;

 private:
  CancelToken* token_;
  std::size_t id_ = 0;
};

}  // namespace loopr::llm
