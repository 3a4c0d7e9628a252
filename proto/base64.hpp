// Standard base64 (RFC 4648 §4, alphabet A-Z a-z 0-9 + /, '=' padding).
// Pure functions, thread-safe.
#pragma once

#include <string>
#include <string_view>

#include "common/error.hpp"

namespace loopr::proto {

// Always padded to a multiple of 4 characters; no line breaks.
std::string base64_encode(std::string_view bytes);

// Strict decoder: the length must be a multiple of 4, '=' may only end the
// text (at most two), no whitespace or other characters, and the unused bits
// of the last group must be zero, so every byte string has exactly one
// accepted encoding. Refusals are errc::protocol errors naming the offset.
Result<std::string> base64_decode(std::string_view text);

}  // namespace loopr::proto
