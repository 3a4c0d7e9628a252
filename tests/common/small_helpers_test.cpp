// The shared small helpers of common/: one "path beneath a folder" test
// (path_beneath.hpp) and the ASCII text helpers (ascii_text.hpp), which
// replaced private copies in config, the daemon, the runner, the HTTP
// client, loopr-fetch and the MCP server.
#include <gtest/gtest.h>

#include "common/ascii_text.hpp"
#include "common/path_beneath.hpp"

namespace loopr {
namespace {

TEST(PathBeneath, AFolderHoldsItselfAndWhatIsBelowItNotItsNamesakes) {
  EXPECT_TRUE(same_or_beneath("/a/b", "/a/b"));
  EXPECT_TRUE(same_or_beneath("/a/b/c", "/a/b"));
  EXPECT_TRUE(same_or_beneath("/a/b/c/d", "/a"));
  EXPECT_FALSE(same_or_beneath("/a/bc", "/a/b"));
  EXPECT_FALSE(same_or_beneath("/a", "/a/b"));
  EXPECT_FALSE(same_or_beneath("/a/b-c/d", "/a/b"));
  EXPECT_FALSE(same_or_beneath("", "/a"));
}

TEST(PathBeneath, TheRootHoldsEveryAbsolutePath) {
  EXPECT_TRUE(same_or_beneath("/", "/"));
  EXPECT_TRUE(same_or_beneath("/etc/passwd", "/"));
  EXPECT_FALSE(same_or_beneath("etc", "/"));
  EXPECT_FALSE(same_or_beneath("", "/"));
}

TEST(AsciiText, TrimSpaceDropsEveryAsciiBlankAtBothEnds) {
  EXPECT_EQ(trim_space(" \t text/html; charset=UTF-8 \r\n"), "text/html; charset=UTF-8");
  EXPECT_EQ(trim_space("\f\v"), "");
  EXPECT_EQ(trim_space(""), "");
  EXPECT_EQ(trim_space("a b"), "a b");
  EXPECT_EQ(trim_space("\xC2\xA0x"), "\xC2\xA0x");  // not ASCII: kept
}

TEST(AsciiText, AsciiLowerFoldsOnlyAsciiLetters) {
  EXPECT_EQ(ascii_lower("Content-Type: TEXT/Event-Stream"), "content-type: text/event-stream");
  EXPECT_EQ(ascii_lower("\xC3\x84Z9"), "\xC3\x84z9");
}

}  // namespace
}  // namespace loopr
