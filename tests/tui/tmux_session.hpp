// TmuxSession: a private tmux server (its own socket in a temporary folder,
// no configuration file: `tmux -S <dir>/sock -f /dev/null -u`) holding one
// session of a fixed size that runs a command, for end-to-end tests of
// loopr-tui in a real terminal. Tests type with send_keys() and read the
// screen with screen() (capture-pane -p); wait_for() polls the screen until
// a condition holds or a deadline passes (the only waiting there is). The
// server is killed when the session object goes.
#pragma once

#include <chrono>
#include <functional>
#include <string>
#include <vector>

#include "tests/support/temp_tree.hpp"

namespace loopr::test {

inline constexpr const char* kTmux = "/usr/bin/tmux";

class TmuxSession {
 public:
  // Starts `command` (argv; run with `env` as given, plus LANG=C.UTF-8) in a
  // session of `width` x `height`. Fails the test when tmux is missing.
  TmuxSession(const std::vector<std::string>& command, const std::vector<std::string>& env,
              int width = 120, int height = 40);
  ~TmuxSession();
  TmuxSession(const TmuxSession&) = delete;
  TmuxSession& operator=(const TmuxSession&) = delete;

  bool started() const { return started_; }
  // The visible screen, one line per row (trailing blanks trimmed by tmux).
  std::string screen() const;
  // Sends tmux key names ("Enter", "Tab", "Escape", "C-c", "j").
  void send_keys(const std::vector<std::string>& keys) const;
  // Types `text` literally.
  void type(const std::string& text) const;
  void resize(int width, int height) const;

  // Polls the screen until `reached(screen)`; the last screen read either way.
  // `ok` says whether it was reached within `wait`.
  struct Wait {
    bool ok = false;
    std::string screen;
  };
  Wait wait_for(const std::function<bool(const std::string&)>& reached,
                std::chrono::milliseconds wait = std::chrono::seconds(20)) const;
  Wait wait_for_text(const std::string& text,
                     std::chrono::milliseconds wait = std::chrono::seconds(20)) const;

 private:
  // Runs tmux with `args`; its stdout, and the exit status in `status`.
  std::string tmux(const std::vector<std::string>& args, int* status = nullptr) const;

  TempTree dir_;
  std::string socket_;
  bool started_ = false;
};

}  // namespace loopr::test
