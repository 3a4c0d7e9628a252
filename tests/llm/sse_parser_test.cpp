// SseParser against the WHATWG "server-sent events" parsing rules, one rule
// per test, then whole provider streams split at every byte.
#include "llm/sse_parser.hpp"

#include <gtest/gtest.h>

#include <memory>
#include <string>
#include <string_view>
#include <vector>

namespace loopr::llm {
namespace {

SseEvent event(std::string data, std::string type = "message", std::string id = {}) {
  return SseEvent{std::move(type), std::move(data), std::move(id)};
}

// Feeds the pieces in order; fails the test on an error.
std::vector<SseEvent> parse_pieces(const std::vector<std::string_view>& pieces,
                                   SseParser* parser_out = nullptr) {
  SseParser local;
  SseParser& parser = parser_out != nullptr ? *parser_out : local;
  std::vector<SseEvent> events;
  for (const std::string_view piece : pieces) {
    const Result<void> fed = parser.feed(piece, events);
    EXPECT_TRUE(fed.ok()) << fed.error().message;
  }
  return events;
}

std::vector<SseEvent> parse(std::string_view stream) {
  return parse_pieces(std::vector<std::string_view>{stream});
}

TEST(SseParser, LineEndsLfCrAndCrlf) {
  EXPECT_EQ(parse("data: a\n\n"), std::vector<SseEvent>{event("a")});
  EXPECT_EQ(parse("data: b\r\r"), std::vector<SseEvent>{event("b")});
  EXPECT_EQ(parse("data: c\r\n\r\n"), std::vector<SseEvent>{event("c")});
  // Mixed in one stream.
  EXPECT_EQ(parse("data: a\ndata: b\rdata: c\r\n\n"), std::vector<SseEvent>{event("a\nb\nc")});
}

TEST(SseParser, CrAtTheEndOfOneChunkAndLfAtTheStartOfTheNextAreOneLineEnd) {
  // Were the LF a second line end, "x" would be dispatched on its own.
  EXPECT_EQ(parse_pieces({"data: x\r", "\ndata: y\r\n\r\n"}), std::vector<SseEvent>{event("x\ny")});
  EXPECT_EQ(parse_pieces({"data: x\r", "\n", "\r", "\n"}), std::vector<SseEvent>{event("x")});
  // A CR followed by something else in the next chunk is a line end on its own.
  EXPECT_EQ(parse_pieces({"data: x\r", "data: y\r\r"}), std::vector<SseEvent>{event("x\ny")});
  // A lone CR then a blank CR line.
  EXPECT_EQ(parse_pieces({"data: x\r", "\r"}), std::vector<SseEvent>{event("x")});
}

TEST(SseParser, CommentsAreIgnoredAndDoNotBreakAnEvent) {
  EXPECT_TRUE(parse(": keep-alive\n\n:\n\n").empty());
  EXPECT_EQ(parse("data: a\n: ping\ndata: b\n\n"), std::vector<SseEvent>{event("a\nb")});
}

TEST(SseParser, ByteOrderMarkAtTheStartIsSkipped) {
  EXPECT_EQ(parse("\xEF\xBB\xBF"
                  "data: x\n\n"),
            std::vector<SseEvent>{event("x")});
  // Split inside the BOM.
  EXPECT_EQ(parse_pieces({"\xEF", "\xBB", "\xBF", "data: x\n\n"}),
            std::vector<SseEvent>{event("x")});
  // Only at the very start: later it is part of a field name (unknown, ignored).
  EXPECT_EQ(parse("data: x\n\n\xEF\xBB\xBF"
                  "data: y\n\n"),
            std::vector<SseEvent>{event("x")});
  // Only one BOM is skipped.
  EXPECT_TRUE(parse("\xEF\xBB\xBF\xEF\xBB\xBF"
                    "data: y\n\n")
                  .empty());
}

TEST(SseParser, ABomPrefixThatIsNotABomIsKeptAsText) {
  // "\xEF\xBB" then not "\xBF": the held bytes belong to the first line, whose
  // field name is then unknown; the next line is parsed normally.
  EXPECT_EQ(parse_pieces({"\xEF\xBB", "X\ndata: z\n\n"}), std::vector<SseEvent>{event("z")});
  // And a stream that does not start with 0xEF is not held back at all.
  SseParser parser;
  std::vector<SseEvent> events;
  ASSERT_TRUE(parser.feed("d", events).ok());
  ASSERT_TRUE(parser.feed("ata: q\n\n", events).ok());
  EXPECT_EQ(events, std::vector<SseEvent>{event("q")});
}

TEST(SseParser, OnlyOneLeadingSpaceIsDropped) {
  EXPECT_EQ(parse("data:x\n\n"), std::vector<SseEvent>{event("x")});
  EXPECT_EQ(parse("data: x\n\n"), std::vector<SseEvent>{event("x")});
  EXPECT_EQ(parse("data:  x \n\n"), std::vector<SseEvent>{event(" x ")});
  EXPECT_EQ(parse("data:\tx\n\n"), std::vector<SseEvent>{event("\tx")});
  EXPECT_EQ(parse("data: {\"a\": \"b:c\"}\n\n"), std::vector<SseEvent>{event("{\"a\": \"b:c\"}")});
}

TEST(SseParser, AFieldWithoutAColonHasAnEmptyValue) {
  EXPECT_EQ(parse("data\n\n"), std::vector<SseEvent>{event("")});
  EXPECT_EQ(parse("data\ndata\n\n"), std::vector<SseEvent>{event("\n")});
  // "event" with an empty value leaves the default type.
  EXPECT_EQ(parse("event\ndata: x\n\n"), std::vector<SseEvent>{event("x")});
}

TEST(SseParser, DataLinesAreJoinedWithNewlines) {
  EXPECT_EQ(parse("data: a\ndata:\ndata: c\n\n"), std::vector<SseEvent>{event("a\n\nc")});
  EXPECT_EQ(parse("data: \n\n"), std::vector<SseEvent>{event("")});
}

TEST(SseParser, EventSetsTheTypeForOneEventOnly) {
  EXPECT_EQ(parse("event: content_block_delta\ndata: x\n\ndata: y\n\n"),
            (std::vector<SseEvent>{event("x", "content_block_delta"), event("y")}));
  // The last "event" line wins.
  EXPECT_EQ(parse("event: a\nevent: b\ndata: x\n\n"), std::vector<SseEvent>{event("x", "b")});
}

TEST(SseParser, IdPersistsAcrossEventsAndIsIgnoredWhenItHoldsNul) {
  using namespace std::string_literals;
  const std::string stream = "id: 7\ndata: a\n\ndata: b\n\nid: x\0y\ndata: c\n\nid\ndata: d\n\n"s;
  EXPECT_EQ(parse(stream),
            (std::vector<SseEvent>{event("a", "message", "7"), event("b", "message", "7"),
                                   event("c", "message", "7"), event("d")}));
  // An id in an event without data still sets the last event id.
  EXPECT_EQ(parse("id: 9\n\ndata: y\n\n"), std::vector<SseEvent>{event("y", "message", "9")});
}

TEST(SseParser, RetryIsKeptOnlyWhenAllDigits) {
  SseParser parser;
  parse_pieces({"retry: 3000\n"}, &parser);
  EXPECT_EQ(parser.retry_ms(), 3000);
  for (const std::string_view bad : {"retry: 3s\n", "retry: -1\n", "retry:\n", "retry:  5\n",
                                     "retry: 1.5\n", "retry: 99999999999999999999999\n"}) {
    parse_pieces({bad}, &parser);
    EXPECT_EQ(parser.retry_ms(), 3000) << bad;
  }
  parse_pieces({"retry: 0\n"}, &parser);
  EXPECT_EQ(parser.retry_ms(), 0);
  EXPECT_EQ(SseParser().retry_ms(), std::nullopt);
}

TEST(SseParser, UnknownFieldsAreIgnored) {
  EXPECT_EQ(parse("foo: bar\ndata: x\nData: y\nDATA: z\n: c\n\n"),
            std::vector<SseEvent>{event("x")});
  EXPECT_TRUE(parse("foo: bar\n\n").empty());
}

TEST(SseParser, ABlankLineWithoutDataDispatchesNothing) {
  EXPECT_TRUE(parse("\n\n\r\n").empty());
  // The type of the empty event does not leak into the next one.
  EXPECT_EQ(parse("event: ping\n\ndata: x\n\n"), std::vector<SseEvent>{event("x")});
}

TEST(SseParser, AMissingFinalBlankLineDispatchesNothingAndFinishSaysSo) {
  {
    SseParser parser;
    EXPECT_TRUE(parse_pieces({"data: x\n"}, &parser).empty());
    EXPECT_TRUE(parser.finish());
  }
  {
    SseParser parser;
    EXPECT_TRUE(parse_pieces({"data: x"}, &parser).empty());
    EXPECT_TRUE(parser.finish());
  }
  {
    SseParser parser;
    EXPECT_EQ(parse_pieces({"data: x\n\ndata: y\n"}, &parser), std::vector<SseEvent>{event("x")});
    EXPECT_TRUE(parser.finish());
  }
  {
    SseParser parser;
    EXPECT_EQ(parse_pieces({"data: x\n\n"}, &parser), std::vector<SseEvent>{event("x")});
    EXPECT_FALSE(parser.finish());
  }
  {
    SseParser parser;
    EXPECT_TRUE(parse_pieces({"data: x\n\n: keep-alive"}, &parser).size() == 1);
    EXPECT_FALSE(parser.finish());
  }
  EXPECT_FALSE(SseParser().finish());
}

TEST(SseParser, ALineOverTheCapIsTooLarge) {
  SseParser parser(16, 1024);
  std::vector<SseEvent> events;
  ASSERT_TRUE(parser.feed("data: 0123456789", events).ok());  // exactly 16
  const Result<void> fed = parser.feed("x", events);          // split across feeds
  ASSERT_FALSE(fed.ok());
  EXPECT_EQ(fed.error().code, errc::too_large);
  // After an error the parser accepts nothing more.
  const Result<void> again = parser.feed("\n\n", events);
  ASSERT_FALSE(again.ok());
  EXPECT_EQ(again.error().code, errc::too_large);
  EXPECT_TRUE(events.empty());
}

TEST(SseParser, AnEventOverTheCapIsTooLarge) {
  // The cap is on the event's data as dispatched: lines joined with '\n'.
  EXPECT_EQ(parse_pieces({"data: 0123456789\n\n"}, std::make_unique<SseParser>(1024, 10).get()),
            std::vector<SseEvent>{event("0123456789")});
  EXPECT_EQ(
      parse_pieces({"data: 01234\ndata: 5678\n\n"}, std::make_unique<SseParser>(1024, 10).get()),
      std::vector<SseEvent>{event("01234\n5678")});
  SseParser parser(1024, 10);
  std::vector<SseEvent> events;
  ASSERT_TRUE(parser.feed("data: 01234\n", events).ok());
  const Result<void> fed = parser.feed("data: 56789\n\n", events);
  ASSERT_FALSE(fed.ok());
  EXPECT_EQ(fed.error().code, errc::too_large);
  EXPECT_TRUE(events.empty());
}

// --- whole streams, every split -------------------------------------------

constexpr std::string_view kAnthropicStream =
    "event: message_start\n"
    "data: {\"type\":\"message_start\",\"message\":{\"id\":\"msg_01XFD\",\"type\":\"message\","
    "\"role\":\"assistant\",\"content\":[],\"model\":\"claude-sonnet-4-5\",\"stop_reason\":null,"
    "\"usage\":{\"input_tokens\":25,\"output_tokens\":1}}}\n"
    "\n"
    "event: content_block_start\n"
    "data: {\"type\":\"content_block_start\",\"index\":0,\"content_block\":{\"type\":\"text\","
    "\"text\":\"\"}}\n"
    "\n"
    "event: ping\n"
    "data: {\"type\": \"ping\"}\n"
    "\n"
    "event: content_block_delta\n"
    "data: {\"type\":\"content_block_delta\",\"index\":0,\"delta\":{\"type\":\"text_delta\","
    "\"text\":\"Hello\"}}\n"
    "\n"
    "event: content_block_delta\n"
    "data: {\"type\":\"content_block_delta\",\"index\":0,\"delta\":{\"type\":\"text_delta\","
    "\"text\":\" w\xC3\xB6rld \xE2\x9C\x93\"}}\n"
    "\n"
    "event: content_block_stop\n"
    "data: {\"type\":\"content_block_stop\",\"index\":0}\n"
    "\n"
    "event: content_block_start\n"
    "data: {\"type\":\"content_block_start\",\"index\":1,\"content_block\":{\"type\":\"tool_use\","
    "\"id\":\"toolu_01\",\"name\":\"read_file\",\"input\":{}}}\n"
    "\n"
    "event: content_block_delta\n"
    "data: {\"type\":\"content_block_delta\",\"index\":1,\"delta\":{\"type\":\"input_json_delta\","
    "\"partial_json\":\"{\\\"path\\\": \\\"a.txt\\\"}\"}}\n"
    "\n"
    "event: content_block_stop\n"
    "data: {\"type\":\"content_block_stop\",\"index\":1}\n"
    "\n"
    "event: message_delta\n"
    "data: {\"type\":\"message_delta\",\"delta\":{\"stop_reason\":\"tool_use\","
    "\"stop_sequence\":null},\"usage\":{\"output_tokens\":15}}\n"
    "\n"
    "event: message_stop\n"
    "data: {\"type\":\"message_stop\"}\n"
    "\n";

std::vector<SseEvent> anthropic_events() {
  return {
      event("{\"type\":\"message_start\",\"message\":{\"id\":\"msg_01XFD\",\"type\":\"message\","
            "\"role\":\"assistant\",\"content\":[],\"model\":\"claude-sonnet-4-5\","
            "\"stop_reason\":null,\"usage\":{\"input_tokens\":25,\"output_tokens\":1}}}",
            "message_start"),
      event("{\"type\":\"content_block_start\",\"index\":0,\"content_block\":{\"type\":\"text\","
            "\"text\":\"\"}}",
            "content_block_start"),
      event("{\"type\": \"ping\"}", "ping"),
      event("{\"type\":\"content_block_delta\",\"index\":0,\"delta\":{\"type\":\"text_delta\","
            "\"text\":\"Hello\"}}",
            "content_block_delta"),
      event("{\"type\":\"content_block_delta\",\"index\":0,\"delta\":{\"type\":\"text_delta\","
            "\"text\":\" w\xC3\xB6rld \xE2\x9C\x93\"}}",
            "content_block_delta"),
      event("{\"type\":\"content_block_stop\",\"index\":0}", "content_block_stop"),
      event("{\"type\":\"content_block_start\",\"index\":1,\"content_block\":{\"type\":"
            "\"tool_use\",\"id\":\"toolu_01\",\"name\":\"read_file\",\"input\":{}}}",
            "content_block_start"),
      event("{\"type\":\"content_block_delta\",\"index\":1,\"delta\":{\"type\":"
            "\"input_json_delta\",\"partial_json\":\"{\\\"path\\\": \\\"a.txt\\\"}\"}}",
            "content_block_delta"),
      event("{\"type\":\"content_block_stop\",\"index\":1}", "content_block_stop"),
      event("{\"type\":\"message_delta\",\"delta\":{\"stop_reason\":\"tool_use\","
            "\"stop_sequence\":null},\"usage\":{\"output_tokens\":15}}",
            "message_delta"),
      event("{\"type\":\"message_stop\"}", "message_stop"),
  };
}

// OpenAI-compatible chat completions: keep-alive comments, CRLF line ends,
// a tool call in pieces, the [DONE] sentinel.
constexpr std::string_view kOpenAiStream =
    ": OPENROUTER PROCESSING\r\n"
    "\r\n"
    "data: {\"id\":\"chatcmpl-9\",\"object\":\"chat.completion.chunk\",\"created\":1718000000,"
    "\"model\":\"gpt-4o\",\"choices\":[{\"index\":0,\"delta\":{\"role\":\"assistant\","
    "\"content\":\"\"},\"finish_reason\":null}]}\r\n"
    "\r\n"
    "data: {\"id\":\"chatcmpl-9\",\"object\":\"chat.completion.chunk\",\"choices\":[{\"index\":0,"
    "\"delta\":{\"content\":\"Hi\\n\"},\"finish_reason\":null}]}\r\n"
    "\r\n"
    ": keep-alive\r\n"
    "\r\n"
    "data: {\"id\":\"chatcmpl-9\",\"object\":\"chat.completion.chunk\",\"choices\":[{\"index\":0,"
    "\"delta\":{\"tool_calls\":[{\"index\":0,\"id\":\"call_1\",\"type\":\"function\","
    "\"function\":{\"name\":\"grep\",\"arguments\":\"\"}}]},\"finish_reason\":null}]}\r\n"
    "\r\n"
    "data: {\"id\":\"chatcmpl-9\",\"object\":\"chat.completion.chunk\",\"choices\":[{\"index\":0,"
    "\"delta\":{\"tool_calls\":[{\"index\":0,\"function\":{\"arguments\":\"{\\\"q\\\":1}\"}}]},"
    "\"finish_reason\":null}]}\r\n"
    "\r\n"
    "data: {\"id\":\"chatcmpl-9\",\"object\":\"chat.completion.chunk\",\"choices\":[{\"index\":0,"
    "\"delta\":{},\"finish_reason\":\"tool_calls\"}],\"usage\":{\"prompt_tokens\":9,"
    "\"completion_tokens\":12,\"total_tokens\":21}}\r\n"
    "\r\n"
    "data: [DONE]\r\n"
    "\r\n";

std::vector<SseEvent> openai_events() {
  return {
      event("{\"id\":\"chatcmpl-9\",\"object\":\"chat.completion.chunk\",\"created\":1718000000,"
            "\"model\":\"gpt-4o\",\"choices\":[{\"index\":0,\"delta\":{\"role\":\"assistant\","
            "\"content\":\"\"},\"finish_reason\":null}]}"),
      event("{\"id\":\"chatcmpl-9\",\"object\":\"chat.completion.chunk\",\"choices\":[{\"index\":"
            "0,\"delta\":{\"content\":\"Hi\\n\"},\"finish_reason\":null}]}"),
      event("{\"id\":\"chatcmpl-9\",\"object\":\"chat.completion.chunk\",\"choices\":[{\"index\":"
            "0,\"delta\":{\"tool_calls\":[{\"index\":0,\"id\":\"call_1\",\"type\":\"function\","
            "\"function\":{\"name\":\"grep\",\"arguments\":\"\"}}]},\"finish_reason\":null}]}"),
      event("{\"id\":\"chatcmpl-9\",\"object\":\"chat.completion.chunk\",\"choices\":[{\"index\":"
            "0,\"delta\":{\"tool_calls\":[{\"index\":0,\"function\":{\"arguments\":"
            "\"{\\\"q\\\":1}\"}}]},\"finish_reason\":null}]}"),
      event("{\"id\":\"chatcmpl-9\",\"object\":\"chat.completion.chunk\",\"choices\":[{\"index\":"
            "0,\"delta\":{},\"finish_reason\":\"tool_calls\"}],\"usage\":{\"prompt_tokens\":9,"
            "\"completion_tokens\":12,\"total_tokens\":21}}"),
      event("[DONE]"),
  };
}

// The stream split at every byte boundary, then fed one byte at a time: the
// events are always the same, and finish() never reports a truncation.
void expect_every_split_gives(std::string_view stream, const std::vector<SseEvent>& expected) {
  {
    SseParser parser;
    EXPECT_EQ(parse_pieces({stream}, &parser), expected);
    EXPECT_FALSE(parser.finish());
  }
  for (std::size_t split = 0; split <= stream.size(); ++split) {
    SseParser parser;
    EXPECT_EQ(parse_pieces({stream.substr(0, split), stream.substr(split)}, &parser), expected)
        << "split at byte " << split;
    EXPECT_FALSE(parser.finish());
    if (::testing::Test::HasFailure()) return;  // one report, not thousands
  }
  SseParser parser;
  std::vector<SseEvent> events;
  for (const char byte : stream) {
    ASSERT_TRUE(parser.feed(std::string_view(&byte, 1), events).ok());
  }
  EXPECT_EQ(events, expected);
  EXPECT_FALSE(parser.finish());
}

TEST(SseParser, AnthropicStreamSplitAtEveryByteGivesTheSameEvents) {
  expect_every_split_gives(kAnthropicStream, anthropic_events());
}

TEST(SseParser, OpenAiStreamSplitAtEveryByteGivesTheSameEvents) {
  expect_every_split_gives(kOpenAiStream, openai_events());
}

TEST(SseParser, StreamsWithABomAndCrLineEndsSplitAtEveryByte) {
  // The Anthropic stream with a BOM and bare CR line ends.
  std::string stream = "\xEF\xBB\xBF";
  for (const char c : kAnthropicStream)
    stream.push_back(c == '\n' ? '\r' : c);
  expect_every_split_gives(stream, anthropic_events());
}

TEST(SseParser, TruncatedStreamAtEverySplitNeverDispatchesTheCutEvent) {
  // Cut the OpenAI stream inside its last event: everything before it is
  // dispatched, the cut one is not, and finish() reports the truncation.
  const std::string_view cut = kOpenAiStream.substr(0, kOpenAiStream.size() - 3);  // "]\r\n"
  std::vector<SseEvent> expected = openai_events();
  expected.pop_back();
  for (std::size_t split = 0; split <= cut.size(); ++split) {
    SseParser parser;
    EXPECT_EQ(parse_pieces({cut.substr(0, split), cut.substr(split)}, &parser), expected)
        << "split at byte " << split;
    EXPECT_TRUE(parser.finish());
    if (::testing::Test::HasFailure()) return;
  }
}

}  // namespace
}  // namespace loopr::llm
