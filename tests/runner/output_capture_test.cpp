#include "common/output_capture.hpp"

#include <gtest/gtest.h>
#include <rapidcheck/gtest.h>

namespace loopr {
namespace {

TEST(OutputCapture, KeepsEverythingUnderTheCap) {
  OutputCapture capture(100);
  capture.append("hello ");
  capture.append("world");
  EXPECT_FALSE(capture.truncated());
  EXPECT_EQ(capture.contents(), "hello world");
  EXPECT_EQ(capture.total_bytes(), 11u);
}

TEST(OutputCapture, KeepsHeadAndTailWithAMarker) {
  OutputCapture capture(10);
  for (char c = 'a'; c <= 'z'; ++c)
    capture.append(std::string(1, c));
  EXPECT_TRUE(capture.truncated());
  EXPECT_EQ(capture.contents(), "abcde\n[output truncated: 26 bytes total, 10 shown]\nvwxyz");
}

TEST(OutputCapture, BinaryBytesPassThroughUnchanged) {
  OutputCapture capture(64);
  const std::string bytes("\x00\xff\xfe\x80", 4);
  capture.append(bytes);
  EXPECT_EQ(capture.contents(), bytes);
}

RC_GTEST_PROP(OutputCapture, HeadAndTailMatchTheStream,
              (const std::vector<std::string>& chunks, unsigned cap_seed)) {
  const std::uint64_t cap = 1 + cap_seed % 200;
  OutputCapture capture(cap);
  std::string all;
  for (const auto& chunk : chunks) {
    capture.append(chunk);
    all += chunk;
  }
  RC_ASSERT(capture.total_bytes() == all.size());
  if (all.size() <= cap) {
    RC_ASSERT(capture.contents() == all);
  } else {
    const std::string text = capture.contents();
    const std::size_t head = static_cast<std::size_t>(cap / 2);
    const std::size_t tail = static_cast<std::size_t>(cap - cap / 2);
    RC_ASSERT(text.substr(0, head) == all.substr(0, head));
    RC_ASSERT(text.substr(text.size() - tail) == all.substr(all.size() - tail));
    RC_ASSERT(text.find("[output truncated: " + std::to_string(all.size()) + " bytes total, " +
                        std::to_string(cap) + " shown]") != std::string::npos);
  }
}

}  // namespace
}  // namespace loopr
