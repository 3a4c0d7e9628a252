// libFuzzer target: arbitrary text as one runner frame payload. Anything
// parse_runner_message accepts must round-trip exactly; base64 must
// round-trip whatever it accepts.
#include <cstddef>
#include <cstdint>
#include <cstdlib>
#include <string_view>

#include "proto/base64.hpp"
#include "proto/json_bounded.hpp"
#include "proto/runner_messages.hpp"

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  namespace proto = loopr::proto;
  const std::string_view text(reinterpret_cast<const char*>(data), size);

  if (auto decoded = proto::base64_decode(text); decoded.ok()) {
    if (proto::base64_encode(*decoded) != text) std::abort();
  }

  auto json = proto::parse_json_bounded(text);
  if (!json.ok()) return 0;
  auto message = proto::parse_runner_message(*json);
  if (!message.ok()) {
    if (message.error().code != loopr::errc::protocol) std::abort();
    return 0;
  }
  const auto wire = proto::to_json(*message);
  if (wire.value("type", "") != proto::message_type(*message)) std::abort();
  auto again = proto::parse_runner_message(wire);
  if (!again.ok() || !(*again == *message)) std::abort();
  return 0;
}
