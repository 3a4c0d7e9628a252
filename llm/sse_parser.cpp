#include "llm/sse_parser.hpp"

#include <charconv>
#include <utility>

namespace loopr::llm {
namespace {

constexpr std::string_view kBom = "\xEF\xBB\xBF";

bool all_digits(std::string_view text) {
  if (text.empty()) return false;
  for (const char c : text) {
    if (c < '0' || c > '9') return false;
  }
  return true;
}

}  // namespace

SseParser::SseParser(std::size_t max_line_bytes, std::size_t max_event_bytes)
    : max_line_bytes_(max_line_bytes), max_event_bytes_(max_event_bytes) {}

Result<void> SseParser::fail(std::string message) {
  failed_ = true;
  line_.clear();
  data_.clear();
  type_.clear();
  return make_error(loopr::errc::too_large, std::move(message),
                    "the event stream is not what a provider sends; check the endpoint");
}

Result<void> SseParser::feed(std::string_view bytes, std::vector<SseEvent>& out) {
  if (failed_) {
    return make_error(loopr::errc::too_large, "the event stream already exceeded a cap",
                      "start a new request");
  }
  if (!started_) {
    // The BOM may arrive split over several feeds: hold its prefix in line_
    // until three bytes decide.
    while (!bytes.empty() && line_.size() < kBom.size() && bytes.front() == kBom[line_.size()]) {
      line_.push_back(bytes.front());
      bytes.remove_prefix(1);
    }
    if (line_.size() == kBom.size()) {
      line_.clear();
      started_ = true;
    } else if (!bytes.empty()) {
      // Not a BOM: what was held back is ordinary stream text.
      started_ = true;
      std::string held = std::move(line_);
      line_.clear();
      if (auto taken = take_lines(held, out); !taken) return taken;
    } else {
      return {};  // still undecided
    }
  }
  return take_lines(bytes, out);
}

Result<void> SseParser::take_lines(std::string_view bytes, std::vector<SseEvent>& out) {
  while (!bytes.empty()) {
    if (last_was_cr_) {
      last_was_cr_ = false;
      if (bytes.front() == '\n') {
        bytes.remove_prefix(1);
        continue;
      }
    }
    const std::size_t end = bytes.find_first_of("\r\n");
    const std::size_t length = end == std::string_view::npos ? bytes.size() : end;
    if (line_.size() + length > max_line_bytes_) {
      return fail("an event-stream line is longer than " + std::to_string(max_line_bytes_) +
                  " bytes");
    }
    if (end == std::string_view::npos) {
      line_.append(bytes);
      return {};
    }
    last_was_cr_ = bytes[end] == '\r';
    Result<void> processed = [&]() -> Result<void> {
      if (line_.empty()) return process_line(bytes.substr(0, end), out);
      line_.append(bytes.substr(0, end));
      return process_line(line_, out);
    }();
    line_.clear();
    if (!processed) return processed;
    bytes.remove_prefix(end + 1);
  }
  return {};
}

Result<void> SseParser::process_line(std::string_view line, std::vector<SseEvent>& out) {
  if (line.empty()) {
    dispatch(out);
    return {};
  }
  if (line.front() == ':') return {};  // a comment: the providers' keep-alives
  std::string_view field = line;
  std::string_view value;
  if (const std::size_t colon = line.find(':'); colon != std::string_view::npos) {
    field = line.substr(0, colon);
    value = line.substr(colon + 1);
    if (!value.empty() && value.front() == ' ') value.remove_prefix(1);
  }
  if (field == "event") {
    type_.assign(value);
  } else if (field == "data") {
    if (data_.size() + value.size() > max_event_bytes_) {
      return fail("an event's data is larger than " + std::to_string(max_event_bytes_) + " bytes");
    }
    data_.append(value);
    data_.push_back('\n');
  } else if (field == "id") {
    if (value.find('\0') == std::string_view::npos) last_event_id_.assign(value);
  } else if (field == "retry") {
    long long ms = 0;
    if (all_digits(value)) {
      const auto [ptr, ec] = std::from_chars(value.data(), value.data() + value.size(), ms);
      if (ec == std::errc{} && ptr == value.data() + value.size()) retry_ms_ = ms;
    }
  }
  // Any other field is ignored, as the standard says.
  return {};
}

void SseParser::dispatch(std::vector<SseEvent>& out) {
  if (data_.empty()) {
    type_.clear();
    return;
  }
  data_.pop_back();  // the '\n' after the last data line
  SseEvent event;
  if (!type_.empty()) event.type = std::move(type_);
  event.data = std::move(data_);
  event.last_event_id = last_event_id_;
  out.push_back(std::move(event));
  type_.clear();
  data_.clear();
}

bool SseParser::finish() const {
  if (!data_.empty()) return true;
  // An unterminated line that is not a comment is a cut-off field.
  return started_ && !line_.empty() && line_.front() != ':';
}

}  // namespace loopr::llm
