#include "tests/client/looprctl_run.hpp"

#include <fcntl.h>
#include <spawn.h>
#include <sys/wait.h>
#include <unistd.h>

#include <csignal>
#include <cstring>
#include <stdexcept>
#include <string_view>
#include <thread>

#include "tests/support/temp_tree.hpp"

extern char** environ;

namespace loopr::test {
namespace {

std::string drain(int fd) {
  std::string text;
  char buffer[65536];
  ssize_t n;
  while ((n = ::read(fd, buffer, sizeof buffer)) != 0) {
    if (n < 0) {
      if (errno == EINTR) continue;
      break;
    }
    text.append(buffer, static_cast<std::size_t>(n));
  }
  return text;
}

bool starts_with(std::string_view text, std::string_view prefix) {
  return text.substr(0, prefix.size()) == prefix;
}

std::vector<std::string> hermetic_environment(const CtlOptions& options) {
  std::vector<std::string> env;
  for (char** entry = environ; *entry != nullptr; ++entry) {
    const std::string_view variable(*entry);
    if (starts_with(variable, "LOOPR_") && !starts_with(variable, "LOOPR_BIN_DIR=")) continue;
    if (starts_with(variable, "XDG_")) continue;
    env.emplace_back(variable);
  }
  if (!options.config_dir.empty()) env.push_back("LOOPR_CONFIG_DIR=" + options.config_dir);
  if (!options.state_dir.empty()) env.push_back("LOOPR_STATE_DIR=" + options.state_dir);
  for (const auto& [name, value] : options.env)
    env.push_back(name + "=" + value);
  return env;
}

}  // namespace

CtlRun run_looprctl(const std::vector<std::string>& args, const CtlOptions& options) {
  // A looprctl that exits without reading its stdin must not kill the test.
  static const bool sigpipe_ignored = ::signal(SIGPIPE, SIG_IGN) != SIG_ERR;
  (void)sigpipe_ignored;
  int in_pipe[2], out_pipe[2], err_pipe[2];
  if (::pipe2(in_pipe, O_CLOEXEC) != 0 || ::pipe2(out_pipe, O_CLOEXEC) != 0 ||
      ::pipe2(err_pipe, O_CLOEXEC) != 0) {
    throw std::runtime_error("pipe2 failed");
  }
  posix_spawn_file_actions_t actions;
  posix_spawn_file_actions_init(&actions);
  posix_spawn_file_actions_adddup2(&actions, in_pipe[0], 0);
  posix_spawn_file_actions_adddup2(&actions, out_pipe[1], 1);
  posix_spawn_file_actions_adddup2(&actions, err_pipe[1], 2);
  if (!options.cwd.empty()) posix_spawn_file_actions_addchdir_np(&actions, options.cwd.c_str());

  const std::string binary = options.binary.empty() ? bin_path("looprctl") : options.binary;
  std::vector<std::string> argv_text = {binary};
  argv_text.insert(argv_text.end(), args.begin(), args.end());
  std::vector<char*> argv;
  for (auto& arg : argv_text)
    argv.push_back(arg.data());
  argv.push_back(nullptr);
  std::vector<std::string> env_text = hermetic_environment(options);
  std::vector<char*> env;
  for (auto& variable : env_text)
    env.push_back(variable.data());
  env.push_back(nullptr);

  pid_t pid = -1;
  const int rc = ::posix_spawn(&pid, binary.c_str(), &actions, nullptr, argv.data(), env.data());
  posix_spawn_file_actions_destroy(&actions);
  ::close(in_pipe[0]);
  ::close(out_pipe[1]);
  ::close(err_pipe[1]);
  if (rc != 0) {
    ::close(in_pipe[1]);
    ::close(out_pipe[0]);
    ::close(err_pipe[0]);
    throw std::runtime_error("cannot spawn " + binary + ": " + std::strerror(rc));
  }
  std::thread feeder([fd = in_pipe[1], text = options.stdin_text] {
    std::size_t done = 0;
    while (done < text.size()) {
      const ssize_t n = ::write(fd, text.data() + done, text.size() - done);
      if (n <= 0) break;
      done += static_cast<std::size_t>(n);
    }
    ::close(fd);
  });
  CtlRun run;
  std::thread err_reader([&] { run.err = drain(err_pipe[0]); });
  run.out = drain(out_pipe[0]);
  err_reader.join();
  feeder.join();
  ::close(out_pipe[0]);
  ::close(err_pipe[0]);
  int status = 0;
  while (::waitpid(pid, &status, 0) < 0 && errno == EINTR) {
  }
  run.exit_code = WIFEXITED(status) ? WEXITSTATUS(status) : 128 + WTERMSIG(status);
  return run;
}

}  // namespace loopr::test
