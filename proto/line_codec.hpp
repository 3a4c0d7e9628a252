// Control-socket framing (DESIGN.md §3): newline-delimited JSON, one value
// per line, a line capped at 16 MiB.
#pragma once

#include <cstddef>
#include <nlohmann/json.hpp>
#include <optional>
#include <string>
#include <string_view>

#include "common/error.hpp"
#include "proto/json_bounded.hpp"

namespace loopr::proto {

inline constexpr std::size_t kMaxLineBytes = std::size_t{16} * 1024 * 1024;

// Compact JSON of `object` plus '\n'. Strings that are not valid UTF-8 are
// written with U+FFFD replacements instead of failing (control clients only
// ever see text). Refuses a value that is not an object (errc::protocol) and a
// line over kMaxLineBytes (errc::too_large). Never throws.
Result<std::string> encode_line(const nlohmann::json& object);

// Incremental NDJSON decoder for one direction of one control connection.
//
// Contract: feed() whatever bytes the socket produced, then call next() until
// it returns nullopt (needs more bytes) or an Error. Empty lines and a '\r'
// before the '\n' are skipped. next() returns any JSON value; the message
// parsers (control_messages.hpp) decide whether its shape is a request.
//
// Two kinds of Error:
//  - a line that is not JSON (or nests too deeply) is a per-line error: the
//    line is dropped, failed() stays false and the next call to next()
//    continues with the following line; the Error's details hold
//    {"rpc_code": -32700} so the server can answer with a parse error;
//  - more than kMaxLineBytes buffered without a newline is fatal: failed()
//    becomes true, the buffer is released, further feeds are ignored and every
//    next() returns that Error; the owner closes the connection.
// Caps: buffered memory stays within max_line + 1 bytes plus one feed,
// provided next() is drained between feeds. Each byte is scanned for '\n'
// once, so a line delivered one byte at a time costs linear time.
// Not thread-safe: one reader belongs to the one coroutine reading the socket.
class LineReader {
 public:
  explicit LineReader(std::size_t max_line = kMaxLineBytes,
                      std::size_t max_depth = kDefaultMaxJsonDepth);

  void feed(std::string_view bytes);
  Result<std::optional<nlohmann::json>> next();

  bool failed() const { return error_.has_value(); }
  std::size_t buffered() const { return buffer_.size() - offset_; }

 private:
  std::size_t max_line_;
  std::size_t max_depth_;
  std::string buffer_;
  std::size_t offset_ = 0;   // first unconsumed byte
  std::size_t scanned_ = 0;  // bytes from offset_ already known to hold no '\n'
  std::optional<Error> error_;
};

}  // namespace loopr::proto
