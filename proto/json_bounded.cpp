#include "proto/json_bounded.hpp"

#include <exception>
#include <string>

#include "common/utf8.hpp"

namespace loopr::proto {

bool json_depth_within(std::string_view text, std::size_t max_depth) {
  std::size_t depth = 0;
  bool in_string = false;
  bool escaped = false;
  for (const char c : text) {
    if (in_string) {
      if (escaped) {
        escaped = false;
      } else if (c == '\\') {
        escaped = true;
      } else if (c == '"') {
        in_string = false;
      }
      continue;
    }
    switch (c) {
      case '"':
        in_string = true;
        break;
      case '[':
      case '{':
        if (++depth > max_depth) return false;
        break;
      case ']':
      case '}':
        // Unbalanced closers are left for the parser to refuse.
        if (depth > 0) --depth;
        break;
      default:
        break;
    }
  }
  return true;
}

Result<nlohmann::json> parse_json_bounded(std::string_view text, std::size_t max_depth) {
  if (!json_depth_within(text, max_depth)) {
    return make_error(errc::protocol,
                      "JSON nesting is deeper than " + std::to_string(max_depth) + " levels",
                      "send flatter JSON");
  }
  try {
    return nlohmann::json::parse(text.begin(), text.end());
  } catch (const nlohmann::json::exception& e) {
    // nlohmann quotes the offending input, which may be any bytes: keep the
    // message short and valid UTF-8 so it can travel in a reply.
    const std::string_view what = e.what();
    return make_error(errc::protocol,
                      "invalid JSON: " + to_lossy_utf8(what.substr(0, utf8_safe_prefix(what, 200))),
                      "send one well-formed UTF-8 JSON value");
  } catch (const std::exception& e) {
    // std::bad_alloc and the like: still an error reply, never a crash.
    return make_error(errc::protocol, std::string("cannot parse JSON: ") + e.what());
  }
}

}  // namespace loopr::proto
