// libFuzzer target: arbitrary bytes on a runner link. The first input byte
// picks the chunk size and the payload cap, the rest is the byte stream.
// Every decoded object goes through parse_runner_message; every parsed
// message must survive to_json → encode_frame → FrameReader → parse.
#include <cstddef>
#include <cstdint>
#include <cstdlib>
#include <string_view>

#include "proto/frame_codec.hpp"
#include "proto/runner_messages.hpp"

namespace {

using loopr::proto::FrameReader;

void check_round_trip(const loopr::proto::RunnerMessage& message) {
  auto frame = loopr::proto::encode_frame(loopr::proto::to_json(message));
  if (!frame.ok()) {
    // Only a re-encoding over the cap may fail.
    if (frame.error().code != loopr::errc::too_large) std::abort();
    return;
  }
  FrameReader reader;
  reader.feed(*frame);
  auto decoded = reader.next();
  if (!decoded.ok() || !decoded->has_value()) std::abort();
  auto again = loopr::proto::parse_runner_message(**decoded);
  if (!again.ok() || !(*again == message)) std::abort();
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  if (size == 0) return 0;
  const std::size_t chunk = std::size_t{1} + (data[0] & 0x1F);
  const std::size_t cap = (data[0] & 0x80) ? 64 : loopr::proto::kMaxFramePayload;
  std::string_view bytes(reinterpret_cast<const char*>(data + 1), size - 1);

  FrameReader reader(cap);
  while (!bytes.empty()) {
    const std::size_t n = chunk < bytes.size() ? chunk : bytes.size();
    reader.feed(bytes.substr(0, n));
    bytes.remove_prefix(n);
    while (true) {
      auto next = reader.next();
      if (!next.ok()) {
        if (!reader.failed() || reader.buffered() != 0) std::abort();
        return 0;
      }
      if (!next->has_value()) break;
      if (!(*next)->is_object()) std::abort();
      auto message = loopr::proto::parse_runner_message(**next);
      if (message.ok()) check_round_trip(*message);
    }
    if (reader.buffered() > 4 + cap + chunk) std::abort();
  }
  return 0;
}
