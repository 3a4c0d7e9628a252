#include "mcp/call_threads.hpp"

#include <utility>

namespace loopr::mcp {

CallThreads::CallThreads(std::size_t max_idle, std::chrono::milliseconds idle_for)
    : max_idle_(max_idle), idle_for_(idle_for) {}

CallThreads::~CallThreads() {
  stop();
}

bool CallThreads::run(std::function<void()> task) {
  std::unique_lock lock(mutex_);
  if (stopping_) return false;
  join_ended();
  if (handed_.size() < idle_) {
    handed_.push_back(std::move(task));
    wake_.notify_one();
    return true;
  }
  Worker& worker = workers_.emplace_back();
  try {
    worker.thread = std::thread(
        [this, &worker, first = std::move(task)]() mutable { serve(worker, std::move(first)); });
  } catch (...) {
    workers_.pop_back();
    throw;
  }
  return true;
}

void CallThreads::serve(Worker& self, std::function<void()> task) {
  for (;;) {
    task();
    task = nullptr;
    std::unique_lock lock(mutex_);
    if (stopping_ || idle_ >= max_idle_) {
      self.ended = true;
      return;
    }
    ++idle_;
    wake_.wait_for(lock, idle_for_, [this] { return stopping_ || !handed_.empty(); });
    --idle_;
    if (handed_.empty()) {  // waited long enough, or stopping
      self.ended = true;
      return;
    }
    task = std::move(handed_.front());
    handed_.pop_front();
  }
}

void CallThreads::join_ended() {
  for (auto it = workers_.begin(); it != workers_.end();) {
    if (it->ended) {
      // An ended worker has released the mutex for good: it only returns.
      it->thread.join();
      it = workers_.erase(it);
    } else {
      ++it;
    }
  }
}

void CallThreads::stop() {
  {
    std::lock_guard lock(mutex_);
    stopping_ = true;
    wake_.notify_all();
  }
  // Workers stay in the list until joined: a running one still refers to its
  // entry. Join outside the lock, which they need to end.
  for (;;) {
    std::thread next;
    {
      std::lock_guard lock(mutex_);
      if (workers_.empty()) return;
      next = std::move(workers_.front().thread);
    }
    if (next.joinable()) next.join();
    std::lock_guard lock(mutex_);
    workers_.pop_front();
  }
}

std::size_t CallThreads::threads() const {
  std::lock_guard lock(mutex_);
  std::size_t alive = 0;
  for (const Worker& worker : workers_)
    if (!worker.ended) ++alive;
  return alive;
}

std::size_t CallThreads::idle() const {
  std::lock_guard lock(mutex_);
  return idle_;
}

}  // namespace loopr::mcp
