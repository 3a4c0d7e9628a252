// SseParser: an incremental parser of a text/event-stream body, following
// the WHATWG HTML Living Standard's "server-sent events" parsing rules:
// lines end in CRLF, LF or CR (a CR at the end of one chunk and an LF at the
// start of the next are one line end); a line starting with ':' is a comment
// (Anthropic's and OpenAI's keep-alives); "field: value" drops one leading
// space of the value; a line without ':' is a field with an empty value;
// "data" lines are joined with '\n'; a blank line dispatches the event
// (nothing is dispatched when no data line came); "event" sets the type
// (default "message"), "id" sets the last event id unless it holds NUL,
// "retry" is kept when all digits; other fields are ignored. A UTF-8 BOM at
// the very start is skipped. At the end of the stream an event without its
// blank line is NOT dispatched (finish() reports whether one was pending).
//
// Caps: a line longer than max_line_bytes or an event whose data exceeds
// max_event_bytes is an error (errc::too_large), after which the parser
// accepts nothing more.
// Threads: thread-compatible (one owner).
#pragma once

#include <cstddef>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "common/error.hpp"

namespace loopr::llm {

struct SseEvent {
  std::string type = "message";
  std::string data;
  std::string last_event_id;

  bool operator==(const SseEvent&) const = default;
};

class SseParser {
 public:
  explicit SseParser(std::size_t max_line_bytes = std::size_t{4} * 1024 * 1024,
                     std::size_t max_event_bytes = std::size_t{16} * 1024 * 1024);

  // Feeds the next bytes (any split); appends every event they complete.
  Result<void> feed(std::string_view bytes, std::vector<SseEvent>& out);
  // The stream ended. True when the bytes fed end in the middle of an event
  // (data without the blank line): a truncated stream.
  bool finish() const;
  // The "retry" field's last value, in milliseconds.
  std::optional<long long> retry_ms() const { return retry_ms_; }

 private:
  Result<void> fail(std::string message);
  // Splits complete lines off `bytes`; a partial line waits in line_.
  Result<void> take_lines(std::string_view bytes, std::vector<SseEvent>& out);
  Result<void> process_line(std::string_view line, std::vector<SseEvent>& out);
  void dispatch(std::vector<SseEvent>& out);

  std::size_t max_line_bytes_;
  std::size_t max_event_bytes_;
  std::string line_;          // the current line so far (or, before started_, a BOM prefix)
  bool last_was_cr_ = false;  // the previous byte ended a line with CR: skip one LF
  bool started_ = false;      // past the possible BOM at the very start
  bool failed_ = false;       // a cap was exceeded: accept nothing more
  std::string type_;          // the event type buffer
  std::string data_;          // the data buffer: every data line followed by '\n'
  std::string last_event_id_;
  std::optional<long long> retry_ms_;
};

}  // namespace loopr::llm
