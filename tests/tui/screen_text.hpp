// Test helper: a view's lines as the text a terminal would show, one line
// each, for the TUI tests' substring checks.
#pragma once

#include <string>

#include "tui/styled_text.hpp"

namespace loopr::tui::test {

inline std::string screen_text(const Lines& lines) {
  std::string out;
  for (const auto& line : lines)
    out += line.text() + "\n";
  return out;
}

}  // namespace loopr::tui::test
