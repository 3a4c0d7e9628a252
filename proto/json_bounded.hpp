// Bounded JSON parsing for untrusted input. Pure function, thread-safe.
#pragma once

#include <cstddef>
#include <nlohmann/json.hpp>
#include <string_view>

#include "common/error.hpp"

namespace loopr::proto {

inline constexpr std::size_t kDefaultMaxJsonDepth = 128;

// Parses one JSON value from `text` (surrounding whitespace allowed, nothing
// else). Refuses with errc::protocol: text that is not JSON (including invalid
// UTF-8 inside strings), and nesting of arrays/objects deeper than `max_depth`.
// The depth is checked by a linear pre-scan before nlohmann sees the text, so
// hostile nesting costs O(n) time and O(1) memory. Never throws.
// The caller bounds text.size(); this function adds no size cap of its own.
Result<nlohmann::json> parse_json_bounded(std::string_view text,
                                          std::size_t max_depth = kDefaultMaxJsonDepth);

// True if the array/object nesting of `text` never exceeds `max_depth`
// (string contents, including escaped quotes, are skipped). Does not validate
// the JSON itself.
bool json_depth_within(std::string_view text, std::size_t max_depth);

}  // namespace loopr::proto
