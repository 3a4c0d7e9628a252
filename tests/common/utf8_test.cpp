#include "common/utf8.hpp"

#include <gtest/gtest.h>
#include <rapidcheck/gtest.h>

namespace loopr {
namespace {

TEST(Utf8, AcceptsWellFormedText) {
  EXPECT_TRUE(is_valid_utf8(""));
  EXPECT_TRUE(is_valid_utf8("plain ascii"));
  EXPECT_TRUE(is_valid_utf8("caf\xC3\xA9 \xE2\x82\xAC \xF0\x9F\x98\x80"));
}

TEST(Utf8, RefusesOverlongsSurrogatesAndTruncation) {
  EXPECT_FALSE(is_valid_utf8("\xC0\xAF"));          // overlong '/'
  EXPECT_FALSE(is_valid_utf8("\xED\xA0\x80"));      // UTF-16 surrogate
  EXPECT_FALSE(is_valid_utf8("\xF4\x90\x80\x80"));  // above U+10FFFF
  EXPECT_FALSE(is_valid_utf8("\xE2\x82"));          // truncated
  EXPECT_FALSE(is_valid_utf8("\xFF"));
}

TEST(Utf8, LossyReplacesEachBadByteAndKeepsTheRest) {
  EXPECT_EQ(to_lossy_utf8("a\xFF"
                          "b"),
            "a\xEF\xBF\xBD"
            "b");
  EXPECT_EQ(to_lossy_utf8("\xE2\x82"), "\xEF\xBF\xBD\xEF\xBF\xBD");
  EXPECT_EQ(to_lossy_utf8("caf\xC3\xA9"), "caf\xC3\xA9");
}

TEST(Utf8, SafePrefixNeverSplitsACharacter) {
  const std::string text = "ab\xE2\x82\xAC";  // "ab€"
  EXPECT_EQ(utf8_safe_prefix(text, 3), 2u);
  EXPECT_EQ(utf8_safe_prefix(text, 4), 2u);
  EXPECT_EQ(utf8_safe_prefix(text, 5), 5u);
  EXPECT_EQ(utf8_safe_prefix(text, 99), 5u);
}

RC_GTEST_PROP(Utf8, LossyOutputIsAlwaysValid, (const std::string& bytes)) {
  RC_ASSERT(is_valid_utf8(to_lossy_utf8(bytes)));
}

RC_GTEST_PROP(Utf8, LossyIsIdentityOnValidText, (const std::string& bytes)) {
  const std::string valid = to_lossy_utf8(bytes);
  RC_ASSERT(to_lossy_utf8(valid) == valid);
}

RC_GTEST_PROP(Utf8, SafePrefixOfValidTextIsValid, (const std::string& bytes, std::size_t cut)) {
  const std::string valid = to_lossy_utf8(bytes);
  const std::size_t n = utf8_safe_prefix(valid, cut % (valid.size() + 1));
  RC_ASSERT(n <= valid.size());
  RC_ASSERT(is_valid_utf8(std::string_view(valid).substr(0, n)));
}

}  // namespace
}  // namespace loopr
