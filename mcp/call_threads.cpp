#include "mcp/call_threads.hpp"

#include <utility>

namespace loopr::mcp {

CallThreads::CallThreads(std::size_t max_idle, std::chrono::milliseconds idle_for)
    : max_idle_(max_idle), idle_for_(idle_for) {}

CallThreads::~CallThreads() {
  stop();
}

bool CallThreads::run(std::function<void()> task) {
  std::vector<std::thread> ended;
  {
    std::lock_guard lock(mutex_);
    if (stopping_) return false;
    ended = take_ended();
    if (handed_.size() < idle_) {
      handed_.push_back(std::move(task));
      wake_.notify_one();
    } else {
      Worker& worker = workers_.emplace_back();
      try {
        worker.thread = std::thread([this, &worker, first = std::move(task)]() mutable {
          serve(worker, std::move(first));
        });
      } catch (...) {
        workers_.pop_back();
        for (std::thread& thread : ended)
          thread.join();
        throw;
      }
    }
  }
  // Outside the lock: a thread's exit (its thread-local destructors) must
  // not hold up the workers going idle.
  for (std::thread& thread : ended)
    thread.join();
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

std::vector<std::thread> CallThreads::take_ended() {
  std::vector<std::thread> ended;
  for (auto it = workers_.begin(); it != workers_.end();) {
    if (it->ended) {
      // An ended worker has released the mutex for good: it only returns.
      ended.push_back(std::move(it->thread));
      it = workers_.erase(it);
    } else {
      ++it;
    }
  }
  return ended;
}

void CallThreads::stop() {
  {
    std::lock_guard lock(mutex_);
    ++stop_calls_;
  }
  struct Leave {
    CallThreads& self;
    ~Leave() {
      std::lock_guard lock(self.mutex_);
      --self.stop_calls_;
    }
  } leave{*this};
  std::lock_guard stopping(stop_mutex_);
  {
    std::lock_guard lock(mutex_);
    stopping_ = true;
    wake_.notify_all();
  }
  // Workers stay in the list until joined: a running one still refers to its
  // entry. Join outside mutex_, which they need to end.
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

std::size_t CallThreads::stops_in_progress() const {
  std::lock_guard lock(mutex_);
  return stop_calls_;
}

}  // namespace loopr::mcp
