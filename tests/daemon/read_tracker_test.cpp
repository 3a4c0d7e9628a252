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

// A recursive file_delete forgets the folder's files, and nothing that only
// shares a prefix, nor another session's or another worktree's reads.
TEST(ReadTracker, ForgetBeneathForgetsOneFolderExactly) {
  ReadTracker reads;
  for (const char* path : {"src", "src/a.c", "src/deep/b.c", "src2/c.c", "srcx", "other.c"})
    reads.remember("s", "/w", path, "h");
  reads.remember("t", "/w", "src/a.c", "h");
  reads.remember("s", "/w2", "src/a.c", "h");
  reads.forget_beneath("s", "/w", "src");
  EXPECT_FALSE(reads.hash_of("s", "/w", "src"));
  EXPECT_FALSE(reads.hash_of("s", "/w", "src/a.c"));
  EXPECT_FALSE(reads.hash_of("s", "/w", "src/deep/b.c"));
  EXPECT_TRUE(reads.hash_of("s", "/w", "src2/c.c"));
  EXPECT_TRUE(reads.hash_of("s", "/w", "srcx"));
  EXPECT_TRUE(reads.hash_of("s", "/w", "other.c"));
  EXPECT_TRUE(reads.hash_of("t", "/w", "src/a.c"));
  EXPECT_TRUE(reads.hash_of("s", "/w2", "src/a.c"));
  EXPECT_EQ(reads.entry_count("s"), 4u);
  // The age index shrank with the entries: filling the session to its cap
  // evicts only what is really oldest.
  for (std::size_t i = 0; i < ReadTracker::kMaxEntriesPerSession - 4; ++i)
    reads.remember("s", "/w", "n" + std::to_string(i), "h");
  EXPECT_EQ(reads.entry_count("s"), ReadTracker::kMaxEntriesPerSession);
  EXPECT_TRUE(reads.hash_of("s", "/w", "src2/c.c"));
}

TEST(ReadTracker, ForgetBeneathTheRootForgetsTheWholeWorktree) {
  ReadTracker reads;
  reads.remember("s", "/w", "a.c", "h");
  reads.remember("s", "/w", "d/b.c", "h");
  reads.remember("s", "/w2", "a.c", "h");
  reads.forget_beneath("s", "/w", ".");
  EXPECT_FALSE(reads.hash_of("s", "/w", "a.c"));
  EXPECT_FALSE(reads.hash_of("s", "/w", "d/b.c"));
  EXPECT_TRUE(reads.hash_of("s", "/w2", "a.c"));
}

}  // namespace
}  // namespace loopr::daemon
