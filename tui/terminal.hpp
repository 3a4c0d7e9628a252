// Terminal: the ncursesw session of loopr-tui — set-up (the user's locale,
// raw keys, keypad, colours unless NO_COLOR or a monochrome terminal),
// drawing the lines compose() made, reading keys as tui::Keys, and the
// terminal restored on every way out:
//  - a normal exit and Ctrl-C (a key in raw mode): the destructor (endwin);
//  - SIGTERM, SIGHUP, SIGINT sent by another process: the handler writes to
//    quit_fd() and the main loop leaves as on a normal exit;
//  - a crash signal (SIGSEGV, SIGBUS, SIGFPE, SIGILL, SIGABRT): the handler
//    puts the saved termios back, leaves the alternate screen and shows the
//    cursor (async-signal-safe calls only), then the signal kills as before.
// One Terminal per process; the UI thread only.
#pragma once

#include <vector>

#include "tui/keys.hpp"
#include "tui/styled_text.hpp"
#include "tui/views.hpp"

namespace loopr::tui {

class Terminal {
 public:
  // Throws std::runtime_error when stdin/stdout is not a terminal ncurses
  // can drive.
  Terminal();
  ~Terminal();
  Terminal(const Terminal&) = delete;
  Terminal& operator=(const Terminal&) = delete;

  ScreenSize size() const;
  // Draws `lines` (compose()'s, one per row) and updates the terminal.
  void draw(const Lines& lines);
  // Every key waiting, without blocking; a resize is KeyCode::resize.
  std::vector<Key> read_keys();
  // Readable once a quit signal arrived (the read end of a pipe).
  static int quit_fd();
  bool colours() const { return colours_; }

 private:
  bool colours_ = false;
};

}  // namespace loopr::tui
