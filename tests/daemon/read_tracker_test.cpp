#include "daemon/read_tracker.hpp"

#include <gtest/gtest.h>

namespace loopr::daemon {
namespace {

TEST(ReadTracker, RemembersTheLastHashPerSessionWorktreeAndPath) {
  ReadTracker reads;
  reads.remember("s1", "/w", "a.c", "sha256:1");
  reads.remember("s1", "/w", "a.c", "sha256:2");
  EXPECT_EQ(reads.hash_of("s1", "/w", "a.c"), "sha256:2");
  EXPECT_EQ(reads.hash_of("s2", "/w", "a.c"), std::nullopt);
  EXPECT_EQ(reads.hash_of("s1", "/other", "a.c"), std::nullopt);
  EXPECT_EQ(reads.hash_of("s1", "/w", "b.c"), std::nullopt);
}

TEST(ReadTracker, ForgetsAFileAndAWholeSession) {
  ReadTracker reads;
  reads.remember("s1", "/w", "a.c", "h");
  reads.remember("s1", "/w", "b.c", "h");
  reads.forget("s1", "/w", "a.c");
  EXPECT_EQ(reads.hash_of("s1", "/w", "a.c"), std::nullopt);
  EXPECT_EQ(reads.hash_of("s1", "/w", "b.c"), "h");
  reads.forget_session("s1");
  EXPECT_EQ(reads.hash_of("s1", "/w", "b.c"), std::nullopt);
  EXPECT_EQ(reads.session_count(), 0u);
}

TEST(ReadTracker, ASessionKeepsAtMostItsCapForgettingTheOldestFirst) {
  ReadTracker reads;
  for (std::size_t i = 0; i < ReadTracker::kMaxEntriesPerSession + 10; ++i) {
    reads.remember("s", "/w", "f" + std::to_string(i), "h");
  }
  EXPECT_EQ(reads.entry_count("s"), ReadTracker::kMaxEntriesPerSession);
  EXPECT_EQ(reads.hash_of("s", "/w", "f0"), std::nullopt);
  EXPECT_EQ(reads.hash_of("s", "/w", "f" + std::to_string(ReadTracker::kMaxEntriesPerSession + 9)),
            "h");
}

TEST(ReadTracker, PastTheSessionCapTheLeastRecentlyUsedSessionGoes) {
  ReadTracker reads;
  for (std::size_t i = 0; i < ReadTracker::kMaxSessions; ++i) {
    reads.remember("s" + std::to_string(i), "/w", "a", "h");
  }
  EXPECT_TRUE(reads.hash_of("s0", "/w", "a"));  // s0 is now the most recently used
  reads.remember("new", "/w", "a", "h");
  EXPECT_EQ(reads.session_count(), ReadTracker::kMaxSessions);
  EXPECT_TRUE(reads.hash_of("s0", "/w", "a"));
  EXPECT_FALSE(reads.hash_of("s1", "/w", "a"));
}

}  // namespace
}  // namespace loopr::daemon
