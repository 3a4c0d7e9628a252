// Terminal columns of UTF-8 text, for laying out the TUI's panes without a
// terminal: how wide a string is when drawn, cutting it to a width without
// splitting a character, padding, and wrapping. Widths come from wcwidth(3),
// so they follow LC_CTYPE (loopr-tui sets the user's locale; tests set
// C.UTF-8): East Asian wide characters count 2, combining marks 0. Control
// characters and invalid UTF-8 are never emitted: callers pass text through
// client::printable() first; anything wcwidth calls unprintable counts as 1
// and is drawn by the renderer as U+FFFD. Pure functions, thread-safe.
#pragma once

#include <cstddef>
#include <string>
#include <string_view>
#include <vector>

namespace loopr::tui {

// The code points of `text` (invalid sequences each become U+FFFD).
std::u32string decode_utf8(std::string_view text);
std::string encode_utf8(std::u32string_view text);

// Columns one code point takes: 0, 1 or 2.
std::size_t code_point_width(char32_t c);
// Columns `text` takes.
std::size_t display_width(std::string_view text);

// The longest prefix of `text` that fits in `width` columns; when `text` is
// wider, the prefix leaves one column for "…" and ends with it.
std::string clip_to_width(std::string_view text, std::size_t width);
// clip_to_width, then spaces up to exactly `width` columns.
std::string pad_to_width(std::string_view text, std::size_t width);
// Spaces before `text` so that it ends at `width` columns (clipped when wider).
std::string pad_left_to_width(std::string_view text, std::size_t width);

// `text` broken into lines of at most `width` columns: at newlines, then at
// the last space that fits, else inside a word. `max_lines` caps the result
// (0: no cap). A width of 0 is treated as 1.
std::vector<std::string> wrap_to_width(std::string_view text, std::size_t width,
                                       std::size_t max_lines = 0);

}  // namespace loopr::tui
