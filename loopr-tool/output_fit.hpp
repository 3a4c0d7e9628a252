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
//
// read_file's page is cut the same way, at a line's end, but a page is more
// than its text (lines_returned, lines_cut, line_endings, next_offset...),
// so fit_page_to_output_cap() reads it again: when the result's line is
// longer than `max_output_bytes`, it finds the most whole lines that fit
// (at least one: a single line, itself cut at 2,000 characters, is
// returned whatever its size) and calls `read_page` with the same arguments
// and that `limit`; the new page has `more`: true and `next_offset` the
// first line not returned, as any shorter page, and `hint` says it was cut
// to fit and where to read on. If the file changed between the two reads
// and the new page is still too long, it tries again, a few times at most,
// then gives up and leaves the last result as it is.
#pragma once

#include <cstddef>
#include <functional>
#include <nlohmann/json.hpp>
#include <string_view>

#include "common/error.hpp"

namespace loopr::tool {

bool fit_listing_to_output_cap(std::string_view tool, nlohmann::json& result,
                               std::size_t max_output_bytes);

// Reads a page again with other arguments (the tool, in the same worktree).
using PageReader = std::function<Result<nlohmann::json>(const nlohmann::json& args)>;

// For read_file; other tools, a result that fits and max_output_bytes 0 are
// left alone. Returns whether it cut.
bool fit_page_to_output_cap(std::string_view tool, const nlohmann::json& args,
                            nlohmann::json& result, std::size_t max_output_bytes,
                            const PageReader& read_page);

// The size of `value` as the front ends write it: its compact dump, bytes
// that are not UTF-8 replaced by U+FFFD, plus "\n".
std::size_t result_line_size(const nlohmann::json& value);

}  // namespace loopr::tool
