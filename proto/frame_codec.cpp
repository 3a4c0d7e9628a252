#include "proto/frame_codec.hpp"

#include <exception>
#include <utility>

namespace loopr::proto {
namespace {

// An emptied buffer keeps its allocation for the next frame unless it grew
// past this (a rare large frame should not pin memory on an idle link).
constexpr std::size_t kKeepCapacity = 1024 * 1024;

std::uint32_t read_be32(std::string_view bytes) {
  std::uint32_t value = 0;
  for (std::size_t i = 0; i < kFrameHeaderBytes; ++i) {
    value = (value << 8) | static_cast<unsigned char>(bytes[i]);
  }
  return value;
}

}  // namespace

Result<std::string> encode_frame(const nlohmann::json& object) {
  if (!object.is_object()) {
    return make_error(errc::protocol,
                      std::string("a frame must hold a JSON object, not ") + object.type_name());
  }
  std::string out(kFrameHeaderBytes, '\0');
  try {
    out += object.dump();
  } catch (const nlohmann::json::exception& e) {
    return make_error(errc::protocol, std::string("cannot encode frame: ") + e.what(),
                      "put bytes that may not be UTF-8 in a base64 field");
  } catch (const std::exception& e) {
    return make_error(errc::internal, std::string("cannot encode frame: ") + e.what());
  }
  const std::size_t payload = out.size() - kFrameHeaderBytes;
  if (payload > kMaxFramePayload) {
    return make_error(errc::too_large,
                      "frame payload of " + std::to_string(payload) + " bytes exceeds the " +
                          std::to_string(kMaxFramePayload) + "-byte cap",
                      "send large output in several chunks");
  }
  for (std::size_t i = 0; i < kFrameHeaderBytes; ++i) {
    out[i] = static_cast<char>((payload >> (8 * (kFrameHeaderBytes - 1 - i))) & 0xFF);
  }
  return out;
}

Result<std::string> encode_raw_frame(std::string_view payload, std::size_t max_payload) {
  if (payload.empty()) return make_error(errc::protocol, "a frame's payload may not be empty");
  if (payload.size() > max_payload) {
    return make_error(errc::too_large, "frame payload of " + std::to_string(payload.size()) +
                                           " bytes exceeds the " + std::to_string(max_payload) +
                                           "-byte cap");
  }
  std::string out(kFrameHeaderBytes, '\0');
  for (std::size_t i = 0; i < kFrameHeaderBytes; ++i) {
    out[i] = static_cast<char>((payload.size() >> (8 * (kFrameHeaderBytes - 1 - i))) & 0xFF);
  }
  out.append(payload);
  return out;
}

FrameReader::FrameReader(std::size_t max_payload, std::size_t max_depth)
    : max_payload_(max_payload), max_depth_(max_depth) {}

void FrameReader::feed(std::string_view bytes) {
  if (failed() || bytes.empty()) return;
  // Consumed bytes are dropped here, once per feed: a byte is moved at most
  // once (it is consumed before the following feed or stays at the front).
  if (offset_ > 0) {
    buffer_.erase(0, offset_);
    offset_ = 0;
  }
  buffer_.append(bytes);
}

Error FrameReader::fail(Error error) {
  error_ = error;
  std::string().swap(buffer_);
  offset_ = 0;
  return error;
}

Result<std::size_t> FrameReader::complete_frame_length() {
  if (error_) return *error_;
  const std::string_view pending = std::string_view(buffer_).substr(offset_);
  if (pending.size() < kFrameHeaderBytes) return std::size_t{0};
  const std::size_t length = read_be32(pending);
  if (length == 0) return fail(make_error(errc::protocol, "frame with an empty payload"));
  if (length > max_payload_) {
    return fail(make_error(errc::too_large, "frame announces " + std::to_string(length) +
                                                " payload bytes, over the " +
                                                std::to_string(max_payload_) + "-byte cap"));
  }
  if (pending.size() - kFrameHeaderBytes < length) return std::size_t{0};
  return length;
}

void FrameReader::consume(std::size_t length) {
  offset_ += kFrameHeaderBytes + length;
  if (offset_ == buffer_.size()) {
    if (buffer_.capacity() > kKeepCapacity) {
      std::string().swap(buffer_);
    } else {
      buffer_.clear();
    }
    offset_ = 0;
  }
}

Result<std::optional<nlohmann::json>> FrameReader::next() {
  auto length = complete_frame_length();
  if (!length) return std::move(length).error();
  if (*length == 0) return std::optional<nlohmann::json>{};
  const std::string_view payload =
      std::string_view(buffer_).substr(offset_ + kFrameHeaderBytes, *length);
  auto parsed = parse_json_bounded(payload, max_depth_);
  if (!parsed) return fail(std::move(parsed).error());
  if (!parsed->is_object()) {
    return fail(make_error(errc::protocol, std::string("frame holds a JSON ") +
                                               parsed->type_name() + ", not an object"));
  }
  consume(*length);
  return std::optional<nlohmann::json>(std::move(parsed).value());
}

Result<std::optional<std::string>> FrameReader::next_payload() {
  auto length = complete_frame_length();
  if (!length) return std::move(length).error();
  if (*length == 0) return std::optional<std::string>{};
  std::string payload = buffer_.substr(offset_ + kFrameHeaderBytes, *length);
  consume(*length);
  return std::optional<std::string>(std::move(payload));
}

}  // namespace loopr::proto
