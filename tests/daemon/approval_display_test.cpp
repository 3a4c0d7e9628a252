// What an approval shows a person: arguments whole, long strings cut without
// splitting a character, and the original length named.
#include <gtest/gtest.h>

#include "common/utf8.hpp"
#include "daemon/approval_gate.hpp"

namespace loopr::daemon {
namespace {

using nlohmann::json;

TEST(ApprovalDisplay, ShortArgumentsAreShownWhole) {
  const json args = {{"command", "make test"}, {"timeout_ms", 5000}, {"env", {"A", "B"}}};
  EXPECT_EQ(abbreviated_for_display(args), args);
}

TEST(ApprovalDisplay, LongStringsAtAnyDepthAreCutAndSayHowLongTheyWere) {
  const std::string content(100000, 'x');
  const json args = {
      {"path", "big.txt"}, {"content", content}, {"edits", {{{"new_string", content}}}}};
  const json shown = abbreviated_for_display(args);
  EXPECT_EQ(shown["path"], "big.txt");
  const std::string cut = shown["content"];
  EXPECT_LT(cut.size(), kMaxShownStringBytes + 64);
  EXPECT_NE(cut.find("[100000 bytes in all]"), std::string::npos);
  EXPECT_EQ(shown["edits"][0]["new_string"], cut);
}

TEST(ApprovalDisplay, ACutNeverSplitsAUtf8Character) {
  std::string text;
  while (text.size() < kMaxShownStringBytes + 200)
    text += "\xC3\xA9";  // é, two bytes
  text = "x" + text;     // so the cut point falls inside a character
  const std::string cut = abbreviated_for_display(json(text)).get<std::string>();
  EXPECT_TRUE(is_valid_utf8(cut));
  EXPECT_LT(cut.size(), text.size());
}

}  // namespace
}  // namespace loopr::daemon
