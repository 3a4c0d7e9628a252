#include "proto/json_bounded.hpp"

#include <gtest/gtest.h>

#include <string>

namespace loopr::proto {
namespace {

std::string nested_arrays(std::size_t depth) {
  return std::string(depth, '[') + std::string(depth, ']');
}

TEST(JsonBounded, ParsesOrdinaryValues) {
  auto r = parse_json_bounded(R"( {"a": [1, 2, {"b": "c"}], "d": null} )");
  ASSERT_TRUE(r.ok()) << r.error().message;
  EXPECT_EQ((*r)["a"][2]["b"], "c");
  EXPECT_EQ(*parse_json_bounded("42"), 42);
}

TEST(JsonBounded, AcceptsNestingUpToTheLimit) {
  EXPECT_TRUE(parse_json_bounded(nested_arrays(128)).ok());
  EXPECT_TRUE(parse_json_bounded(nested_arrays(5), 5).ok());
}

TEST(JsonBounded, RefusesNestingBeyondTheLimit) {
  const auto r = parse_json_bounded(nested_arrays(129));
  ASSERT_FALSE(r.ok());
  EXPECT_EQ(r.error().code, errc::protocol);
  EXPECT_NE(r.error().message.find("deeper than 128"), std::string::npos);
  EXPECT_FALSE(parse_json_bounded(R"({"a":{"b":{"c":1}}})", 2).ok());
}

TEST(JsonBounded, RefusesAHundredThousandLevelsBeforeParsing) {
  // Unterminated on purpose: only the pre-scan can answer "too deep" here.
  const auto r = parse_json_bounded(std::string(100000, '['));
  ASSERT_FALSE(r.ok());
  EXPECT_NE(r.error().message.find("deeper"), std::string::npos);
  EXPECT_FALSE(parse_json_bounded(std::string(100000, '{')).ok());
  EXPECT_FALSE(parse_json_bounded(nested_arrays(100000)).ok());
}

TEST(JsonBounded, BracketsInsideStringsDoNotCount) {
  const std::string text = R"({"s": "[[[[[[[[[[\"[[[[{{{{\\", "t": ["]]]]"]})";
  auto r = parse_json_bounded(text, 2);
  ASSERT_TRUE(r.ok()) << r.error().message;
  EXPECT_EQ((*r)["t"][0], "]]]]");
  EXPECT_TRUE(json_depth_within(R"("\"[[[[")", 0));
  EXPECT_FALSE(json_depth_within(R"("\\"[)", 0));
}

TEST(JsonBounded, RefusesNonJson) {
  for (const std::string bad : {"", "   ", "{", "{\"a\":}", "nul", "[1,]", "{} {}", "{}x", "'a'"}) {
    const auto r = parse_json_bounded(bad);
    ASSERT_FALSE(r.ok()) << bad;
    EXPECT_EQ(r.error().code, errc::protocol);
    EXPECT_NE(r.error().message.find("invalid JSON"), std::string::npos);
  }
}

TEST(JsonBounded, RefusesInvalidUtf8InStrings) {
  EXPECT_FALSE(parse_json_bounded("{\"a\": \"\xFF\"}").ok());
  EXPECT_FALSE(parse_json_bounded(R"({"a": "\ud800"})").ok());  // lone surrogate
  EXPECT_TRUE(parse_json_bounded(R"({"a": "\ud83d\ude00"})").ok());
}

}  // namespace
}  // namespace loopr::proto
