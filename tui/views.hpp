// The view models: the whole screen as styled lines, fitted to a width and
// a height, from DaemonState (what looprd said) and UiState (what the person
// chose). No terminal here: tui/terminal.cpp only draws what compose() returns,
// and tests read it as text.
//
// Screen: three header lines (daemon, lanes, spend and what waits), the tab
// line, the pane's body, and the status line (message, prompt or question).
// Below 12 rows the header shrinks to one line. Every string the daemon sent
// goes through client::printable() before it is laid out.
#pragma once

#include <cstddef>
#include <cstdint>
#include <nlohmann/json.hpp>
#include <string>
#include <vector>

#include "tui/daemon_state.hpp"
#include "tui/keys.hpp"
#include "tui/styled_text.hpp"
#include "tui/ui_state.hpp"

namespace loopr::tui {

// One row of the loops tree as shown (filtered, searched, sorted, collapsed).
struct LoopRow {
  const nlohmann::json* loop = nullptr;  // into DaemonState::loops()
  std::string id;
  std::string lead;  // tree drawing before the id
  std::size_t depth = 0;
  bool has_children = false;
  bool collapsed = false;
};
std::vector<LoopRow> loop_rows(const DaemonState& state, const UiState& ui);

// The approvals pane's items: "call:<id>" for each waiting call, then
// "plan:<id>" for each plan awaiting approval.
std::vector<std::string> approval_items(const DaemonState& state);

// The tool calls shown, newest first, filtered by ui.tool_search.
std::vector<const ToolCallRecord*> tool_rows(const DaemonState& state, const UiState& ui);

// The detail pane's scrollable lines for `width` columns.
Lines detail_lines(const LoopDetail& detail, const UiState& ui, std::size_t width,
                   std::int64_t now_ms);

// The detail pane's lines when it shows the branch's diff (loop.diff): what
// it is against, the stat, then the unified diff with added and removed
// lines styled, each line cut to `width` (never wrapped), at most
// kMaxDiffLines of it.
inline constexpr std::size_t kMaxDiffLines = 5000;
Lines diff_lines(const LoopDetail& detail, std::size_t width);

// Markdown for the terminal: headings bold, lists and paragraphs wrapped.
Lines markdown_lines(const std::string& markdown, std::size_t width);

// The help overlay's lines (every binding of key_bindings()).
Lines help_lines(std::size_t width);

struct ScreenSize {
  std::size_t width = 80;
  std::size_t height = 24;
};

// The rows of the body (between the tab line and the status line).
std::size_t body_height(ScreenSize size);

// The whole screen: exactly size.height lines, none wider than size.width.
// Keeps ui's scroll offsets (loops_top, ..., detail_top) in step with the
// cursors and the follow mode, which is why `ui` is not const.
Lines compose(const DaemonState& state, UiState& ui, ScreenSize size, std::int64_t now_ms);

// What handle_key() needs to know about the screen compose() would draw.
Visible visible_rows(const DaemonState& state, const UiState& ui, ScreenSize size,
                     std::int64_t now_ms);

}  // namespace loopr::tui
