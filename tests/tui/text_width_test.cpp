// tui/text_width.hpp: columns of UTF-8 text, clipping, padding, wrapping.
#include "tui/text_width.hpp"

#include <gtest/gtest.h>

namespace loopr::tui {
namespace {

TEST(TextWidth, WideCharactersTakeTwoColumnsCombiningMarksNone) {
  EXPECT_EQ(display_width("abc"), 3u);
  EXPECT_EQ(display_width("\xe6\x97\xa5\xe6\x9c\xac"), 4u);  // 日本
  EXPECT_EQ(display_width("e\xcc\x81"), 1u);                 // e + combining acute
  EXPECT_EQ(display_width("\xff"), 1u);                      // invalid byte: one U+FFFD
}

TEST(TextWidth, ClipNeverSplitsAWideCharacterAndMarksTheCut) {
  EXPECT_EQ(clip_to_width("hello", 5), "hello");
  EXPECT_EQ(clip_to_width("hello world", 6), "hello\xe2\x80\xa6");
  // 日本語 is 6 columns; in 4 columns only one wide character fits before "…".
  EXPECT_EQ(clip_to_width("\xe6\x97\xa5\xe6\x9c\xac\xe8\xaa\x9e", 4), "\xe6\x97\xa5\xe2\x80\xa6");
  EXPECT_EQ(display_width(clip_to_width("\xe6\x97\xa5\xe6\x9c\xac\xe8\xaa\x9e", 4)), 3u);
  EXPECT_EQ(clip_to_width("abc", 0), "");
}

TEST(TextWidth, PadFillsToExactlyTheWidth) {
  EXPECT_EQ(pad_to_width("ab", 4), "ab  ");
  EXPECT_EQ(display_width(pad_to_width("\xe6\x97\xa5", 5)), 5u);
  EXPECT_EQ(pad_left_to_width("7", 3), "  7");
}

TEST(TextWidth, WrapBreaksAtSpacesThenInsideWordsAndKeepsNewlines) {
  EXPECT_EQ(wrap_to_width("one two three", 7), (std::vector<std::string>{"one two", "three"}));
  EXPECT_EQ(wrap_to_width("abcdefgh", 3), (std::vector<std::string>{"abc", "def", "gh"}));
  EXPECT_EQ(wrap_to_width("a\n\nb", 10), (std::vector<std::string>{"a", "", "b"}));
  EXPECT_EQ(wrap_to_width("a b c d e f", 1, 3).size(), 3u);
  for (const auto& line : wrap_to_width("\xe6\x97\xa5\xe6\x9c\xac\xe8\xaa\x9e\xe6\x97\xa5", 3))
    EXPECT_LE(display_width(line), 3u);
}

TEST(TextWidth, DecodeEncodeRoundTrips) {
  const std::string text = "a\xc3\xa9\xe6\x97\xa5\xf0\x9f\x98\x80";
  EXPECT_EQ(encode_utf8(decode_utf8(text)), text);
  EXPECT_EQ(decode_utf8("\xed\xa0\x80").front(), U'\uFFFD');  // a surrogate
}

}  // namespace
}  // namespace loopr::tui
