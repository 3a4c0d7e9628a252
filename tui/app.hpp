// App: the TUI's state machine between the link and the screen, without a
// terminal. It applies what the link reports to DaemonState, keys to
// UiState (tui/keys.hpp), and says which requests to send: the person's
// actions, and the fetches the panes need (loop.get and loop.transcript when
// a detail pane opens or after a reconnect, plan.get for a plan awaiting
// approval whose text is not known yet, loop.diff while the detail pane
// shows the branch's diff, again after the loop commits or a child merges
// into it).
// Not thread-safe: the UI thread owns it.
#pragma once

#include <cstdint>
#include <set>
#include <string>
#include <vector>

#include "tui/daemon_link.hpp"
#include "tui/daemon_state.hpp"
#include "tui/keys.hpp"
#include "tui/ui_state.hpp"
#include "tui/views.hpp"

namespace loopr::tui {

class App {
 public:
  explicit App(UiState ui = {}) : ui_(std::move(ui)) {}

  // `now_ms`: wall clock; messages carry their own steady-clock times.
  void on_message(LinkMessage message, std::int64_t now_ms);
  // The requests a key makes.
  std::vector<Command> on_key(Key key, ScreenSize size, std::int64_t now_ms);
  // The fetches the panes now need (each asked once until it is answered).
  std::vector<Command> follow_ups();
  // The link refused `command` (its queue was full): what was waiting for
  // its reply is asked again later instead of waiting for good.
  void refused(const Command& command);

  const DaemonState& state() const { return state_; }
  DaemonState& state() { return state_; }
  UiState& ui() { return ui_; }
  const UiState& ui() const { return ui_; }

 private:
  void on_reply(const LinkMessage& message);

  DaemonState state_;
  UiState ui_;
  std::set<std::string> plans_asked_;
  bool detail_refresh_ = false;  // loop.get again for the followed loop
  bool diff_in_flight_ = false;  // a loop.diff is asked and not answered
  bool diff_stale_ = false;      // the followed loop committed since its diff was read
};

}  // namespace loopr::tui
