#include "proto/line_codec.hpp"

#include <gtest/gtest.h>

#include <string>
#include <vector>

namespace loopr::proto {
namespace {

using nlohmann::json;

// Drains the reader; stops at the first Error, which is returned in `error`.
std::vector<json> drain(LineReader& reader, std::optional<Error>* error = nullptr) {
  std::vector<json> out;
  while (true) {
    auto r = reader.next();
    if (!r.ok()) {
      if (error != nullptr) *error = r.error();
      return out;
    }
    if (!r->has_value()) return out;
    out.push_back(std::move(**r));
  }
}

TEST(EncodeLine, WritesCompactJsonAndNewline) {
  EXPECT_EQ(*encode_line(json{{"id", 1}, {"method", "ping"}}), "{\"id\":1,\"method\":\"ping\"}\n");
}

TEST(EncodeLine, EscapesNewlinesInsideStrings) {
  const std::string line = *encode_line(json{{"s", "a\nb"}});
  EXPECT_EQ(line.find('\n'), line.size() - 1);
}

TEST(EncodeLine, ReplacesInvalidUtf8InsteadOfThrowing) {
  const auto r = encode_line(json{{"s", "ok\xFF"}});
  ASSERT_TRUE(r.ok());
  EXPECT_EQ(*r, "{\"s\":\"ok\xEF\xBF\xBD\"}\n");
}

TEST(EncodeLine, RefusesNonObjectsAndOversizedLines) {
  EXPECT_EQ(encode_line(json::array()).error().code, errc::protocol);
  EXPECT_EQ(encode_line(json{{"s", std::string(kMaxLineBytes, 'x')}}).error().code,
            errc::too_large);
}

TEST(LineReader, DecodesLinesSplitAnywhere) {
  const std::string bytes = "{\"a\":1}\n{\"b\":2}\n{\"c\":";
  LineReader reader;
  std::vector<json> got;
  for (const char c : bytes) {
    reader.feed(std::string_view(&c, 1));
    for (auto& v : drain(reader))
      got.push_back(v);
  }
  ASSERT_EQ(got.size(), 2u);
  EXPECT_EQ(got[1]["b"], 2);
  EXPECT_EQ(reader.buffered(), 5u);
}

TEST(LineReader, SkipsEmptyLinesAndAcceptsCrlf) {
  LineReader reader;
  reader.feed("\n\r\n  \n{\"a\":1}\r\n\r\n{\"b\":2}\n");
  const auto got = drain(reader);
  ASSERT_EQ(got.size(), 2u);
  EXPECT_EQ(got[0]["a"], 1);
  EXPECT_EQ(got[1]["b"], 2);
}

TEST(LineReader, CrlfSplitBetweenFeeds) {
  LineReader reader;
  reader.feed("{\"a\":1}\r");
  EXPECT_TRUE(drain(reader).empty());
  reader.feed("\n");
  EXPECT_EQ(drain(reader).size(), 1u);
}

TEST(LineReader, NonJsonLineIsARecoverableParseError) {
  LineReader reader;
  reader.feed("this is not json\n{\"ok\":true}\n");
  auto first = reader.next();
  ASSERT_FALSE(first.ok());
  EXPECT_EQ(first.error().code, errc::protocol);
  EXPECT_EQ(first.error().details["rpc_code"], -32700);
  EXPECT_FALSE(reader.failed());
  const auto rest = drain(reader);
  ASSERT_EQ(rest.size(), 1u);
  EXPECT_EQ(rest[0]["ok"], true);
}

TEST(LineReader, DeeplyNestedLineIsAParseError) {
  LineReader reader;
  reader.feed(std::string(100000, '[') + "\n{}\n");
  EXPECT_FALSE(reader.next().ok());
  EXPECT_FALSE(reader.failed());
  EXPECT_EQ(drain(reader).size(), 1u);
}

TEST(LineReader, ReturnsNonObjectValuesForTheMessageParser) {
  LineReader reader;
  reader.feed("[1]\n7\n");
  const auto got = drain(reader);
  ASSERT_EQ(got.size(), 2u);
  EXPECT_TRUE(got[0].is_array());
}

TEST(LineReader, RefusesAnOverlongLineAsSoonAsTheCapIsPassed) {
  LineReader reader(16);
  reader.feed(std::string(16, 'x'));
  EXPECT_FALSE(reader.next()->has_value());  // exactly the cap: may still end
  reader.feed("y");
  const auto r = reader.next();
  ASSERT_FALSE(r.ok());
  EXPECT_EQ(r.error().code, errc::too_large);
  EXPECT_TRUE(reader.failed());
  EXPECT_EQ(reader.buffered(), 0u);
  reader.feed("{}\n");
  EXPECT_FALSE(reader.next().ok());
  EXPECT_EQ(reader.buffered(), 0u);
}

TEST(LineReader, RefusesAnOverlongLineThatArrivesWhole) {
  LineReader reader(8);
  reader.feed("{\"a\":\"123456\"}\n{}\n");
  const auto r = reader.next();
  ASSERT_FALSE(r.ok());
  EXPECT_EQ(r.error().code, errc::too_large);
  EXPECT_TRUE(reader.failed());
}

TEST(LineReader, AcceptsALineExactlyAtTheCap) {
  const std::string line = "{\"a\":\"1234\"}";
  LineReader reader(line.size());
  reader.feed(line + "\r\n");
  const auto got = drain(reader);
  ASSERT_EQ(got.size(), 1u);
}

TEST(LineReader, RefusesMoreThanSixteenMebibytesWithoutNewline) {
  LineReader reader;
  const std::string chunk(1 << 20, 'x');
  for (int i = 0; i < 16; ++i) {
    reader.feed(chunk);
    ASSERT_TRUE(reader.next().ok());
  }
  reader.feed("x");
  const auto r = reader.next();
  ASSERT_FALSE(r.ok());
  EXPECT_EQ(r.error().code, errc::too_large);
}

}  // namespace
}  // namespace loopr::proto
