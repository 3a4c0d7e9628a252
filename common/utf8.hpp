// UTF-8 validation and lossy conversion. Pure functions, thread-safe.
#pragma once

#include <cstddef>
#include <string>
#include <string_view>

namespace loopr {

// True if `bytes` is well-formed UTF-8 (no overlongs, no surrogates, <= U+10FFFF).
bool is_valid_utf8(std::string_view bytes);

// Length of the longest prefix of `bytes` that does not end inside a UTF-8
// sequence; used to cut text at a byte budget without splitting a character.
std::size_t utf8_safe_prefix(std::string_view bytes, std::size_t max_bytes);

// Copies `bytes`, replacing each maximal invalid subsequence with U+FFFD.
std::string to_lossy_utf8(std::string_view bytes);

}  // namespace loopr
