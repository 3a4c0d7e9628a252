// How far apart two short names are, for "did you mean" suggestions (unknown
// schema fields in looprd, missing paths in loopr-tool). Pure functions on
// bytes (not code points); thread-safe.
#pragma once

#include <cstddef>
#include <string_view>

namespace loopr {

// The optimal-string-alignment distance between `a` and `b` (Damerau-
// Levenshtein where no substring is edited twice): inserting, deleting or
// substituting a byte, or swapping two adjacent bytes, each cost 1 ("scr" and
// "src" are 1 apart). Bounded: a distance over `max` is returned as max + 1,
// and only the band of the table within `max` of its diagonal is filled, so a
// call costs O(min(|a|, |b|) * (2 * max + 1)) time and O(max(|a|, |b|)) space.
std::size_t edit_distance(std::string_view a, std::string_view b, std::size_t max);

}  // namespace loopr
