#include "common/secret.hpp"

#include <ostream>
#include <string_view>

namespace loopr {

std::ostream& operator<<(std::ostream& out, const Secret&) {
  return out << "[secret]";
}
void PrintTo(const Secret&, std::ostream* out) {
  *out << "[secret]";
}

std::string redact(std::string text, const Secret* key) {
  if (key == nullptr || key->empty()) return text;
  const std::string& needle = key->reveal();
  static constexpr std::string_view kMark = "[redacted]";
  for (std::size_t at = text.find(needle); at != std::string::npos;
       at = text.find(needle, at + kMark.size())) {
    text.replace(at, needle.size(), kMark);
  }
  return text;
}

}  // namespace loopr
