// Test support for the wire codecs: feeds a stream body, in the given
// pieces, through SseParser into a WireFormat's StreamAccumulator.
#pragma once

#include <string>
#include <string_view>
#include <vector>

#include "llm/sse_parser.hpp"
#include "llm/wire_format.hpp"

namespace loopr::llm::wire_test {

struct StreamOutcome {
  Result<ModelTurn> turn = make_error("unset", "unset");
  std::string streamed_text;
  bool complete = false;
};

inline StreamOutcome run_stream(const WireFormat& wire,
                                const std::vector<std::string_view>& pieces) {
  StreamOutcome outcome;
  SseParser parser;
  auto stream = wire.start_stream();
  auto sink = [&](std::string_view text) { outcome.streamed_text += text; };
  for (std::string_view piece : pieces) {
    std::vector<SseEvent> events;
    auto fed = parser.feed(piece, events);
    if (!fed) {
      outcome.turn = std::move(fed).error();
      return outcome;
    }
    for (const auto& event : events) {
      auto r = stream->feed(event, sink);
      if (!r) {
        outcome.turn = std::move(r).error();
        return outcome;
      }
    }
  }
  outcome.complete = stream->complete();
  outcome.turn = stream->finish();
  return outcome;
}

}  // namespace loopr::llm::wire_test
