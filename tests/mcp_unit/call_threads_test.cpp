// mcp/call_threads.hpp: tasks start at once even while others block, threads
// are reused, at most max_idle wait and only for idle_for, and stop() waits
// for running tasks and refuses new ones.
#include "mcp/call_threads.hpp"

#include <gtest/gtest.h>

#include <atomic>
#include <chrono>
#include <condition_variable>
#include <mutex>
#include <set>
#include <thread>

namespace loopr::mcp {
namespace {

using namespace std::chrono_literals;

// A gate tasks wait at until the test opens it.
class Gate {
 public:
  void wait() {
    std::unique_lock lock(mutex_);
    ++waiting_;
    changed_.notify_all();
    changed_.wait(lock, [&] { return open_; });
  }
  bool wait_for_waiters(int count) {
    std::unique_lock lock(mutex_);
    return changed_.wait_for(lock, 10s, [&] { return waiting_ >= count; });
  }
  void open() {
    std::lock_guard lock(mutex_);
    open_ = true;
    changed_.notify_all();
  }

 private:
  std::mutex mutex_;
  std::condition_variable changed_;
  int waiting_ = 0;
  bool open_ = false;
};

// Opens `gate` when it goes out of scope. Declared after the CallThreads, it
// is destroyed first: a test that returns early (a failed ASSERT) lets its
// tasks end, so ~CallThreads's stop() cannot wait for them forever.
class OpenOnExit {
 public:
  explicit OpenOnExit(Gate& gate) : gate_(gate) {}
  ~OpenOnExit() { gate_.open(); }
  OpenOnExit(const OpenOnExit&) = delete;
  OpenOnExit& operator=(const OpenOnExit&) = delete;

 private:
  Gate& gate_;
};

bool eventually(const std::function<bool()>& condition) {
  for (int i = 0; i < 1000; ++i) {
    if (condition()) return true;
    std::this_thread::sleep_for(10ms);
  }
  return condition();
}

TEST(CallThreads, ATaskStartsAtOnceWhileOthersBlock) {
  Gate gate;  // outlives the threads, even when an assertion returns early
  CallThreads threads(/*max_idle=*/1);
  OpenOnExit open_on_exit(gate);
  for (int i = 0; i < 5; ++i)
    ASSERT_TRUE(threads.run([&] { gate.wait(); }));
  // Five tasks wait at the gate together: none was queued behind another.
  EXPECT_TRUE(gate.wait_for_waiters(5));
  EXPECT_EQ(threads.threads(), 5u);
  gate.open();
  threads.stop();
}

TEST(CallThreads, AFinishedThreadRunsTheNextTask) {
  CallThreads threads(/*max_idle=*/2);
  std::mutex mutex;
  std::set<std::thread::id> ran_on;
  std::atomic<int> ran{0};
  for (int i = 0; i < 20; ++i) {
    // The previous task ran and its thread waits again (it stops counting as
    // idle before it runs a task).
    ASSERT_TRUE(eventually([&] { return ran == i && (i == 0 || threads.idle() == 1); }));
    ASSERT_TRUE(threads.run([&] {
      {
        std::lock_guard lock(mutex);
        ran_on.insert(std::this_thread::get_id());
      }
      ++ran;
    }));
  }
  threads.stop();
  EXPECT_EQ(ran_on.size(), 1u) << "each task after the first waited for an idle thread";
}

TEST(CallThreads, AtMostMaxIdleThreadsStay) {
  Gate gate;
  CallThreads threads(/*max_idle=*/2, /*idle_for=*/std::chrono::hours(1));
  OpenOnExit open_on_exit(gate);
  for (int i = 0; i < 4; ++i)
    ASSERT_TRUE(threads.run([&] { gate.wait(); }));
  ASSERT_TRUE(gate.wait_for_waiters(4));
  gate.open();
  EXPECT_TRUE(eventually([&] { return threads.threads() == 2 && threads.idle() == 2; }))
      << threads.threads() << " threads, " << threads.idle() << " idle";
}

TEST(CallThreads, IdleThreadsEndAfterIdleFor) {
  CallThreads threads(/*max_idle=*/2, /*idle_for=*/100ms);
  std::atomic<int> ran{0};
  ASSERT_TRUE(threads.run([&] { ++ran; }));
  ASSERT_TRUE(threads.run([&] { ++ran; }));
  EXPECT_TRUE(eventually([&] { return ran == 2 && threads.threads() == 0; }))
      << threads.threads() << " threads left";
  // A task after they ended starts a new thread.
  ASSERT_TRUE(threads.run([&] { ++ran; }));
  EXPECT_TRUE(eventually([&] { return ran == 3; }));
}

TEST(CallThreads, ConcurrentStopsEachReturnWithEveryThreadJoined) {
  Gate gate;
  CallThreads threads;
  OpenOnExit open_on_exit(gate);
  for (int i = 0; i < 3; ++i)
    ASSERT_TRUE(threads.run([&] { gate.wait(); }));
  ASSERT_TRUE(gate.wait_for_waiters(3));
  std::thread first([&] { threads.stop(); });
  std::thread second([&] { threads.stop(); });
  // Both stops are inside stop(), waiting for the tasks (or for each other).
  // (EXPECT, not ASSERT: the gate must open and the stops be joined.)
  EXPECT_TRUE(eventually([&] { return threads.stops_in_progress() == 2; }))
      << threads.stops_in_progress() << " stops in progress";
  EXPECT_EQ(threads.threads(), 3u) << "a stop returned while its tasks still ran";
  gate.open();
  first.join();
  second.join();
  EXPECT_EQ(threads.threads(), 0u);
  EXPECT_EQ(threads.stops_in_progress(), 0u);
}

TEST(CallThreads, StopWaitsForRunningTasksAndRefusesNewOnes) {
  Gate gate;
  CallThreads threads;
  OpenOnExit open_on_exit(gate);
  std::atomic<bool> finished{false};
  std::atomic<bool> stopped{false};
  ASSERT_TRUE(threads.run([&] {
    gate.wait();
    finished = true;
  }));
  ASSERT_TRUE(gate.wait_for_waiters(1));
  std::thread stopper([&] {
    threads.stop();
    stopped = true;
  });
  EXPECT_TRUE(eventually([&] { return threads.stops_in_progress() == 1; }));
  EXPECT_FALSE(stopped.load()) << "stop() returned while its task was still running";
  gate.open();
  stopper.join();
  EXPECT_TRUE(finished.load()) << "stop() returned before its task ended";
  EXPECT_FALSE(threads.run([] {}));
  EXPECT_EQ(threads.threads(), 0u);
}

TEST(CallThreads, StopEndsIdleThreadsAtOnce) {
  CallThreads threads(/*max_idle=*/2, /*idle_for=*/std::chrono::hours(1));
  ASSERT_TRUE(threads.run([] {}));
  ASSERT_TRUE(eventually([&] { return threads.idle() == 1; }));
  const auto before = std::chrono::steady_clock::now();
  threads.stop();
  EXPECT_LT(std::chrono::steady_clock::now() - before, 5s);
  EXPECT_EQ(threads.threads(), 0u);
}

}  // namespace
}  // namespace loopr::mcp
