// run_command / run_command_isolated: `sh -c COMMAND` in a folder of the
// worktree, stdin /dev/null, stdout and stderr each held within a cap (head
// and tail kept), a timeout that ends the command's whole process group.
// The caps are half of LOOPR_MAX_OUTPUT_BYTES each, less room for the JSON
// around them; base64 copies of non-UTF-8 output may exceed that, and the
// runner's own cap then bounds the whole result.
//
// Isolation comes from where loopr-tool runs (the lane's sandbox), not from
// here: run_command_isolated differs only in its lane (no-net). When the
// sandbox refused something, `sandbox_note` says so in words a model can act
// on; the lane comes from LOOPR_LANE, which the runner sets.
//
// Background processes that keep stdout open after the shell exits do not
// hold the call: output is read for a short drain period after the exit and
// the call returns; inside a runner the job's PID namespace then ends them.
#include <fcntl.h>
#include <poll.h>
#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>

#include <chrono>
#include <cstdlib>
#include <cstring>

#include "common/output_capture.hpp"
#include "common/utf8.hpp"
#include "loopr-tool/arguments.hpp"
#include "loopr-tool/tools.hpp"
#include "proto/base64.hpp"

namespace loopr::tool {
namespace {

using Clock = std::chrono::steady_clock;

constexpr std::int64_t kDefaultTimeoutMs = 120'000;
constexpr std::int64_t kMaxTimeoutMs = 3'600'000;
constexpr auto kTermGrace = std::chrono::milliseconds(1000);
constexpr auto kDrainAfterExit = std::chrono::milliseconds(200);

std::uint64_t stream_cap() {
  // The runner passes the job's max_output_bytes; each stream gets half, so
  // the JSON result stays within it.
  if (const char* cap = std::getenv("LOOPR_MAX_OUTPUT_BYTES")) {
    const long long value = std::atoll(cap);
    if (value > 1024) return static_cast<std::uint64_t>(value) / 2 - 256;
  }
  return 50'000;
}

bool contains(const std::string& haystack, const char* needle) {
  return haystack.find(needle) != std::string::npos;
}

// A sentence for the model when the failure looks like a sandbox refusal.
std::string sandbox_note(const std::string& out, const std::string& err) {
  const char* lane_env = std::getenv("LOOPR_LANE");
  const std::string lane = lane_env ? lane_env : "";
  const std::string text = out + "\n" + err;
  const bool network_failure =
      contains(text, "Could not resolve host") || contains(text, "Network is unreachable") ||
      contains(text, "Temporary failure in name resolution") ||
      contains(text, "Name or service not known") ||
      contains(text, "Address family not supported") ||
      contains(text, "socket: Operation not permitted") || contains(text, "Connection refused") ||
      contains(text, "/dev/tcp/") || contains(text, "/dev/udp/");
  if (lane == "no-net" && network_failure) {
    return "network is off in lane no-net; use run_command (lane net) for network access";
  }
  if (!lane.empty() && contains(text, "Read-only file system")) {
    return "the sandbox makes everything outside the worktree and /tmp read-only (and .git "
           "metadata too); write inside the worktree or /tmp";
  }
  if (!lane.empty() &&
      (contains(text, "Operation not permitted") || contains(text, "Permission denied"))) {
    return "the sandbox may have refused this (lane " + lane +
           "): writes are allowed only in the worktree and /tmp, and privileged system calls "
           "(mount, ptrace, namespaces, ...) are blocked";
  }
  return {};
}

Result<Json> run_shell(const Worktree& worktree, const Json& raw, const char* tool) {
  auto args = Arguments::parse(raw, tool, {"command", "timeout_ms", "cwd"});
  if (!args) return std::move(args).error();
  auto command = args->required_string("command");
  if (!command) return std::move(command).error();
  if (command->empty()) {
    return make_error(errc::invalid_arguments, std::string(tool) + ": command is empty",
                      "pass a shell command, e.g. \"make -j2\"");
  }
  auto timeout_ms = args->integer_or("timeout_ms", kDefaultTimeoutMs, 1, kMaxTimeoutMs);
  if (!timeout_ms) return std::move(timeout_ms).error();
  auto cwd_arg = args->string_or("cwd", ".");
  if (!cwd_arg) return std::move(cwd_arg).error();
  auto cwd_rel = worktree.relative(*cwd_arg);
  if (!cwd_rel) return std::move(cwd_rel).error();
  auto cwd = worktree.open(*cwd_rel, O_RDONLY | O_DIRECTORY);
  if (!cwd) return std::move(cwd).error();

  int out_pipe[2], err_pipe[2];
  if (::pipe2(out_pipe, O_CLOEXEC) != 0) return errno_error(errno, "cannot create a pipe", "");
  if (::pipe2(err_pipe, O_CLOEXEC) != 0) {
    ::close(out_pipe[0]);
    ::close(out_pipe[1]);
    return errno_error(errno, "cannot create a pipe", "");
  }
  const auto started = Clock::now();
  const pid_t pid = ::fork();
  if (pid < 0) return errno_error(errno, "cannot start the command (fork)", "");
  if (pid == 0) {
    ::setpgid(0, 0);
    const int devnull = ::open("/dev/null", O_RDONLY | O_CLOEXEC);
    if (::fchdir(cwd->get()) != 0 || devnull < 0 || ::dup2(devnull, 0) < 0 ||
        ::dup2(out_pipe[1], 1) < 0 || ::dup2(err_pipe[1], 2) < 0) {
      ::_exit(127);
    }
    ::execl("/bin/sh", "sh", "-c", command->c_str(), static_cast<char*>(nullptr));
    ::_exit(127);
  }
  ::setpgid(pid, pid);  // both sides, so kill(-pid) works whichever runs first
  ::close(out_pipe[1]);
  ::close(err_pipe[1]);

  OutputCapture out(stream_cap());
  OutputCapture err(stream_cap());
  int fds[2] = {out_pipe[0], err_pipe[0]};
  bool timed_out = false;
  bool exited = false;
  int status = 0;
  const auto deadline = started + std::chrono::milliseconds(*timeout_ms);
  std::optional<Clock::time_point> kill_at;
  std::optional<Clock::time_point> drain_until;
  for (;;) {
    if (!exited && ::waitpid(pid, &status, WNOHANG) == pid) {
      exited = true;
      drain_until = Clock::now() + kDrainAfterExit;
      ::kill(-pid, SIGKILL);  // the command is done: its leftovers go too
    }
    const auto now = Clock::now();
    if (fds[0] < 0 && fds[1] < 0 && exited) break;
    if (drain_until && now >= *drain_until) break;
    if (!exited && !timed_out && now >= deadline) {
      timed_out = true;
      ::kill(-pid, SIGTERM);
      ::kill(-pid, SIGCONT);  // a stopped process must see the TERM
      kill_at = now + kTermGrace;
    }
    if (kill_at && now >= *kill_at) ::kill(-pid, SIGKILL);
    pollfd polls[2];
    nfds_t count = 0;
    for (int fd : fds) {
      if (fd >= 0) polls[count++] = {fd, POLLIN, 0};
    }
    // Short ticks: the loop also watches the child's exit and the deadline.
    ::poll(polls, count, 20);
    for (nfds_t i = 0; i < count; ++i) {
      if (!(polls[i].revents & (POLLIN | POLLHUP | POLLERR))) continue;
      char buffer[65536];
      const ssize_t n = ::read(polls[i].fd, buffer, sizeof buffer);
      const bool is_out = polls[i].fd == fds[0];
      if (n > 0) {
        (is_out ? out : err).append(std::string_view(buffer, static_cast<std::size_t>(n)));
      } else if (n == 0 || errno != EINTR) {
        ::close(polls[i].fd);
        (is_out ? fds[0] : fds[1]) = -1;
      }
    }
  }
  for (int fd : fds) {
    if (fd >= 0) ::close(fd);
  }
  if (!exited) ::waitpid(pid, &status, 0);

  const std::string out_text = out.contents();
  const std::string err_text = err.contents();
  Json result = {
      {"command", *command},
      {"exit_code", WIFEXITED(status) ? Json(WEXITSTATUS(status)) : Json(nullptr)},
      {"stdout", to_lossy_utf8(out_text)},
      {"stderr", to_lossy_utf8(err_text)},
      {"timed_out", timed_out},
      {"truncated", out.truncated() || err.truncated()},
      {"duration_ms",
       std::chrono::duration_cast<std::chrono::milliseconds>(Clock::now() - started).count()},
  };
  if (WIFSIGNALED(status)) result["signal"] = WTERMSIG(status);
  // Bytes that are not UTF-8 survive: the text fields show them lossily, and
  // a base64 copy carries them exactly.
  if (!is_valid_utf8(out_text)) result["stdout_base64"] = proto::base64_encode(out_text);
  if (!is_valid_utf8(err_text)) result["stderr_base64"] = proto::base64_encode(err_text);
  if (timed_out) {
    result["hint"] = "the command ran past " + std::to_string(*timeout_ms) +
                     " ms and was stopped; output so far is shown. Pass a larger timeout_ms or "
                     "make the command finish sooner";
  }
  if (const std::string note = sandbox_note(out_text, err_text);
      !note.empty() && (timed_out || !WIFEXITED(status) || WEXITSTATUS(status) != 0)) {
    result["sandbox_note"] = note;
  }
  return result;
}

}  // namespace

Result<Json> run_command(const Worktree& worktree, const Json& args) {
  return run_shell(worktree, args, "run_command");
}

Result<Json> run_command_isolated(const Worktree& worktree, const Json& args) {
  return run_shell(worktree, args, "run_command_isolated");
}

}  // namespace loopr::tool
