#include "proto/base64.hpp"

#include <array>
#include <cstdint>

namespace loopr::proto {
namespace {

constexpr std::string_view kAlphabet =
    "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/";

constexpr std::uint8_t kInvalid = 0xFF;

constexpr std::array<std::uint8_t, 256> make_decode_table() {
  std::array<std::uint8_t, 256> table{};
  for (auto& v : table)
    v = kInvalid;
  for (std::size_t i = 0; i < kAlphabet.size(); ++i) {
    table[static_cast<unsigned char>(kAlphabet[i])] = static_cast<std::uint8_t>(i);
  }
  return table;
}

constexpr std::array<std::uint8_t, 256> kDecode = make_decode_table();

Error bad_base64(std::string what, std::size_t offset) {
  return make_error(errc::protocol,
                    "invalid base64: " + what + " at offset " + std::to_string(offset),
                    "encode bytes as padded standard base64");
}

}  // namespace

std::string base64_encode(std::string_view bytes) {
  std::string out;
  out.reserve((bytes.size() + 2) / 3 * 4);
  const auto at = [&](std::size_t i) -> std::uint32_t {
    return static_cast<unsigned char>(bytes[i]);
  };
  std::size_t i = 0;
  for (; i + 3 <= bytes.size(); i += 3) {
    const std::uint32_t group = (at(i) << 16) | (at(i + 1) << 8) | at(i + 2);
    out += kAlphabet[(group >> 18) & 0x3F];
    out += kAlphabet[(group >> 12) & 0x3F];
    out += kAlphabet[(group >> 6) & 0x3F];
    out += kAlphabet[group & 0x3F];
  }
  const std::size_t rest = bytes.size() - i;
  if (rest == 1) {
    const std::uint32_t group = at(i) << 16;
    out += kAlphabet[(group >> 18) & 0x3F];
    out += kAlphabet[(group >> 12) & 0x3F];
    out += "==";
  } else if (rest == 2) {
    const std::uint32_t group = (at(i) << 16) | (at(i + 1) << 8);
    out += kAlphabet[(group >> 18) & 0x3F];
    out += kAlphabet[(group >> 12) & 0x3F];
    out += kAlphabet[(group >> 6) & 0x3F];
    out += '=';
  }
  return out;
}

Result<std::string> base64_decode(std::string_view text) {
  if (text.size() % 4 != 0) {
    return make_error(
        errc::protocol,
        "invalid base64: length " + std::to_string(text.size()) + " is not a multiple of 4",
        "encode bytes as padded standard base64");
  }
  std::size_t padding = 0;
  if (!text.empty() && text.back() == '=') ++padding;
  if (text.size() >= 2 && text[text.size() - 2] == '=') ++padding;
  const std::size_t data_chars = text.size() - padding;

  std::string out;
  out.reserve(text.size() / 4 * 3);
  std::uint32_t group = 0;
  std::size_t group_chars = 0;
  for (std::size_t i = 0; i < data_chars; ++i) {
    const std::uint8_t v = kDecode[static_cast<unsigned char>(text[i])];
    if (v == kInvalid) {
      return bad_base64(text[i] == '=' ? "misplaced padding" : "character not in the alphabet", i);
    }
    group = (group << 6) | v;
    if (++group_chars == 4) {
      out += static_cast<char>((group >> 16) & 0xFF);
      out += static_cast<char>((group >> 8) & 0xFF);
      out += static_cast<char>(group & 0xFF);
      group = 0;
      group_chars = 0;
    }
  }
  // With a valid length, the last group holds 2 or 3 data characters when padded.
  if (group_chars == 2) {
    if ((group & 0x0F) != 0) return bad_base64("non-zero unused bits", data_chars - 1);
    out += static_cast<char>((group >> 4) & 0xFF);
  } else if (group_chars == 3) {
    if ((group & 0x03) != 0) return bad_base64("non-zero unused bits", data_chars - 1);
    out += static_cast<char>((group >> 10) & 0xFF);
    out += static_cast<char>((group >> 2) & 0xFF);
  }
  return out;
}

}  // namespace loopr::proto
