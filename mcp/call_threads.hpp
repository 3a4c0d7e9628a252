// CallThreads: the threads an McpSession runs its tools/call requests on.
//
// Contract:
//  - run(task) starts `task` at once: on a thread that finished an earlier
//    task and waits for the next, or on a new thread. A task never waits
//    behind another, so a command that runs for an hour or a call parked on
//    an approval never delays the next call.
//  - A thread whose task ended waits up to `idle_for` for another; at most
//    `max_idle` threads wait at once, the others end.
//  - stop() refuses new tasks, waits for the running ones to end and joins
//    every thread; it must not be called from a task. Callers may race: each
//    returns once every thread is joined. The destructor stops.
//
// Why not asio::thread_pool or std::async: asio's pool has a fixed number of
// threads and queues tasks behind busy ones (a long call would hold back the
// next), and libstdc++'s std::async starts a thread per task, which is what
// this replaces: creating and ending a thread is about 8 system calls, 10 %
// of a read's round trip through `looprctl mcp` (bench/README.md).
#pragma once

#include <chrono>
#include <condition_variable>
#include <cstddef>
#include <deque>
#include <functional>
#include <list>
#include <mutex>
#include <thread>
#include <vector>

namespace loopr::mcp {

class CallThreads {
 public:
  explicit CallThreads(std::size_t max_idle = 2,
                       std::chrono::milliseconds idle_for = std::chrono::seconds(30));
  ~CallThreads();
  CallThreads(const CallThreads&) = delete;
  CallThreads& operator=(const CallThreads&) = delete;

  // False (and `task` not run) after stop(); throws std::system_error when
  // no thread can be started.
  bool run(std::function<void()> task);
  void stop();

  std::size_t threads() const;  // alive, busy or idle
  std::size_t idle() const;
  // Callers inside stop() that have not returned yet (waiting for tasks, or
  // for another stop() to finish joining).
  std::size_t stops_in_progress() const;

 private:
  struct Worker {
    std::thread thread;
    bool ended = false;
  };
  void serve(Worker& self, std::function<void()> task);
  // With mutex_ held: the threads of ended workers, out of the list, for the
  // caller to join once it has released the mutex.
  std::vector<std::thread> take_ended();

  const std::size_t max_idle_;
  const std::chrono::milliseconds idle_for_;
  std::mutex stop_mutex_;  // one stop() at a time joins; the others wait for it
  mutable std::mutex mutex_;
  std::condition_variable wake_;
  std::deque<std::function<void()>> handed_;  // tasks for idle threads; never more than idle_
  std::size_t idle_ = 0;
  bool stopping_ = false;
  std::size_t stop_calls_ = 0;
  std::list<Worker> workers_;
};

}  // namespace loopr::mcp
