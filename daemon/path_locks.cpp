#include "daemon/path_locks.hpp"

#include <algorithm>
#include <utility>

namespace loopr::daemon {

PathLocks::Guard& PathLocks::Guard::operator=(Guard&& other) noexcept {
  if (this != &other) {
    release();
    queues_ = std::exchange(other.queues_, {});
    key_ = std::move(other.key_);
    waiter_ = std::move(other.waiter_);
  }
  return *this;
}

void PathLocks::Guard::release() {
  if (auto queues = std::exchange(queues_, {}).lock()) PathLocks::release(*queues, key_, waiter_);
  waiter_.reset();
}

asio::awaitable<PathLocks::Guard> PathLocks::acquire(std::string key) {
  // The guard exists before the wait: if this coroutine is destroyed while
  // it waits, the guard's destructor takes the waiter out of the queue.
  Guard guard;
  guard.queues_ = queues_;
  guard.key_ = key;
  guard.waiter_ = std::make_shared<Waiter>(executor_);
  Queue& queue = (*queues_)[key];
  queue.push_back(guard.waiter_);
  if (queue.size() == 1) guard.waiter_->turn.notify();
  co_await guard.waiter_->turn.wait();
  co_return std::move(guard);
}

void PathLocks::release(Queues& queues, const std::string& key,
                        const std::shared_ptr<Waiter>& waiter) {
  auto it = queues.find(key);
  if (it == queues.end()) return;
  Queue& queue = it->second;
  const bool was_holder = !queue.empty() && queue.front() == waiter;
  std::erase(queue, waiter);
  if (queue.empty()) {
    queues.erase(it);
  } else if (was_holder) {
    queue.front()->turn.notify();
  }
}

}  // namespace loopr::daemon
