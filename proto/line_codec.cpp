#include "proto/line_codec.hpp"

#include <exception>
#include <utility>

namespace loopr::proto {
namespace {

constexpr std::size_t kKeepCapacity = 1024 * 1024;

}  // namespace

Result<std::string> encode_line(const nlohmann::json& object) {
  if (!object.is_object()) {
    return make_error(errc::protocol, std::string("a control line must hold a JSON object, not ") +
                                          object.type_name());
  }
  std::string out;
  try {
    out = object.dump(-1, ' ', false, nlohmann::json::error_handler_t::replace);
  } catch (const std::exception& e) {
    return make_error(errc::internal, std::string("cannot encode line: ") + e.what());
  }
  if (out.size() > kMaxLineBytes) {
    return make_error(errc::too_large,
                      "line of " + std::to_string(out.size()) + " bytes exceeds the " +
                          std::to_string(kMaxLineBytes) + "-byte cap",
                      "send large data in several messages");
  }
  out += '\n';
  return out;
}

LineReader::LineReader(std::size_t max_line, std::size_t max_depth)
    : max_line_(max_line), max_depth_(max_depth) {}

void LineReader::feed(std::string_view bytes) {
  if (failed() || bytes.empty()) return;
  // Consumed bytes are dropped once per feed; the unconsumed tail is a partial
  // line, so each byte is moved at most once.
  if (offset_ > 0) {
    buffer_.erase(0, offset_);
    offset_ = 0;
  }
  buffer_.append(bytes);
}

Result<std::optional<nlohmann::json>> LineReader::next() {
  while (true) {
    if (error_) return *error_;
    const std::string_view pending = std::string_view(buffer_).substr(offset_);
    const std::size_t newline = pending.find('\n', scanned_);
    if (newline == std::string_view::npos) {
      scanned_ = pending.size();
      // A line of exactly max_line_ bytes may still be waiting for "\r\n"'s '\n'.
      const std::size_t allowed = max_line_ + (!pending.empty() && pending.back() == '\r' ? 1 : 0);
      if (pending.size() > allowed) {
        error_ = make_error(
            errc::too_large,
            "control line exceeds the " + std::to_string(max_line_) + "-byte cap without a newline",
            "send one JSON object per line, each under the cap");
        std::string().swap(buffer_);
        offset_ = 0;
        scanned_ = 0;
        return *error_;
      }
      if (pending.empty()) {
        if (buffer_.capacity() > kKeepCapacity) {
          std::string().swap(buffer_);
        } else {
          buffer_.clear();
        }
        offset_ = 0;
        scanned_ = 0;
      }
      return std::optional<nlohmann::json>{};
    }
    std::string_view line = pending.substr(0, newline);
    offset_ += newline + 1;
    scanned_ = 0;
    if (!line.empty() && line.back() == '\r') line.remove_suffix(1);
    if (line.size() > max_line_) {
      // Arrived whole in one feed: same fatal verdict as the unterminated case.
      error_ = make_error(errc::too_large, "control line of " + std::to_string(line.size()) +
                                               " bytes exceeds the " + std::to_string(max_line_) +
                                               "-byte cap");
      std::string().swap(buffer_);
      offset_ = 0;
      return *error_;
    }
    if (line.find_first_not_of(" \t\r") == std::string_view::npos) continue;
    auto parsed = parse_json_bounded(line, max_depth_);
    if (!parsed) {
      Error error = std::move(parsed).error();
      error.details = {{"rpc_code", -32700}};
      return error;
    }
    return std::optional<nlohmann::json>(std::move(parsed).value());
  }
}

}  // namespace loopr::proto
