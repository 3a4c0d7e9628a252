// PathLocks: first-come-first-served mutual exclusion per file, for the calls
// that change a file (write_file, edit_file, file_delete). Read-before-edit
// hands a call the hash its session last saw (ReadTracker); two calls on one
// file must not both be handed the same hash, or the second would overwrite
// the first's change unseen (a lost update). So a call holds its file's lock
// from the hash lookup until the tracker has learnt the new hash.
//
// Keys are opaque strings (the router uses worktree realpath + NUL + path).
// A Guard releases on destruction, including when the coroutine that waits
// for or holds it is destroyed. A Guard may outlive its PathLocks (an
// io_context destroyed after the router destroys the coroutine frames that
// hold guards): its release is then a no-op. Threads: io thread only.
#pragma once

#include <asio/any_io_executor.hpp>
#include <asio/awaitable.hpp>
#include <cstddef>
#include <deque>
#include <map>
#include <memory>
#include <string>

#include "daemon/wakeup.hpp"

namespace loopr::daemon {

class PathLocks {
 private:
  struct Waiter {
    explicit Waiter(const asio::any_io_executor& executor) : turn(executor) {}
    Wakeup turn;
  };
  using Queue = std::deque<std::shared_ptr<Waiter>>;  // front: the holder
  using Queues = std::map<std::string, Queue>;

 public:
  explicit PathLocks(asio::any_io_executor executor)
      : executor_(std::move(executor)), queues_(std::make_shared<Queues>()) {}

  class Guard {
   public:
    Guard() = default;
    Guard(Guard&& other) noexcept { *this = std::move(other); }
    Guard& operator=(Guard&& other) noexcept;
    Guard(const Guard&) = delete;
    Guard& operator=(const Guard&) = delete;
    ~Guard() { release(); }
    void release();

   private:
    friend class PathLocks;
    std::weak_ptr<Queues> queues_;  // empty once released or moved from
    std::string key_;
    std::shared_ptr<Waiter> waiter_;
  };

  // Waits until every earlier caller for `key` has released, then holds it.
  asio::awaitable<Guard> acquire(std::string key);

  // How many keys are held or waited for (tests, metrics).
  std::size_t busy_keys() const { return queues_->size(); }

 private:
  static void release(Queues& queues, const std::string& key,
                      const std::shared_ptr<Waiter>& waiter);

  asio::any_io_executor executor_;
  std::shared_ptr<Queues> queues_;  // shared only so that guards can tell it is gone
};

}  // namespace loopr::daemon
