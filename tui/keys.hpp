// Key handling as a pure state machine: a Key and the current state go in,
// the UiState changes and the Commands to send to looprd come out. No
// terminal here (tui/terminal.cpp turns ncurses codes into Keys), so every
// binding is tested without one. The binding table is the only list of
// keys: the help overlay is drawn from it.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "tui/daemon_state.hpp"
#include "tui/ui_state.hpp"

namespace loopr::tui {

enum class KeyCode {
  none,
  character,  // `ch` holds the code point
  up,
  down,
  left,
  right,
  page_up,
  page_down,
  home,
  end,
  enter,
  escape,
  tab,
  back_tab,
  backspace,
  ctrl_c,
  ctrl_d,
  ctrl_u,
  resize,
};

struct Key {
  KeyCode code = KeyCode::none;
  char32_t ch = 0;
  static Key of(char32_t c) { return Key{KeyCode::character, c}; }
  static Key of(KeyCode code) { return Key{code, 0}; }
  bool operator==(const Key&) const = default;
};

enum class Action {
  up,
  down,
  page_up,
  page_down,
  top,
  bottom,
  next_pane,
  prev_pane,
  show_loops,
  show_approvals,
  show_tools,
  enter,
  back,
  quit,
  help,
  search,
  new_plan,
  new_code,
  collapse,
  expand,
  toggle,
  filter,
  sort,
  pause,
  resume,
  cancel,
  approve,
  deny,
  reject,
  iterate,
  fold,
  follow,
  diff,
  logs,
};

// Panes a binding works in.
inline constexpr unsigned kInLoops = 1, kInApprovals = 2, kInTools = 4, kInDetail = 8,
                          kEverywhere = 15;

struct Binding {
  std::vector<Key> keys;
  const char* names;  // as the help shows them: "j ↓"
  unsigned panes;
  Action action;
  const char* what;
};

const std::vector<Binding>& key_bindings();

// What the key handler must know about the screen: the rows in the order
// they are shown, and the body's height (for page moves).
struct Visible {
  std::vector<std::string> loops;      // loop ids
  std::vector<std::string> approvals;  // "call:<id>" / "plan:<id>"
  std::vector<std::string> tools;      // call ids
  std::vector<std::string> detail;     // the detail pane's lines, as text
  std::size_t page = 10;
};

// Applies `key`; returns the requests to send, in order.
std::vector<Command> handle_key(UiState& ui, const DaemonState& state, const Visible& visible,
                                Key key);

}  // namespace loopr::tui
