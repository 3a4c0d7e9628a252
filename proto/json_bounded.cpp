#include "proto/json_bounded.hpp"

#include <exception>
#include <string>

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
    return make_error(errc::protocol, std::string("invalid JSON: ") + e.what(),
                      "send one well-formed UTF-8 JSON value");
  } catch (const std::exception& e) {
    // std::bad_alloc and the like: still an error reply, never a crash.
    return make_error(errc::protocol, std::string("cannot parse JSON: ") + e.what());
  }
}

}  // namespace loopr::proto
