// Whether bytes look like a binary file: a NUL byte in the first
// kBinarySniffBytes, as git and ripgrep decide. Pure; thread-safe.
#pragma once

#include <cstddef>
#include <string_view>

namespace loopr::tool {

inline constexpr std::size_t kBinarySniffBytes = 8192;

inline bool looks_binary(std::string_view head) {
  return head.substr(0, kBinarySniffBytes).find('\0') != std::string_view::npos;
}

}  // namespace loopr::tool
