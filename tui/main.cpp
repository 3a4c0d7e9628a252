// loopr-tui [--socket PATH] [--repo DIR]: the terminal UI of looprd
// (DESIGN.md §1, docs/tui.md). Finds the socket as looprctl does
// (client/client_paths.hpp), then runs one loop on the UI thread: poll the
// terminal, the link's wake fd and the quit-signal pipe; apply keys and link
// messages to the App; redraw at most every kFrame when something changed,
// and once a second for the clocks. The link's threads do all socket work.
#include <poll.h>
#include <unistd.h>

#include <CLI/CLI.hpp>
#include <chrono>
#include <clocale>
#include <filesystem>
#include <iostream>

#include "client/client_paths.hpp"
#include "tui/app.hpp"
#include "tui/daemon_link.hpp"
#include "tui/terminal.hpp"

namespace {

using namespace loopr;
using Clock = std::chrono::steady_clock;
using std::chrono::milliseconds;

constexpr milliseconds kFrame{33};
constexpr milliseconds kTick{1000};

std::int64_t wall_ms() {
  return std::chrono::duration_cast<milliseconds>(
             std::chrono::system_clock::now().time_since_epoch())
      .count();
}

int run(const std::string& socket_path, const std::string& repo) {
  // Before any thread starts: setlocale is not thread-safe, and the link's
  // threads parse numbers.
  std::setlocale(LC_ALL, "");
  tui::DaemonLink link(socket_path);
  tui::UiState ui;
  ui.repo = repo;
  tui::App app(std::move(ui));
  link.start();
  {
    tui::Terminal terminal;
    auto last_draw = Clock::now() - kTick;
    bool dirty = true;
    while (!app.ui().quit) {
      const auto now = Clock::now();
      const auto since_draw = now - last_draw;
      if ((dirty && since_draw >= kFrame) || since_draw >= kTick) {
        terminal.draw(tui::compose(app.state(), app.ui(), terminal.size(), wall_ms()));
        last_draw = now;
        dirty = false;
      }
      const auto wait =
          dirty ? kFrame - std::chrono::duration_cast<milliseconds>(Clock::now() - last_draw)
                : kTick;
      pollfd fds[3] = {{STDIN_FILENO, POLLIN, 0},
                       {link.wake_fd(), POLLIN, 0},
                       {tui::Terminal::quit_fd(), POLLIN, 0}};
      ::poll(fds, 3, static_cast<int>(std::max<milliseconds::rep>(0, wait.count())));
      if ((fds[2].revents & POLLIN) != 0) break;
      // The terminal went away without a SIGHUP: nobody is left to draw for.
      if ((fds[0].revents & (POLLHUP | POLLERR | POLLNVAL)) != 0) break;
      for (const auto& key : terminal.read_keys()) {
        dirty = true;
        for (auto& command : app.on_key(key, terminal.size(), wall_ms()))
          if (!link.send(command)) app.ui().message = "too many requests waiting; try again";
      }
      for (auto& message : link.drain()) {
        app.on_message(std::move(message), wall_ms());
        dirty = true;
      }
      for (auto& command : app.follow_ups())
        if (!link.send(command)) app.refused(command);
    }
  }  // the terminal is restored here, before waiting for the link's threads
  link.stop();
  return 0;
}

}  // namespace

int main(int argc, char** argv) {
  CLI::App cli{"loopr-tui: watch and steer looprd's loops, plans, tool calls and approvals"};
  cli.name("loopr-tui");
  config::PathFlags flags;
  std::string repo;
  cli.add_option("--socket", flags.socket_path,
                 "looprd's control socket (default: $LOOPR_SOCKET, loopr.toml, "
                 "$XDG_RUNTIME_DIR/loopr/looprd.sock, /tmp/loopr-$UID/looprd.sock)");
  cli.add_option(
      "--config-dir", flags.config_dir,
      "loopr's configuration folder (default: $LOOPR_CONFIG_DIR, $XDG_CONFIG_HOME/loopr)");
  cli.add_option("--repo", repo,
                 "the git repository new plans (key n) are made in (default: the current folder)");
  CLI11_PARSE(cli, argc, argv);
  try {
    const config::Paths paths = client::resolve_client_paths(flags, std::cerr);
    auto folder = client::absolute_folder(repo, "the repository", "--repo");
    if (!folder) {
      std::cerr << "loopr-tui: " << folder.error().message << '\n';
      return 2;
    }
    return run(paths.socket_path, *folder);
  } catch (const StartupError& e) {
    std::cerr << "loopr-tui: " << e.what() << '\n';
    return 2;
  } catch (const std::exception& e) {
    std::cerr << "loopr-tui: " << e.what() << '\n';
    return 1;
  }
}
