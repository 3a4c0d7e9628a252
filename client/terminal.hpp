// What the terminal looprctl writes to can show: its width and whether it
// takes bold text. Only the process's own stdout is ever a terminal here: a
// command writing to any other stream (a test's) gets the defaults, so
// output stays the same wherever looprctl's stdout is not a terminal.
// Thread-safe (reads the environment and the tty only).
#pragma once

#include <cstddef>
#include <iosfwd>

namespace loopr::client {

struct TerminalStyle {
  // The terminal's columns; else $COLUMNS when it is a number from 20 to
  // 10,000; else 80.
  std::size_t columns = 80;
  // Bold (ANSI SGR 1) only on a terminal, unless NO_COLOR is set to anything
  // non-empty (no-color.org) or TERM is "dumb".
  bool bold = false;
};

TerminalStyle terminal_style(const std::ostream& out);

}  // namespace loopr::client
