#include "hooks/host_process.hpp"

#include <fcntl.h>
#include <poll.h>
#include <signal.h>
#include <spawn.h>
#include <sys/mman.h>
#include <sys/wait.h>
#include <unistd.h>

#include <array>
#include <cerrno>
#include <cstring>
#include <vector>

#include "common/spawn_attributes.hpp"
#include "common/unique_fd.hpp"

extern char** environ;

namespace loopr::hooks {
namespace {

using Clock = std::chrono::steady_clock;

struct Pipe {
  UniqueFd read;
  UniqueFd write;
};

bool make_pipe(Pipe& pipe) {
  int fds[2];
  if (::pipe2(fds, O_CLOEXEC) != 0) return false;
  pipe.read = UniqueFd(fds[0]);
  pipe.write = UniqueFd(fds[1]);
  return true;
}

// Reads what is ready on `fd` into `kept` up to the cap; false at EOF or error.
bool drain(int fd, std::string& kept) {
  char buffer[8192];
  const ssize_t n = ::read(fd, buffer, sizeof buffer);
  if (n < 0) return errno == EAGAIN || errno == EINTR;
  if (n == 0) return false;
  const std::size_t room =
      kept.size() < kMaxHookOutputBytes ? kMaxHookOutputBytes - kept.size() : 0;
  kept.append(buffer, std::min(room, static_cast<std::size_t>(n)));
  return true;
}

// Reads what is left in the pipe now, without waiting for more.
void drain_rest(int fd, std::string& kept) {
  for (int i = 0; i < 64; ++i) {
    const std::size_t before = kept.size();
    errno = 0;
    if (!drain(fd, kept) || errno == EAGAIN || (kept.size() == before && errno != 0)) return;
  }
}

}  // namespace

HookRun run_on_host(const std::string& command, const std::string& event, const std::string& input,
                    const std::string& cwd, std::chrono::milliseconds timeout,
                    const std::atomic<bool>* stop) {
  HookRun run;
  const auto started = Clock::now();
  // The input in a memory file, not a pipe: the hook reads it at its pace,
  // or not at all, and looprd never writes to a pipe nobody reads (SIGPIPE).
  UniqueFd in(::memfd_create("loopr-hook-input", MFD_CLOEXEC));
  if (!in) {
    run.why = std::string("cannot create its input: ") + std::strerror(errno);
    return run;
  }
  for (std::size_t written = 0; written < input.size();) {
    const ssize_t n = ::write(in.get(), input.data() + written, input.size() - written);
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0) {
      run.why = std::string("cannot write its input: ") + std::strerror(errno);
      return run;
    }
    written += static_cast<std::size_t>(n);
  }
  ::lseek(in.get(), 0, SEEK_SET);
  Pipe out, err;
  if (!make_pipe(out) || !make_pipe(err)) {
    run.why = std::string("cannot create a pipe: ") + std::strerror(errno);
    return run;
  }
  std::vector<std::string> environment;
  for (char** entry = environ; *entry != nullptr; ++entry) {
    if (std::strncmp(*entry, "LOOPR_HOOK_EVENT=", 17) != 0) environment.emplace_back(*entry);
  }
  environment.push_back("LOOPR_HOOK_EVENT=" + event);
  std::vector<char*> env_c;
  for (std::string& entry : environment)
    env_c.push_back(entry.data());
  env_c.push_back(nullptr);
  std::string shell = "/bin/sh", dash_c = "-c", line = command;
  std::array<char*, 4> argv{shell.data(), dash_c.data(), line.data(), nullptr};

  posix_spawn_file_actions_t actions;
  posix_spawnattr_t attributes;
  ::posix_spawn_file_actions_init(&actions);
  ::posix_spawnattr_init(&attributes);
  int rc = ::posix_spawn_file_actions_adddup2(&actions, in.get(), 0);
  if (rc == 0) rc = ::posix_spawn_file_actions_adddup2(&actions, out.write.get(), 1);
  if (rc == 0) rc = ::posix_spawn_file_actions_adddup2(&actions, err.write.get(), 2);
  if (rc == 0) rc = ::posix_spawn_file_actions_addchdir_np(&actions, cwd.c_str());
  if (rc == 0) rc = ::posix_spawn_file_actions_addclosefrom_np(&actions, 3);
  if (rc == 0) rc = own_group_default_signals(attributes);
  pid_t pid = -1;
  if (rc == 0)
    rc = ::posix_spawn(&pid, shell.c_str(), &actions, &attributes, argv.data(), env_c.data());
  ::posix_spawn_file_actions_destroy(&actions);
  ::posix_spawnattr_destroy(&attributes);
  if (rc != 0) {
    run.why = "cannot start /bin/sh in " + cwd + ": " + std::strerror(rc);
    return run;
  }
  in.reset();
  out.write.reset();
  err.write.reset();
  for (int fd : {out.read.get(), err.read.get()}) {
    ::fcntl(fd, F_SETFL, ::fcntl(fd, F_GETFL) | O_NONBLOCK);
  }

  const auto deadline = started + timeout;
  bool out_open = true, err_open = true;
  int status = 0;
  bool exited = false;
  while (true) {
    const pid_t done = ::waitpid(pid, &status, WNOHANG);
    if (done == pid) {
      exited = true;
      break;
    }
    const auto now = Clock::now();
    if (now >= deadline || (stop != nullptr && stop->load())) break;
    std::array<pollfd, 2> fds{};
    nfds_t count = 0;
    if (out_open) fds[count++] = {out.read.get(), POLLIN, 0};
    if (err_open) fds[count++] = {err.read.get(), POLLIN, 0};
    // Short slices: the child's exit is seen by waitpid, not by a pipe.
    const auto left = std::chrono::duration_cast<std::chrono::milliseconds>(deadline - now);
    const int wait_ms = static_cast<int>(std::min<std::int64_t>(left.count() + 1, 20));
    if (::poll(fds.data(), count, wait_ms) < 0 && errno != EINTR) break;
    for (nfds_t i = 0; i < count; ++i) {
      if (fds[i].revents == 0) continue;
      if (fds[i].fd == out.read.get()) {
        out_open = drain(out.read.get(), run.out);
      } else if (fds[i].fd == err.read.get()) {
        err_open = drain(err.read.get(), run.err);
      }
    }
  }
  if (!exited) {
    ::kill(-pid, SIGKILL);
    ::waitpid(pid, &status, 0);
    run.ended = HookRun::Ended::timed_out;
  } else {
    // What the shell printed just before it exited.
    if (out_open) drain_rest(out.read.get(), run.out);
    if (err_open) drain_rest(err.read.get(), run.err);
    if (WIFEXITED(status)) {
      run.ended = HookRun::Ended::exited;
      run.exit_code = WEXITSTATUS(status);
    } else {
      run.ended = HookRun::Ended::signalled;
      run.exit_code = WTERMSIG(status);
    }
  }
  run.duration_ms = static_cast<std::uint64_t>(
      std::chrono::duration_cast<std::chrono::milliseconds>(Clock::now() - started).count());
  return run;
}

}  // namespace loopr::hooks
