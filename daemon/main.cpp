// looprd [--foreground] [--socket PATH] [--config-dir DIR] [--state-dir DIR]
//        [--log-level LEVEL] [--runner PATH] [--tool PATH]
//
// The loopr daemon (DESIGN.md §1). Without --foreground it forks into the
// background and the starting process exits 0 once the socket listens (or 1
// with the reason), logging to <state_dir>/looprd.log; under systemd use
// --foreground (Type=notify: READY=1 is sent once the socket listens).
// Socket activation (looprd.socket): when systemd passes the listening control
// socket (LISTEN_PID, LISTEN_FDS=1, fd 3) looprd serves it instead of binding
// its own, stays in the foreground, and leaves the socket file to systemd.
// `looprd --version` prints the version and exits.
// Exit status: 0 after a clean shutdown, 1 when it cannot start (the message
// says why), 2 on a configuration or usage error.
#include <fcntl.h>
#include <limits.h>
#include <spdlog/spdlog.h>
#include <sys/prctl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <CLI/CLI.hpp>
#include <filesystem>
#include <iostream>
#include <optional>
#include <string>

#include "common/unique_fd.hpp"
#include "config/paths.hpp"
#include "config/settings.hpp"
#include "daemon/daemon.hpp"
#include "daemon/logging.hpp"
#include "daemon/socket_activation.hpp"

namespace {

constexpr int kExitStartup = 1;
constexpr int kExitConfig = 2;

std::string own_folder() {
  char self[PATH_MAX];
  const ssize_t n = ::readlink("/proc/self/exe", self, sizeof self - 1);
  if (n <= 0) return ".";
  return std::filesystem::path(std::string(self, static_cast<std::size_t>(n))).parent_path();
}

std::optional<loopr::config::LogLevel> parse_level(const std::string& text) {
  using loopr::config::LogLevel;
  for (LogLevel level :
       {LogLevel::trace, LogLevel::debug, LogLevel::info, LogLevel::warn, LogLevel::error}) {
    if (loopr::config::to_string(level) == text) return level;
  }
  return std::nullopt;
}

// Forks; the parent waits on `ready` for the child to say it listens.
// Returns in the child only; the parent exits.
void daemonize(const std::string& log_file, loopr::UniqueFd& ready_write) {
  int fds[2];
  if (::pipe2(fds, O_CLOEXEC) != 0) throw loopr::StartupError("pipe: cannot daemonize");
  loopr::UniqueFd ready_read(fds[0]);
  ready_write.reset(fds[1]);
  const pid_t pid = ::fork();
  if (pid < 0) throw loopr::StartupError("fork: cannot daemonize");
  if (pid > 0) {
    ready_write.reset();
    std::string message;
    char buffer[512];
    ssize_t n;
    while ((n = ::read(ready_read.get(), buffer, sizeof buffer)) > 0) {
      message.append(buffer, static_cast<std::size_t>(n));
    }
    if (message == "ready") std::_Exit(0);
    std::cerr << "looprd: "
              << (message.empty() ? "the daemon exited while starting; see " + log_file : message)
              << "\n";
    std::_Exit(message.starts_with("config error") ? kExitConfig : kExitStartup);
  }
  ::setsid();
  loopr::UniqueFd null(::open("/dev/null", O_RDWR | O_CLOEXEC));
  loopr::UniqueFd log(::open(log_file.c_str(), O_WRONLY | O_CREAT | O_APPEND | O_CLOEXEC, 0600));
  if (null) {
    ::dup2(null.get(), STDIN_FILENO);
    ::dup2(null.get(), STDOUT_FILENO);
  }
  if (log) ::dup2(log.get(), STDERR_FILENO);
}

void tell_parent(loopr::UniqueFd& ready_write, const std::string& message) {
  if (!ready_write) return;
  [[maybe_unused]] auto ignored = ::write(ready_write.get(), message.data(), message.size());
  ready_write.reset();
}

}  // namespace

