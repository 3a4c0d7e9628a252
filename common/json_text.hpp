// Reading a text member of a JSON document that may not have it: the one
// accessor the code that reads events, tool outputs and replies shares,
// instead of a private copy in each file.
#pragma once

#include <nlohmann/json.hpp>
#include <string>
#include <string_view>

namespace loopr {

// object[key] when `object` is an object whose `key` is a string; else "".
inline std::string text_member(const nlohmann::json& object, std::string_view key) {
  if (!object.is_object()) return {};
  const auto it = object.find(key);
  return it != object.end() && it->is_string() ? it->get<std::string>() : std::string();
}

}  // namespace loopr
