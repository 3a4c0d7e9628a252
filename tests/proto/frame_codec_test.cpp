#include "proto/frame_codec.hpp"

#include <gtest/gtest.h>

#include <string>

namespace loopr::proto {
namespace {

using nlohmann::json;

std::string header(std::uint32_t length) {
  std::string out(4, '\0');
  out[0] = static_cast<char>((length >> 24) & 0xFF);
  out[1] = static_cast<char>((length >> 16) & 0xFF);
  out[2] = static_cast<char>((length >> 8) & 0xFF);
  out[3] = static_cast<char>(length & 0xFF);
  return out;
}

std::string raw_frame(const std::string& payload) {
  return header(static_cast<std::uint32_t>(payload.size())) + payload;
}

// Expects next() to fail with `code`, and to keep failing.
void expect_failed(FrameReader& reader, const char* code) {
  auto r = reader.next();
  ASSERT_FALSE(r.ok());
  EXPECT_EQ(r.error().code, code);
  EXPECT_TRUE(reader.failed());
  reader.feed(*encode_frame(json{{"type", "heartbeat"}}));
  EXPECT_FALSE(reader.next().ok());
  EXPECT_EQ(reader.buffered(), 0u);
}

TEST(EncodeFrame, WritesBigEndianLengthThenCompactJson) {
  auto frame = encode_frame(json{{"type", "shutdown"}});
  ASSERT_TRUE(frame.ok());
  const std::string payload = R"({"type":"shutdown"})";
  EXPECT_EQ(*frame, raw_frame(payload));
  EXPECT_EQ(frame->substr(0, 4), std::string("\0\0\0\x13", 4));
}

TEST(EncodeFrame, RefusesNonObjects) {
  for (const json& value : {json::array(), json(1), json("s"), json(nullptr)}) {
    const auto r = encode_frame(value);
    ASSERT_FALSE(r.ok());
    EXPECT_EQ(r.error().code, errc::protocol);
  }
}

TEST(EncodeFrame, RefusesInvalidUtf8InsteadOfThrowing) {
  const auto r = encode_frame(json{{"data", "\xFF\xFE"}});
  ASSERT_FALSE(r.ok());
  EXPECT_EQ(r.error().code, errc::protocol);
}

TEST(EncodeFrame, RefusesOversizedPayload) {
  const auto r = encode_frame(json{{"data", std::string(kMaxFramePayload, 'x')}});
  ASSERT_FALSE(r.ok());
  EXPECT_EQ(r.error().code, errc::too_large);
}

TEST(FrameReader, DecodesOneFrame) {
  FrameReader reader;
  reader.feed(*encode_frame(json{{"type", "job_ack"}, {"job_id", "j1"}}));
  auto r = reader.next();
  ASSERT_TRUE(r.ok()) << r.error().message;
  ASSERT_TRUE(r->has_value());
  EXPECT_EQ((**r)["job_id"], "j1");
  auto again = reader.next();
  ASSERT_TRUE(again.ok());
  EXPECT_FALSE(again->has_value());
  EXPECT_EQ(reader.buffered(), 0u);
}

TEST(FrameReader, WaitsOnHeaderOnlyAndTruncatedFrames) {
  const std::string frame = *encode_frame(json{{"k", "value"}});
  FrameReader reader;
  reader.feed(frame.substr(0, 2));
  EXPECT_FALSE(reader.next()->has_value());
  reader.feed(frame.substr(2, 2));  // header only
  EXPECT_FALSE(reader.next()->has_value());
  reader.feed(frame.substr(4, frame.size() - 5));  // all but the last byte
  EXPECT_FALSE(reader.next()->has_value());
  EXPECT_FALSE(reader.failed());
  reader.feed(frame.substr(frame.size() - 1));
  auto r = reader.next();
  ASSERT_TRUE(r.ok());
  ASSERT_TRUE(r->has_value());
  EXPECT_EQ((**r)["k"], "value");
}

TEST(FrameReader, DecodesFramesFedOneByteAtATime) {
  const std::string frames = *encode_frame(json{{"n", 1}}) + *encode_frame(json{{"n", 2}});
  FrameReader reader;
  std::vector<json> got;
  for (const char c : frames) {
    reader.feed(std::string_view(&c, 1));
    while (true) {
      auto r = reader.next();
      ASSERT_TRUE(r.ok());
      if (!r->has_value()) break;
      got.push_back(**r);
    }
  }
  ASSERT_EQ(got.size(), 2u);
  EXPECT_EQ(got[0]["n"], 1);
  EXPECT_EQ(got[1]["n"], 2);
}

TEST(FrameReader, DecodesSeveralFramesFromOneFeed) {
  std::string bytes;
  for (int i = 0; i < 5; ++i)
    bytes += *encode_frame(json{{"i", i}});
  bytes += encode_frame(json{{"i", 5}})->substr(0, 3);
  FrameReader reader;
  reader.feed(bytes);
  for (int i = 0; i < 5; ++i) {
    auto r = reader.next();
    ASSERT_TRUE(r.ok() && r->has_value());
    EXPECT_EQ((**r)["i"], i);
  }
  EXPECT_FALSE(reader.next()->has_value());
  EXPECT_EQ(reader.buffered(), 3u);
}

TEST(FrameReader, RefusesOversizedHeaderBeforeAnyPayload) {
  FrameReader reader;
  reader.feed(header(0xFFFFFFFFu));
  const auto r = reader.next();
  ASSERT_FALSE(r.ok());
  EXPECT_EQ(r.error().code, errc::too_large);
  EXPECT_NE(r.error().message.find("4294967295"), std::string::npos);
  EXPECT_EQ(reader.buffered(), 0u);

  FrameReader just_over;
  just_over.feed(header(static_cast<std::uint32_t>(kMaxFramePayload + 1)));
  expect_failed(just_over, errc::too_large);
}

TEST(FrameReader, AcceptsPayloadExactlyAtACustomCap) {
  const std::string payload = R"({"a":"xyz"})";
  FrameReader at_cap(payload.size());
  at_cap.feed(raw_frame(payload));
  EXPECT_TRUE(at_cap.next()->has_value());
  FrameReader below(payload.size() - 1);
  below.feed(raw_frame(payload).substr(0, 4));
  expect_failed(below, errc::too_large);
}

TEST(FrameReader, RefusesZeroLengthPayload) {
  FrameReader reader;
  reader.feed(header(0));
  expect_failed(reader, errc::protocol);
}

TEST(FrameReader, RefusesNonJsonPayload) {
  FrameReader reader;
  reader.feed(raw_frame("{not json"));
  expect_failed(reader, errc::protocol);
}

TEST(FrameReader, RefusesInvalidUtf8Payload) {
  FrameReader reader;
  reader.feed(raw_frame("{\"a\":\"\xC0\xAF\"}"));
  expect_failed(reader, errc::protocol);
}

TEST(FrameReader, RefusesNonObjectPayloads) {
  for (const std::string payload : {"[1,2]", "\"text\"", "42", "null", "true"}) {
    FrameReader reader;
    reader.feed(raw_frame(payload));
    auto r = reader.next();
    ASSERT_FALSE(r.ok()) << payload;
    EXPECT_NE(r.error().message.find("not an object"), std::string::npos);
  }
}

TEST(FrameReader, RefusesDeeplyNestedPayload) {
  FrameReader reader;
  reader.feed(raw_frame("{\"a\":" + std::string(100000, '[') + std::string(100000, ']') + "}"));
  expect_failed(reader, errc::protocol);
}

TEST(FrameReader, ErrorIsStickyAndFollowingFramesAreIgnored) {
  FrameReader reader;
  reader.feed(raw_frame("nope") + *encode_frame(json{{"ok", true}}));
  const auto first = reader.next();
  ASSERT_FALSE(first.ok());
  const auto second = reader.next();
  ASSERT_FALSE(second.ok());
  EXPECT_EQ(first.error().message, second.error().message);
}

TEST(FrameReader, LargeFrameByteByByteStaysLinear) {
  const std::string frame = *encode_frame(json{{"data", std::string(1 << 20, 'z')}});
  FrameReader reader;
  for (std::size_t i = 0; i + 1 < frame.size(); ++i) {
    reader.feed(std::string_view(frame).substr(i, 1));
    ASSERT_FALSE(reader.next()->has_value());
  }
  reader.feed(std::string_view(frame).substr(frame.size() - 1));
  auto r = reader.next();
  ASSERT_TRUE(r.ok() && r->has_value());
  EXPECT_EQ((**r)["data"].get_ref<const std::string&>().size(), std::size_t{1} << 20);
}

}  // namespace
}  // namespace loopr::proto
