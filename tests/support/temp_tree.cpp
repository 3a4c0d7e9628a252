#include "tests/support/temp_tree.hpp"

#include <fcntl.h>
#include <gtest/gtest.h>
#include <spawn.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include <climits>
#include <csignal>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <sstream>
#include <stdexcept>
#include <thread>

extern char** environ;

namespace loopr::test {
namespace fs = std::filesystem;

TempTree::TempTree() {
  const char* tmp = std::getenv("TMPDIR");
  std::string pattern = std::string(tmp && *tmp ? tmp : "/tmp") + "/loopr-test-XXXXXX";
  if (::mkdtemp(pattern.data()) == nullptr) throw std::runtime_error("mkdtemp failed");
  char resolved[PATH_MAX];
  if (::realpath(pattern.c_str(), resolved) == nullptr) throw std::runtime_error("realpath");
  root_ = resolved;
}

TempTree::~TempTree() {
  std::error_code ignored;
  // Make everything writable again first (tests may chmod things away).
  for (auto it = fs::recursive_directory_iterator(root_, ignored);
       it != fs::recursive_directory_iterator(); it.increment(ignored)) {
    if (it->is_directory(ignored) && !it->is_symlink(ignored)) {
      fs::permissions(it->path(), fs::perms::owner_all, fs::perm_options::add, ignored);
    }
  }
  fs::remove_all(root_, ignored);
}

std::string TempTree::path(std::string_view relative) const {
  return root_ + "/" + std::string(relative);
}

void TempTree::write(std::string_view relative, std::string_view content) const {
  const fs::path target = path(relative);
  fs::create_directories(target.parent_path());
  std::ofstream out(target, std::ios::binary | std::ios::trunc);
  out.write(content.data(), static_cast<std::streamsize>(content.size()));
  if (!out) ADD_FAILURE() << "cannot write " << target;
}

std::string TempTree::read(std::string_view relative) const {
  std::ifstream in(path(relative), std::ios::binary);
  if (!in) {
    ADD_FAILURE() << "cannot read " << path(relative);
    return {};
  }
  std::ostringstream buffer;
  buffer << in.rdbuf();
  return buffer.str();
}

bool TempTree::exists(std::string_view relative) const {
  struct stat st {};
  return ::lstat(path(relative).c_str(), &st) == 0;
}

void TempTree::mkdir(std::string_view relative) const {
  fs::create_directories(path(relative));
}

void TempTree::symlink(std::string_view target, std::string_view relative) const {
  const fs::path link = path(relative);
  fs::create_directories(link.parent_path());
  if (::symlink(std::string(target).c_str(), link.c_str()) != 0) {
    ADD_FAILURE() << "cannot create symlink " << link;
  }
}

std::string bin_path(std::string_view name) {
  const char* dir = std::getenv("LOOPR_BIN_DIR");
  return std::string(dir && *dir ? dir : "build/bin") + "/" + std::string(name);
}

namespace {

std::string drain(int fd) {
  std::string out;
  char buffer[65536];
  ssize_t n;
  while ((n = ::read(fd, buffer, sizeof buffer)) > 0)
    out.append(buffer, static_cast<size_t>(n));
  return out;
}

}  // namespace

ToolRun run_tool_binary(std::string_view binary_name, std::string_view tool,
                        const std::string& worktree, std::string_view stdin_text) {
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
  const std::string binary = bin_path(binary_name);
  std::string tool_arg(tool);
  std::string worktree_flag = "--worktree";
  std::string worktree_arg = worktree;
  char* argv[] = {const_cast<char*>(binary.c_str()), tool_arg.data(), worktree_flag.data(),
                  worktree_arg.data(), nullptr};
  pid_t pid = -1;
  const int rc = ::posix_spawn(&pid, binary.c_str(), &actions, nullptr, argv, environ);
  posix_spawn_file_actions_destroy(&actions);
  ::close(in_pipe[0]);
  ::close(out_pipe[1]);
  ::close(err_pipe[1]);
  if (rc != 0) throw std::runtime_error("cannot spawn " + binary);

  // Feed stdin on a thread so a large input cannot deadlock against output.
  // The tool may exit without reading stdin (a usage error): SIGPIPE is
  // blocked on this thread only, so that write fails with EPIPE instead of
  // killing the test; the pending thread-directed signal dies with the thread.
  std::thread feeder([fd = in_pipe[1], text = std::string(stdin_text)] {
    sigset_t pipe_only;
    sigemptyset(&pipe_only);
    sigaddset(&pipe_only, SIGPIPE);
    ::pthread_sigmask(SIG_BLOCK, &pipe_only, nullptr);
    std::size_t done = 0;
    while (done < text.size()) {
      const ssize_t n = ::write(fd, text.data() + done, text.size() - done);
      if (n <= 0) break;
      done += static_cast<std::size_t>(n);
    }
    ::close(fd);
  });
  ToolRun run;
  std::thread err_reader([&] { run.stderr_text = drain(err_pipe[0]); });
  run.stdout_text = drain(out_pipe[0]);
  err_reader.join();
  feeder.join();
  ::close(out_pipe[0]);
  ::close(err_pipe[0]);
  int status = 0;
  ::waitpid(pid, &status, 0);
  run.exit_code = WIFEXITED(status) ? WEXITSTATUS(status) : 128 + WTERMSIG(status);
  run.output = nlohmann::json::parse(run.stdout_text, nullptr, false);
  if (run.output.is_discarded()) run.output = nullptr;
  return run;
}

ToolRun run_loopr_tool(std::string_view tool, const std::string& worktree,
                       std::string_view stdin_text) {
  return run_tool_binary("loopr-tool", tool, worktree, stdin_text);
}

ToolRun run_loopr_tool(std::string_view tool, const std::string& worktree,
                       const nlohmann::json& args) {
  return run_loopr_tool(tool, worktree, std::string_view(args.dump()));
}

}  // namespace loopr::test
