// What the view models hand the renderer: lines of spans, each span with a
// semantic style. Views decide the words and the layout (already fitted to
// the pane's width with tui/text_width.hpp); the renderer maps a style to
// colours or, with NO_COLOR or a monochrome terminal, to bold/reverse/dim.
#pragma once

#include <string>
#include <utility>
#include <vector>

namespace loopr::tui {

enum class Style {
  normal,
  dim,         // secondary figures, finished loops
  bold,        // headings, names
  title,       // the header's first line
  selected,    // the cursor row
  good,        // completed, passed, approved, connected
  bad,         // failed, denied, errors, reconnecting
  warn,        // waiting for the person, running out of budget
  active,      // running, streaming
  tab,         // an inactive tab
  tab_active,  // the pane shown
  input,       // the prompt line
  added,       // a diff's added line
  removed,     // a diff's removed line
};

struct Span {
  std::string text;  // UTF-8, printable (no control characters)
  Style style = Style::normal;
};

struct Line {
  std::vector<Span> spans;
  // The style of the whole row (the cursor row is drawn selected edge to edge).
  Style fill = Style::normal;

  Line() = default;
  explicit Line(std::string text, Style style = Style::normal) {
    spans.push_back({std::move(text), style});
  }
  Line& add(std::string text, Style style = Style::normal) {
    spans.push_back({std::move(text), style});
    return *this;
  }
  std::string text() const {
    std::string out;
    for (const auto& span : spans)
      out += span.text;
    return out;
  }
};

using Lines = std::vector<Line>;

}  // namespace loopr::tui
