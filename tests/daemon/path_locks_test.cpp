// PathLocks: first come, first served per key; a waiter that gives up leaves
// the queue; keys are independent.
#include "daemon/path_locks.hpp"

#include <gtest/gtest.h>

#include <asio/co_spawn.hpp>
#include <asio/detached.hpp>
#include <asio/io_context.hpp>
#include <memory>
#include <string>
#include <vector>

namespace loopr::daemon {
namespace {

// Takes the lock, records the holder's name, keeps it until `release` fires.
asio::awaitable<void> hold(PathLocks& locks, std::string key, std::string name,
                           std::vector<std::string>& order, Wakeup& release) {
  PathLocks::Guard guard = co_await locks.acquire(std::move(key));
  order.push_back(name);
  co_await release.wait();
}

TEST(PathLocks, HoldersOfOneKeyFollowTheOrderOfAsking) {
  asio::io_context io;
  PathLocks locks(io.get_executor());
  std::vector<std::string> order;
  Wakeup release_a(io.get_executor()), release_b(io.get_executor()), release_c(io.get_executor());
  asio::co_spawn(io, hold(locks, "f", "a", order, release_a), asio::detached);
  asio::co_spawn(io, hold(locks, "f", "b", order, release_b), asio::detached);
  asio::co_spawn(io, hold(locks, "f", "c", order, release_c), asio::detached);
  io.poll();
  EXPECT_EQ(order, (std::vector<std::string>{"a"}));  // b and c wait
  release_a.notify();
  io.poll();
  EXPECT_EQ(order, (std::vector<std::string>{"a", "b"}));
  release_b.notify();
  io.poll();
  EXPECT_EQ(order, (std::vector<std::string>{"a", "b", "c"}));
  release_c.notify();
  io.poll();
  EXPECT_EQ(locks.busy_keys(), 0u);
}

TEST(PathLocks, DifferentKeysDoNotWaitForEachOther) {
  asio::io_context io;
  PathLocks locks(io.get_executor());
  std::vector<std::string> order;
  Wakeup release_a(io.get_executor()), release_b(io.get_executor());
  asio::co_spawn(io, hold(locks, "one", "a", order, release_a), asio::detached);
  asio::co_spawn(io, hold(locks, "two", "b", order, release_b), asio::detached);
  io.poll();
  EXPECT_EQ(order, (std::vector<std::string>{"a", "b"}));
  EXPECT_EQ(locks.busy_keys(), 2u);
  release_a.notify();
  release_b.notify();
  io.poll();
  EXPECT_EQ(locks.busy_keys(), 0u);
}

TEST(PathLocks, AWaiterDestroyedWhileWaitingLeavesTheQueue) {
  std::vector<std::string> order;
  auto io = std::make_unique<asio::io_context>();
  PathLocks locks(io->get_executor());
  {
    Wakeup release_a(io->get_executor()), release_b(io->get_executor());
    asio::co_spawn(*io, hold(locks, "f", "a", order, release_a), asio::detached);
    asio::co_spawn(*io, hold(locks, "f", "b", order, release_b), asio::detached);
    io->poll();
    EXPECT_EQ(locks.busy_keys(), 1u);
  }  // the Wakeups go first: their timers need io's timer service
  // Destroying the io_context destroys both coroutine frames, the holder's
  // and the waiter's: their guards must leave nothing behind.
  io.reset();
  EXPECT_EQ(order, (std::vector<std::string>{"a"}));
  EXPECT_EQ(locks.busy_keys(), 0u);
}

TEST(PathLocks, AMovedGuardReleasesOnce) {
  asio::io_context io;
  PathLocks locks(io.get_executor());
  std::vector<std::string> order;
  Wakeup release_again(io.get_executor());
  asio::co_spawn(
      io,
      [&]() -> asio::awaitable<void> {
        PathLocks::Guard first = co_await locks.acquire("f");
        PathLocks::Guard moved = std::move(first);
        first.release();  // a moved-from guard holds nothing
        EXPECT_EQ(locks.busy_keys(), 1u);
        moved.release();
        EXPECT_EQ(locks.busy_keys(), 0u);
        co_await hold(locks, "f", "again", order, release_again);
      },
      asio::detached);
  io.poll();
  EXPECT_EQ(order, (std::vector<std::string>{"again"}));
  release_again.notify();
  io.poll();
  EXPECT_EQ(locks.busy_keys(), 0u);
}

// The daemon's io_context outlives its router: destroying the io_context
// destroys coroutine frames whose guards outlived their PathLocks. Their
// release must not touch the freed queues (the ASan build catches it if so).
TEST(PathLocks, GuardsThatOutliveTheirLocksReleaseNothing) {
  asio::io_context io;
  auto locks = std::make_unique<PathLocks>(io.get_executor());
  std::vector<std::string> order;
  Wakeup never(io.get_executor());
  asio::co_spawn(io, hold(*locks, "f", "holder", order, never), asio::detached);
  asio::co_spawn(io, hold(*locks, "f", "waiter", order, never), asio::detached);
  io.poll();
  EXPECT_EQ(order, (std::vector<std::string>{"holder"}));
  locks.reset();
  // io's destructor destroys both frames here; nothing may be left to crash.
}

}  // namespace
}  // namespace loopr::daemon
