#include "common/utf8.hpp"

#include <cstdint>

namespace loopr {
namespace {

// Length of the valid UTF-8 sequence starting at bytes[i], or 0 if the bytes
// there do not begin a well-formed sequence (Unicode 15, table 3-7).
std::size_t valid_sequence_length(std::string_view bytes, std::size_t i) {
  const auto byte = [&](std::size_t k) { return static_cast<std::uint8_t>(bytes[k]); };
  const std::size_t left = bytes.size() - i;
  const std::uint8_t b0 = byte(i);
  if (b0 < 0x80) return 1;
  const auto continuation = [&](std::size_t k, std::uint8_t lo, std::uint8_t hi) {
    return k < bytes.size() && byte(k) >= lo && byte(k) <= hi;
  };
  if (b0 >= 0xC2 && b0 <= 0xDF) return left >= 2 && continuation(i + 1, 0x80, 0xBF) ? 2 : 0;
  if (b0 >= 0xE0 && b0 <= 0xEF) {
    std::uint8_t lo = 0x80, hi = 0xBF;
    if (b0 == 0xE0) lo = 0xA0;  // no overlongs
    if (b0 == 0xED) hi = 0x9F;  // no surrogates
    return continuation(i + 1, lo, hi) && continuation(i + 2, 0x80, 0xBF) ? 3 : 0;
  }
  if (b0 >= 0xF0 && b0 <= 0xF4) {
    std::uint8_t lo = 0x80, hi = 0xBF;
    if (b0 == 0xF0) lo = 0x90;  // no overlongs
    if (b0 == 0xF4) hi = 0x8F;  // <= U+10FFFF
    return continuation(i + 1, lo, hi) && continuation(i + 2, 0x80, 0xBF) &&
                   continuation(i + 3, 0x80, 0xBF)
               ? 4
               : 0;
  }
  return 0;
}

}  // namespace

bool is_valid_utf8(std::string_view bytes) {
  std::size_t i = 0;
  while (i < bytes.size()) {
    // Fast path over ASCII.
    while (i < bytes.size() && static_cast<std::uint8_t>(bytes[i]) < 0x80)
      ++i;
    if (i == bytes.size()) break;
    const std::size_t n = valid_sequence_length(bytes, i);
    if (n == 0) return false;
    i += n;
  }
  return true;
}

std::size_t utf8_safe_prefix(std::string_view bytes, std::size_t max_bytes) {
  if (bytes.size() <= max_bytes) return bytes.size();
  std::size_t cut = max_bytes;
  // Step back over continuation bytes so the cut lands on a sequence start.
  std::size_t steps = 0;
  while (cut > 0 && steps < 3 && (static_cast<std::uint8_t>(bytes[cut]) & 0xC0) == 0x80) {
    --cut;
    ++steps;
  }
  if ((static_cast<std::uint8_t>(bytes[cut]) & 0xC0) == 0x80) return max_bytes;  // not UTF-8
  return cut;
}

std::string to_lossy_utf8(std::string_view bytes) {
  std::string out;
  out.reserve(bytes.size());
  std::size_t i = 0;
  while (i < bytes.size()) {
    const std::size_t n = valid_sequence_length(bytes, i);
    if (n > 0) {
      out.append(bytes.substr(i, n));
      i += n;
      continue;
    }
    out.append("\xEF\xBF\xBD");  // one U+FFFD per byte that starts no valid sequence
    ++i;
  }
  return out;
}

}  // namespace loopr
