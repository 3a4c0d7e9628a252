#include "tests/tui/tmux_session.hpp"

#include <fcntl.h>
#include <gtest/gtest.h>
#include <spawn.h>
#include <sys/wait.h>
#include <unistd.h>

#include <thread>

extern char** environ;

namespace loopr::test {
namespace {

// The argv joined as one shell command line, each word single-quoted.
std::string shell_line(const std::vector<std::string>& words) {
  std::string out;
  for (const auto& word : words) {
    if (!out.empty()) out += ' ';
    out += '\'';
    for (const char c : word) {
      if (c == '\'') {
        out += "'\\''";
      } else {
        out += c;
      }
    }
    out += '\'';
  }
  return out;
}

}  // namespace

TmuxSession::TmuxSession(const std::vector<std::string>& command,
                         const std::vector<std::string>& env, int width, int height)
    : socket_(dir_.path("sock")) {
  if (::access(kTmux, X_OK) != 0) {
    ADD_FAILURE() << "tmux is missing at " << kTmux
                  << ": the TUI's end-to-end tests need it (scripts/install-deps.sh installs it)";
    return;
  }
  std::vector<std::string> words = {"env", "LANG=C.UTF-8", "LC_ALL=C.UTF-8"};
  words.insert(words.end(), env.begin(), env.end());
  words.insert(words.end(), command.begin(), command.end());
  // What the program printed when it exits stays on screen for the failure
  // message; the pane's shell then waits to be killed with the server.
  const std::string line = shell_line(words) + " 2>" + shell_line({dir_.path("stderr")}) +
                           "; echo \"[loopr-tui exited with status $?]\"; cat " +
                           shell_line({dir_.path("stderr")}) + "; exec cat";
  int status = -1;
  tmux({"new-session", "-d", "-x", std::to_string(width), "-y", std::to_string(height), "-s", "tui",
        line},
       &status);
  started_ = status == 0;
  EXPECT_TRUE(started_) << "tmux new-session failed";
}

TmuxSession::~TmuxSession() {
  if (started_) tmux({"kill-server"});
}

std::string TmuxSession::tmux(const std::vector<std::string>& args, int* status) const {
  std::vector<std::string> words = {kTmux, "-S", socket_, "-f", "/dev/null", "-u"};
  words.insert(words.end(), args.begin(), args.end());
  std::vector<char*> argv;
  for (auto& word : words)
    argv.push_back(word.data());
  argv.push_back(nullptr);
  int out[2];
  if (::pipe2(out, O_CLOEXEC) != 0) return {};
  posix_spawn_file_actions_t actions;
  posix_spawn_file_actions_init(&actions);
  posix_spawn_file_actions_addopen(&actions, 0, "/dev/null", O_RDONLY, 0);
  posix_spawn_file_actions_adddup2(&actions, out[1], 1);
  pid_t pid = -1;
  const int rc = ::posix_spawn(&pid, argv[0], &actions, nullptr, argv.data(), environ);
  posix_spawn_file_actions_destroy(&actions);
  ::close(out[1]);
  std::string text;
  if (rc == 0) {
    char buffer[4096];
    ssize_t n = 0;
    while ((n = ::read(out[0], buffer, sizeof buffer)) > 0)
      text.append(buffer, static_cast<std::size_t>(n));
  }
  ::close(out[0]);
  int wait_status = -1;
  if (rc == 0) ::waitpid(pid, &wait_status, 0);
  if (status != nullptr)
    *status = rc == 0 && WIFEXITED(wait_status) ? WEXITSTATUS(wait_status) : -1;
  return text;
}

std::string TmuxSession::screen() const {
  return tmux({"capture-pane", "-p", "-t", "tui"});
}

void TmuxSession::send_keys(const std::vector<std::string>& keys) const {
  std::vector<std::string> args = {"send-keys", "-t", "tui"};
  args.insert(args.end(), keys.begin(), keys.end());
  tmux(args);
}

void TmuxSession::type(const std::string& text) const {
  tmux({"send-keys", "-t", "tui", "-l", text});
}

void TmuxSession::resize(int width, int height) const {
  tmux({"resize-window", "-t", "tui", "-x", std::to_string(width), "-y", std::to_string(height)});
}

TmuxSession::Wait TmuxSession::wait_for(const std::function<bool(const std::string&)>& reached,
                                        std::chrono::milliseconds wait) const {
  const auto deadline = std::chrono::steady_clock::now() + wait;
  Wait result;
  for (;;) {
    result.screen = screen();
    if (reached(result.screen)) {
      result.ok = true;
      return result;
    }
    if (std::chrono::steady_clock::now() >= deadline) return result;
    // Polling interval between two reads of the screen (not a synchronisation).
    std::this_thread::sleep_for(std::chrono::milliseconds(50));
  }
}

TmuxSession::Wait TmuxSession::wait_for_text(const std::string& text,
                                             std::chrono::milliseconds wait) const {
  return wait_for([&](const std::string& screen) { return screen.find(text) != std::string::npos; },
                  wait);
}

}  // namespace loopr::test
