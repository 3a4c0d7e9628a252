// output_fit: a listing cut to fit its job's output cap, instead of failing.
//
// list_directory, glob and grep cap their listings by count (2,000 entries,
// 1,000 matches, max_results), but a count says nothing of bytes: 2,000 long
// paths are more than list_directory's 100 kB cap, and the runner answers a
// job whose output passes its cap with too_large and no listing at all. So
// both front ends (tool_main.cpp) pass each successful result through
// fit_listing_to_output_cap() with the job's max_output_bytes.
//
// Contract: for list_directory ("entries"), glob ("matches") and grep
// ("files", "counts", or "content", cut at a line's end) — when the result's
// JSON line (compact dump, invalid UTF-8 replaced, plus "\n") is longer than
// `max_output_bytes`, the last elements of that listing are dropped until it
// fits, `truncated` becomes true and `hint` says how many were shown and why
// (after the tool's own hint, if any). Nothing else changes, so the result
// still matches the tool's output_schema. Other tools, a result that fits,
// one that would not fit even with an empty listing (the runner then
// refuses it as too_large), and max_output_bytes 0 (no cap known) are left
// as they are. Returns whether it cut.
#pragma once

#include <cstddef>
#include <nlohmann/json.hpp>
#include <string_view>

namespace loopr::tool {

bool fit_listing_to_output_cap(std::string_view tool, nlohmann::json& result,
                               std::size_t max_output_bytes);

}  // namespace loopr::tool
