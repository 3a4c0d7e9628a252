// Small ASCII text helpers for protocol fields (HTTP headers and the like),
// where case-folding and blanks follow ASCII, not the locale.
#pragma once

#include <algorithm>
#include <cctype>
#include <string>
#include <string_view>

namespace loopr {

// `text` without leading and trailing spaces and tabs (HTTP's OWS).
inline std::string_view trim_blanks(std::string_view text) {
  while (!text.empty() && (text.front() == ' ' || text.front() == '\t'))
    text.remove_prefix(1);
  while (!text.empty() && (text.back() == ' ' || text.back() == '\t'))
    text.remove_suffix(1);
  return text;
}

// `text` without leading and trailing ASCII white space (" \t\r\n\f\v").
inline std::string_view trim_space(std::string_view text) {
  constexpr std::string_view kSpace = " \t\r\n\f\v";
  const std::size_t first = text.find_first_not_of(kSpace);
  if (first == std::string_view::npos) return {};
  return text.substr(first, text.find_last_not_of(kSpace) - first + 1);
}

// `text` with ASCII letters in lower case (others as they are).
inline std::string ascii_lower(std::string_view text) {
  std::string out(text);
  std::transform(out.begin(), out.end(), out.begin(),
                 [](unsigned char c) { return static_cast<char>(std::tolower(c)); });
  return out;
}

// Equal, ignoring ASCII case.
inline bool equals_ignoring_case(std::string_view a, std::string_view b) {
  return a.size() == b.size() && std::equal(a.begin(), a.end(), b.begin(), [](char x, char y) {
           return std::tolower(static_cast<unsigned char>(x)) ==
                  std::tolower(static_cast<unsigned char>(y));
         });
}

}  // namespace loopr
