// What edit_file shows a model: where an old_string occurs, and, when it does
// not, the region of the file it was most likely meant to match, with the
// whitespace made visible and the difference said in words, so the model can
// correct its call instead of guessing.
//
// Pure functions on byte strings; thread-safe. Work is bounded whatever the
// input: the candidate search makes two linear passes over the file plus a
// fixed number of window comparisons (kCandidateWindows windows of at most
// kComparedLines lines of at most kComparedLineBytes bytes each).
#pragma once

#include <cstddef>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

namespace loopr::tool {

// Offsets of `needle` in `haystack`, left to right, at most `limit` of them.
// Overlapping: the next search starts one byte after a hit (to tell one match
// from several); otherwise after the whole hit (to replace them all). An
// empty needle has no occurrences. Linear time (glibc memmem, two-way).
std::vector<std::size_t> find_occurrences(std::string_view haystack, std::string_view needle,
                                          std::size_t limit, bool overlapping);

// The 1-based line numbers of sorted byte offsets, in one pass over `text`.
std::vector<std::size_t> line_numbers_of(std::string_view text,
                                         const std::vector<std::size_t>& sorted_offsets);

// `text` with its whitespace made visible: a tab is shown as '→', a carriage
// return as '␍', and spaces at the end of a line (all of a blank line's
// spaces) as '·'. Other bytes are kept.
std::string show_whitespace(std::string_view text);
inline constexpr std::string_view kWhitespaceLegend =
    "→ is a tab, · a trailing space, ␍ a carriage return";

// Lines first_line.. of `text` ("%6d|line\n", as read_file prints them), at
// most max_lines, each cut to max_line_bytes (UTF-8 safe, "..." appended);
// invalid UTF-8 is shown lossily. With visible_whitespace the lines go through
// show_whitespace(); without, a line's final '\r' is dropped as read_file does.
// `text` starts at line first_line. A cut list ends with a "(N more lines)" row.
std::string numbered_lines(std::string_view text, std::size_t first_line, std::size_t max_lines,
                           std::size_t max_line_bytes, bool visible_whitespace);

// The file region most like `wanted`, a string that occurs nowhere in it.
struct Candidate {
  std::size_t first_line = 0;  // 1-based, inclusive
  std::size_t last_line = 0;
  std::string_view text;  // those whole lines of the file (a view into it)
  double similarity = 0;  // 0..1, 1 when only whitespace differs
};

inline constexpr std::size_t kCandidateWindows = 8;
inline constexpr std::size_t kComparedLines = 400;
inline constexpr std::size_t kComparedLineBytes = 4096;
// Below this, nothing in the file is said to resemble `wanted`.
inline constexpr double kMinSimilarity = 0.3;

// Compares windows of as many lines as `wanted` has. Lines are compared by
// their non-whitespace characters (trigram overlap), so a window that differs
// from `wanted` only in indentation or trailing spaces scores 1. The first
// and last line of `wanted` may be parts of lines. nullopt if `wanted` has no
// text or nothing scores kMinSimilarity.
std::optional<Candidate> nearest_candidate(std::string_view file, std::string_view wanted);

// One or two sentences on how `wanted` differs from `found` (a Candidate's
// text starting at line first_line), naming lines by their number in the
// file: "the file indents with tabs, old_string with spaces", "line 12 ends
// with 2 spaces in the file that old_string does not have", or the first
// differing text on each side.
std::string describe_difference(std::string_view found, std::string_view wanted,
                                std::size_t first_line);

// A mistake the whole of `wanted` shows, if any: read_file's "%6d|" line
// numbers copied into it, escape sequences (\n, \t, \") written out where the
// file has the characters themselves, or carriage returns the file does not
// have. Said as an instruction to the model.
std::optional<std::string> recognised_mistake(std::string_view file, std::string_view wanted);

}  // namespace loopr::tool