int main(int argc, char** argv) {
  // Other processes of the user (a job's escape, a stray debugger) may not
  // ptrace looprd or read its memory and /proc files: it holds API keys and
  // the control of every lane. The runners it execs are dumpable again.
  ::prctl(PR_SET_DUMPABLE, 0);
  CLI::App app{"looprd: the loopr daemon — routes tool calls to sandboxed lane runners"};
  bool foreground = false;
  loopr::config::PathFlags flags;
  std::string log_level;
  std::string runner_binary;
  std::string tool_binary;
  app.add_flag("--foreground", foreground, "stay in the foreground (systemd, tests)");
  app.add_option("--socket", flags.socket_path, "control socket path");
  app.add_option("--config-dir", flags.config_dir, "folder of loopr.toml and catalog.toml");
  app.add_option("--state-dir", flags.state_dir, "folder of loopr.db and loop state");
  app.add_option("--log-level", log_level, "trace, debug, info, warn or error")
      ->check(CLI::IsMember({"trace", "debug", "info", "warn", "error"}));
  app.add_option("--runner", runner_binary, "loopr-runner binary (default: next to looprd)");
  app.add_option("--tool", tool_binary, "loopr-tool binary (default: next to looprd)");
  app.set_version_flag("--version", std::string("looprd ") + LOOPR_VERSION,
                       "print the version and exit");
  CLI11_PARSE(app, argc, argv);

  loopr::UniqueFd ready_write;
  try {
    // First, before any thread starts: it unsets LISTEN_* from the environment.
    auto activation_socket = loopr::daemon::take_activation_socket();
    auto paths = loopr::config::resolve_paths(flags);
    auto settings = loopr::config::Settings::load(paths.settings_file());
    paths = loopr::config::resolve_paths(flags, &settings.daemon);
    auto level = log_level.empty() ? settings.daemon.log_level : *parse_level(log_level);
    std::string activation_note;
    if (activation_socket) {
      foreground = true;  // systemd supervises this very process
      const std::string bound = loopr::daemon::bound_path(activation_socket->get());
      if (bound.empty() || bound[0] != '/') {
        throw loopr::StartupError(
            "socket activation: the socket systemd passed is not bound to a path (" +
            (bound.empty() ? std::string("unnamed") : bound) +
            "); ListenStream= in looprd.socket must be the control socket's path");
      }
      if (bound != paths.socket_path) {
        activation_note = "the socket systemd passed is " + bound + " while looprctl looks for " +
                          paths.socket_path +
                          " (--socket, LOOPR_SOCKET or [daemon] socket); serving " + bound;
      }
      paths.socket_path = bound;
    }

    if (!foreground) {
      loopr::daemon::ensure_private_folder(paths.state_dir);
      daemonize(paths.state_dir + "/looprd.log", ready_write);
    }
    loopr::daemon::configure_logging(level);
    if (activation_socket) {
      spdlog::info("socket activation: serving {}, the socket systemd passed", paths.socket_path);
    }
    if (!activation_note.empty()) spdlog::warn("{}", activation_note);
    const std::string folder = own_folder();
    loopr::daemon::DaemonOptions options;
    options.paths = paths;
    options.settings = std::move(settings);
    options.runner_binary = runner_binary.empty() ? folder + "/loopr-runner" : runner_binary;
    options.tool_binary = tool_binary.empty() ? folder + "/loopr-tool" : tool_binary;
    options.on_ready = [&ready_write] { tell_parent(ready_write, "ready"); };
    options.activation_socket = std::move(activation_socket);
    for (const std::string* binary : {&options.runner_binary, &options.tool_binary}) {
      if (::access(binary->c_str(), X_OK) != 0) {
        throw loopr::StartupError(*binary +
                                  " is missing or not executable; build loopr "
                                  "(scripts/build.sh) or pass --runner / --tool");
      }
    }
    loopr::daemon::Daemon daemon(std::move(options));
    return daemon.run();
  } catch (const loopr::ConfigError& e) {
    tell_parent(ready_write, std::string("config error: ") + e.what());
    std::cerr << "looprd: config error: " << e.what() << "\n";
    return kExitConfig;
  } catch (const loopr::StartupError& e) {
    tell_parent(ready_write, std::string("cannot start: ") + e.what());
    std::cerr << "looprd: cannot start: " << e.what() << "\n";
    return kExitStartup;
  } catch (const std::exception& e) {
    tell_parent(ready_write, std::string("cannot start: ") + e.what());
    std::cerr << "looprd: cannot start: " << e.what() << "\n";
    return kExitStartup;
  }
}
