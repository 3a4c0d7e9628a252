// libFuzzer target: arbitrary bytes on a control connection. The first input
// byte picks the chunk size and the line cap, the rest is the byte stream.
// Every line goes through the server- and client-side parsers; every refusal
// must turn into an encodable error reply.
#include <cstddef>
#include <cstdint>
#include <cstdlib>
#include <string_view>

#include "proto/control_messages.hpp"
#include "proto/line_codec.hpp"

namespace {

namespace proto = loopr::proto;

void reply_must_encode(const loopr::Error& error) {
  const auto reply = proto::error_reply(error);
  if (!reply.is_error()) std::abort();
  if (!proto::encode_line(proto::to_json(reply)).ok()) std::abort();
}

void exercise(const nlohmann::json& value) {
  auto request = proto::parse_request(value);
  if (request.ok()) {
    auto again = proto::parse_request(proto::to_json(*request));
    if (!again.ok() || !(*again == *request)) std::abort();
    if (auto p = proto::parse_tool_call_params(request->params); !p.ok()) {
      reply_must_encode(p.error());
    }
    (void)proto::parse_initialize_params(request->params);
    (void)proto::parse_approval_decision_params(request->params);
    (void)proto::parse_subscribe_params(request->params);
  } else {
    reply_must_encode(request.error());
  }
  auto server = proto::parse_server_message(value);
  if (server.ok()) {
    const auto wire = std::visit([](const auto& m) { return proto::to_json(m); }, *server);
    auto again = proto::parse_server_message(wire);
    if (!again.ok() || !(*again == *server)) std::abort();
  }
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  if (size == 0) return 0;
  const std::size_t chunk = std::size_t{1} + (data[0] & 0x1F);
  const std::size_t cap = (data[0] & 0x80) ? 32 : proto::kMaxLineBytes;
  std::string_view bytes(reinterpret_cast<const char*>(data + 1), size - 1);

  proto::LineReader reader(cap);
  while (!bytes.empty()) {
    const std::size_t n = chunk < bytes.size() ? chunk : bytes.size();
    reader.feed(bytes.substr(0, n));
    bytes.remove_prefix(n);
    while (true) {
      auto next = reader.next();
      if (!next.ok()) {
        reply_must_encode(next.error());
        if (reader.failed()) return 0;
        continue;
      }
      if (!next->has_value()) break;
      exercise(**next);
    }
    if (reader.buffered() > cap + 1 + chunk) std::abort();
  }
  return 0;
}
