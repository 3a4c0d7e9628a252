// Runner-link framing (DESIGN.md §4): a 4-byte big-endian payload length,
// then that many bytes holding one UTF-8 JSON object.
#pragma once

#include <cstddef>
#include <cstdint>
#include <nlohmann/json.hpp>
#include <optional>
#include <string>
#include <string_view>

#include "common/error.hpp"
#include "proto/json_bounded.hpp"

namespace loopr::proto {

inline constexpr std::size_t kFrameHeaderBytes = 4;
inline constexpr std::size_t kMaxFramePayload = std::size_t{16} * 1024 * 1024;

// Header + compact JSON of `object`. Refuses (errc::protocol) a value that is
// not an object, a string that is not valid UTF-8 (bytes that may not be text
// belong in a base64 field, see runner_messages.hpp), and a payload over
// kMaxFramePayload (errc::too_large). Never throws.
Result<std::string> encode_frame(const nlohmann::json& object);

// Header + `payload` as it is, for links whose payload is not one JSON object
// (the warm worker's, proto/worker_messages.hpp). Refuses an empty payload
// and one over `max_payload` (errc::too_large).
Result<std::string> encode_raw_frame(std::string_view payload,
                                     std::size_t max_payload = kMaxFramePayload);

// Incremental decoder for one direction of one runner link.
//
// Contract: feed() whatever bytes the socket produced, then call next() until
// it returns nullopt (needs more bytes) or an Error. Frames may be split at
// any byte and several may arrive in one feed.
// Caps: an announced length of zero or over kMaxFramePayload is refused as
// soon as its 4 header bytes are buffered, before any payload is stored or
// reserved. Buffered memory stays within one frame (<= 4 + kMaxFramePayload)
// plus one feed, provided next() is drained between feeds.
// Errors are final: after the first Error the reader drops its buffer,
// ignores further feeds and returns that Error again from every next(); the
// owner closes the link (the supervisor restarts the runner).
// Not thread-safe: one reader belongs to the one coroutine reading the link.
class FrameReader {
 public:
  explicit FrameReader(std::size_t max_payload = kMaxFramePayload,
                       std::size_t max_depth = kDefaultMaxJsonDepth);

  void feed(std::string_view bytes);
  Result<std::optional<nlohmann::json>> next();
  // The next frame's payload as it is, not parsed (same caps and errors, but
  // any bytes are accepted). Use one of next() and next_payload() per link.
  Result<std::optional<std::string>> next_payload();

  bool failed() const { return error_.has_value(); }
  // Bytes received but not yet returned as frames.
  std::size_t buffered() const { return buffer_.size() - offset_; }

 private:
  Error fail(Error error);
  // The length of the complete frame at the front, 0 if more bytes are
  // needed, or an Error (already recorded) for a bad header.
  Result<std::size_t> complete_frame_length();
  void consume(std::size_t length);

  std::size_t max_payload_;
  std::size_t max_depth_;
  std::string buffer_;
  std::size_t offset_ = 0;  // start of the first unconsumed byte in buffer_
  std::optional<Error> error_;
};

}  // namespace loopr::proto
