// The command tools: `sh -c COMMAND` in a folder of the worktree, stdin
// /dev/null, what it prints held within the job's output cap (head and tail
// kept), a timeout that ends the command's whole process group.
//
//   run_command / run_command_isolated  {command, timeout_ms?, cwd?} from the
//       model; they differ only in their lane (isolated: no-net).
//   hook  {command, input, event, timeout_ms}: a [[hooks]] command, sent by
//       the daemon only; `input` is its stdin (a memory file).
//   build / test / validate  {command} injected by the daemon from loopr.toml
//       [commands]; the model's schema takes no arguments. They run at the
//       worktree's top, with no timeout of their own: the job's timeout (the
//       catalog's, 600 s by default) is what stops them.
//
// Result: {command, exit_code, output, output_bytes, stdout, stderr,
// timed_out, truncated, duration_ms} plus signal, stdout_base64/
// stderr_base64 (bytes that are not UTF-8, exactly), interrupted, hint,
// sandbox_note and disk_note (a failed command that ran out of room: which
// disk is full, what to do) when they apply. `output` is stdout and stderr
// interleaved in the order they were read, as `cmd 2>&1` shows them in a
// terminal; `output_bytes` counts every byte printed, before any cut.
//
// The whole result fits LOOPR_MAX_OUTPUT_BYTES (100,000 outside a runner):
// what the other fields take is set aside, and of the rest `output` gets
// half, stdout and stderr a quarter each (one that needs less leaves the
// rest to the other); each is cut to its head and tail with a marker line
// saying how many bytes were cut, on UTF-8 boundaries, and the budget is
// lowered until the JSON, escapes and base64 copies included, fits
// (command_output.hpp). Only a result too large without any output (a huge
// command line) is left for the runner to refuse.
//
// Stopped from outside (SIGTERM or SIGINT: the runner's timeout or a cancel,
// forwarded by the job's PID 1): the command's group gets TERM, a short grace
// and KILL, and the result is still printed with the output so far and
// "interrupted": true, so a timed-out job keeps its partial output. The
// grace stays well under the runner's TERM-to-KILL grace (500 ms default).
//
// With LOOPR_STREAM_OUTPUT=1 (set by runners of streaming lanes, the heavy
// lane) every chunk the command prints is also copied to loopr-tool's stderr
// as it arrives, which the runner streams to the daemon as output_chunk
// frames; stdout stays the one JSON result.
//
// As the job's PID 1 in a lane runner (LOOPR_JOB_INIT=1 and pid 1), the
// command tools also do an init's work: they reap orphaned processes, and
// their TERM and KILL go to every process of the job (kill(-1)), so a
// setsid or double-forked child is stopped like the rest.
//
// Isolation comes from where loopr-tool runs (the lane's sandbox), not from
// here. When the sandbox refused something, `sandbox_note` says so in words a
// model can act on; the lane and whether it has network come from LOOPR_LANE
// and LOOPR_NETWORK, which the runner sets.
//
// Background processes that keep stdout open after the shell exits do not
// hold the call: output is read for a short drain period after the exit and
// the call returns; inside a runner the job's PID namespace then ends them.
#include <fcntl.h>
#include <poll.h>
#include <signal.h>
#include <sys/mman.h>
#include <sys/resource.h>
#include <sys/statvfs.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <cctype>
#include <chrono>
#include <cstdlib>
#include <cstring>
#include <optional>

#include "common/unique_fd.hpp"
#include "loopr-tool/arguments.hpp"
#include "loopr-tool/command_output.hpp"
#include "loopr-tool/job_facts.hpp"
#include "loopr-tool/tools.hpp"

namespace loopr::tool {
namespace {

using Clock = std::chrono::steady_clock;

constexpr std::int64_t kDefaultTimeoutMs = 120'000;
constexpr std::int64_t kMaxTimeoutMs = 3'600'000;
// The configured commands have no timeout of their own; this only bounds a
// loopr-tool run outside any runner.
constexpr std::int64_t kConfiguredCommandTimeoutMs = 24 * kMaxTimeoutMs;
constexpr auto kTermGrace = std::chrono::milliseconds(1000);
constexpr auto kTermGraceWhenStopped = std::chrono::milliseconds(150);
constexpr auto kDrainAfterExit = std::chrono::milliseconds(200);
constexpr auto kDrainWhenStopped = std::chrono::milliseconds(50);

// Set by the SIGTERM/SIGINT handler; read by the command's event loop.
volatile sig_atomic_t g_stop_requested = 0;

void request_stop(int) {
  g_stop_requested = 1;
}

// Installed without SA_RESTART, so a pending poll() returns at once. The
// command itself gets default dispositions back at exec.
void catch_stop_signals() {
  struct sigaction action {};
  action.sa_handler = request_stop;
  ::sigemptyset(&action.sa_mask);
  for (int signo : {SIGTERM, SIGINT})
    ::sigaction(signo, &action, nullptr);
}

std::string env_or_empty(const char* name) {
  const char* value = std::getenv(name);
  return value ? value : "";
}

// The cap on the result's JSON line: the job's max_output_bytes, which the
// runner passes; a default outside any runner.
std::size_t result_cap() {
  return job_max_output_bytes().value_or(100'000);
}

bool contains(const std::string& haystack, const char* needle) {
  return haystack.find(needle) != std::string::npos;
}

// A sentence for the model when the failure looks like a sandbox refusal.
std::string sandbox_note(const std::string& out, const std::string& err) {
  const std::string lane = job_lane();
  const std::string text = out + "\n" + err;
  const bool network_failure =
      contains(text, "Could not resolve host") || contains(text, "Network is unreachable") ||
      contains(text, "Temporary failure in name resolution") ||
      contains(text, "Name or service not known") ||
      contains(text, "Address family not supported") ||
      contains(text, "socket: Operation not permitted") || contains(text, "Connection refused") ||
      contains(text, "Failed to connect") || contains(text, "Couldn't connect") ||
      contains(text, "/dev/tcp/") || contains(text, "/dev/udp/");
  if (!lane.empty() && job_network_off() && network_failure) {
    return "network is off in lane " + lane + "; use run_command (lane net) for network access";
  }
  if (!lane.empty() && contains(text, "setgroups") && contains(text, "Operation not permitted")) {
    return "the sandbox's user namespace maps no other users and refuses setgroups, so a program "
           "cannot switch to another user (apt's _apt, su, sudo, setpriv); run it as the current "
           "user (for apt: -o APT::Sandbox::User=root, which loopr's APT_CONFIG sets unless it "
           "is overridden); system folders are read-only: apt-get download and dpkg -x into the "
           "worktree, or ask the user to install the package";
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

// Whether the file system of `info` has (almost) no room left: under 1 MiB
// of blocks, or no free inodes (tmpfs caps both).
bool nearly_full(const struct statvfs& info) {
  const std::uint64_t free_bytes = static_cast<std::uint64_t>(info.f_bavail) * info.f_frsize;
  return free_bytes < (std::uint64_t{1} << 20) || (info.f_files != 0 && info.f_favail == 0);
}

// A sentence for the model when the command failed for lack of room: which
// file system is full — the worktree's disk or the lane's /tmp, measured once
// the command ended — and what to do. Empty when the output names no such
// failure. `worktree_fd` is a folder of the worktree (the command's cwd).
std::string disk_note(const std::string& out, const std::string& err, int worktree_fd) {
  const std::string text = out + "\n" + err;
  const bool no_space =
      contains(text, "No space left on device") || contains(text, "Disk quota exceeded");
  if (!no_space && contains(text, "File size limit exceeded")) {
    rlimit limit{};
    ::getrlimit(RLIMIT_FSIZE, &limit);
    return "a file reached the largest size a job may write (" +
           (limit.rlim_cur == RLIM_INFINITY ? std::string("unlimited")
                                            : std::to_string(limit.rlim_cur >> 20) + " MiB") +
           ", RLIMIT_FSIZE); write smaller files";
  }
  if (!no_space) return {};
  struct statvfs info {};
  if (::fstatvfs(worktree_fd, &info) == 0 && nearly_full(info)) {
    return "the disk holding the worktree is full (no space or no inodes left); delete files "
           "that are not needed (file_delete, or rm in run_command) before writing more";
  }
  if (::statvfs("/tmp", &info) == 0 && nearly_full(info)) {
    return "/tmp is full: it is a small private tmpfs of " +
           std::to_string((static_cast<std::uint64_t>(info.f_blocks) * info.f_frsize) >> 20) +
           " MiB for the lane's jobs; delete files in /tmp that are not needed, or write large "
           "files in the worktree";
  }
  return "a write failed because a disk was full (the worktree's or /tmp); there is room again "
         "now, perhaps because the command's own files were removed; write less, or delete "
         "files that are not needed";
}

bool contains_folded(const std::string& text, std::string_view needle) {
  const auto found =
      std::search(text.begin(), text.end(), needle.begin(), needle.end(), [](char a, char b) {
        return std::tolower(static_cast<unsigned char>(a)) ==
               std::tolower(static_cast<unsigned char>(b));
      });
  return found != text.end();
}

Json limit_json(const std::string& name, const std::string& key, std::uint64_t value,
                const std::string& unit, const std::string& message) {
  return {{"name", name}, {"key", key}, {"value", value}, {"unit", unit}, {"message", message}};
}

std::string lane_key(const std::string& key) {
  const std::string lane = job_lane();
  return "[lanes." + (lane.empty() ? std::string("<lane>") : lane) + "] " + key + " in loopr.toml";
}

// The loopr limit a failed command ran into, as {name, key, value, unit,
// message}, or null: the address space (address_space_mb), the process
// count (pids_max), the job's /tmp (tmp_size_mb), the file size limit.
// Read from what the command printed and the limits in force; the runner
// adds what only it sees (its memory cgroup's OOM kills, its own timeout).
Json limit_hit(const std::string& out, const std::string& err, int worktree_fd) {
  const std::string text = out + "\n" + err;
  if (const char* mb = std::getenv("LOOPR_ADDRESS_SPACE_MB"); mb != nullptr && mb[0] != '\0') {
    const bool no_memory =
        contains_folded(text, "out of memory") || contains_folded(text, "cannot allocate memory") ||
        contains_folded(text, "bad_alloc") || contains_folded(text, "MemoryError") ||
        contains_folded(text, "allocation failed") || contains_folded(text, "failed to reserve");
    if (no_memory) {
      const std::uint64_t value = std::strtoull(mb, nullptr, 10);
      const std::string key = lane_key("address_space_mb");
      return limit_json("address_space", key, value, "MiB",
                        "the command ran out of address space: every process of the job may map "
                        "at most " +
                            std::to_string(value) + " MiB (RLIMIT_AS, " + key +
                            "); runtimes such as Node's WebAssembly or the JVM reserve far more "
                            "than they use: the user can raise it or remove it");
    }
  }
  const bool again = contains(text, "Resource temporarily unavailable");
  if (contains(text, "Cannot fork") || contains(text, "can't fork") ||
      contains(text, "fork: retry") ||
      (again && (contains(text, "fork") || contains(text, "thread")))) {
    rlimit limit{};
    ::getrlimit(RLIMIT_NPROC, &limit);
    const std::uint64_t value = limit.rlim_cur == RLIM_INFINITY ? 0 : limit.rlim_cur;
    const std::string key = lane_key("pids_max");
    return limit_json("processes", key, value, "processes",
                      "the command could not start more processes: a job may run at most " +
                          std::to_string(value) + " at once (" + key +
                          "); run fewer in parallel (e.g. make -j2), or the user can raise it");
  }
  const bool no_space =
      contains(text, "No space left on device") || contains(text, "Disk quota exceeded");
  struct statvfs info {};
  if (no_space && !(::fstatvfs(worktree_fd, &info) == 0 && nearly_full(info)) &&
      ::statvfs("/tmp", &info) == 0 && nearly_full(info)) {
    const std::uint64_t value = (static_cast<std::uint64_t>(info.f_blocks) * info.f_frsize) >> 20;
    return limit_json("disk", "[sandbox] tmp_size_mb in loopr.toml", value, "MiB",
                      "the job's /tmp is full: it is a private tmpfs of " + std::to_string(value) +
                          " MiB ([sandbox] tmp_size_mb in loopr.toml); write large files in the "
                          "worktree, or the user can raise it");
  }
  if (!no_space && contains(text, "File size limit exceeded")) {
    rlimit limit{};
    ::getrlimit(RLIMIT_FSIZE, &limit);
    if (limit.rlim_cur != RLIM_INFINITY) {
      const std::uint64_t value = limit.rlim_cur >> 20;
      return limit_json("file_size", "loopr-runner --max-file-mb (no loopr.toml key)", value, "MiB",
                        "a file reached the largest size a job may write (" +
                            std::to_string(value) + " MiB, RLIMIT_FSIZE); write smaller files");
    }
  }
  return nullptr;
}

struct ShellRequest {
  std::string command;
  std::int64_t timeout_ms = kDefaultTimeoutMs;
  std::string cwd = ".";
  // The command's stdin (a hook's event); unset: /dev/null.
  std::optional<std::string> input;
};

// Writes all of `bytes` to fd 2, for streaming; a failed write only ends the
// streaming, never the command.
void copy_to_stderr(std::string_view bytes, bool& streaming) {
  while (streaming && !bytes.empty()) {
    const ssize_t n = ::write(STDERR_FILENO, bytes.data(), bytes.size());
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0) {
      streaming = false;
      return;
    }
    bytes.remove_prefix(static_cast<std::size_t>(n));
  }
}

// True when loopr-tool is the PID 1 of a job's namespace (contain.hpp).
bool is_job_init() {
  return ::getpid() == 1 && env_or_empty("LOOPR_JOB_INIT") == "1";
}

Result<Json> run_shell(const Worktree& worktree, const ShellRequest& request, const char* tool) {
  auto cwd_rel = worktree.relative(request.cwd);
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
  // The lane's address-space limit ([lanes.X] address_space_mb, off by
  // default), set by the runner: loopr-tool carries it
  // already in normal builds (then this is the same value again); in sanitizer
  // builds only the command gets it (runner/resource_limits.cpp).
  rlim_t memory_limit = 0;
  if (const char* mb = std::getenv("LOOPR_ADDRESS_SPACE_MB")) {
    memory_limit = static_cast<rlim_t>(std::strtoull(mb, nullptr, 10)) << 20;
  }
  // Its input in a memory file: the command reads it at its own pace, or not
  // at all, and nothing here writes to a pipe nobody reads.
  UniqueFd input;
  if (request.input) {
    input = UniqueFd(::memfd_create("loopr-input", MFD_CLOEXEC));
    if (!input) return errno_error(errno, std::string(tool) + ": cannot hold the input", "");
    for (std::size_t written = 0; written < request.input->size();) {
      const ssize_t n =
          ::write(input.get(), request.input->data() + written, request.input->size() - written);
      if (n < 0 && errno == EINTR) continue;
      if (n <= 0) return errno_error(errno, std::string(tool) + ": cannot write the input", "");
      written += static_cast<std::size_t>(n);
    }
    ::lseek(input.get(), 0, SEEK_SET);
  }
  catch_stop_signals();
  const auto started = Clock::now();
  const pid_t pid = ::fork();
  if (pid < 0)
    return errno_error(errno, std::string(tool) + ": cannot start the command (fork)", "");
  if (pid == 0) {
    ::setpgid(0, 0);
    const int devnull = input ? input.get() : ::open("/dev/null", O_RDONLY | O_CLOEXEC);
    if (::fchdir(cwd->get()) != 0 || devnull < 0 || ::dup2(devnull, 0) < 0 ||
        ::dup2(out_pipe[1], 1) < 0 || ::dup2(err_pipe[1], 2) < 0) {
      ::_exit(127);
    }
    if (memory_limit != 0) {
      const rlimit limit{memory_limit, memory_limit};
      if (::setrlimit(RLIMIT_AS, &limit) != 0) ::_exit(126);
    }
    ::execl("/bin/sh", "sh", "-c", request.command.c_str(), static_cast<char*>(nullptr));
    ::_exit(127);
  }
  ::setpgid(pid, pid);  // both sides, so kill(-pid) works whichever runs first
  ::close(out_pipe[1]);
  ::close(err_pipe[1]);

  const bool job_init = is_job_init();
  // The command's process group, or, as the job's init, every process of it.
  const auto signal_command = [&](int signo) { ::kill(job_init ? -1 : -pid, signo); };
  bool streaming = env_or_empty("LOOPR_STREAM_OUTPUT") == "1";
  CommandOutput printed(result_cap());
  int fds[2] = {out_pipe[0], err_pipe[0]};
  bool timed_out = false;
  bool interrupted = false;
  bool exited = false;
  int status = 0;
  const auto deadline = started + std::chrono::milliseconds(request.timeout_ms);
  std::optional<Clock::time_point> kill_at;
  std::optional<Clock::time_point> drain_until;
  const auto stop_command = [&](Clock::time_point now, std::chrono::milliseconds grace) {
    signal_command(SIGTERM);
    signal_command(SIGCONT);  // a stopped process must see the TERM
    kill_at = now + grace;
  };
  for (;;) {
    // The shell, and as the job's init every orphan that was left to it.
    for (;;) {
      int reaped_status = 0;
      const pid_t reaped = ::waitpid(job_init ? -1 : pid, &reaped_status, WNOHANG);
      if (reaped <= 0) break;
      if (reaped != pid || exited) continue;
      status = reaped_status;
      exited = true;
      drain_until = Clock::now() + (interrupted ? kDrainWhenStopped : kDrainAfterExit);
      signal_command(SIGKILL);  // the command is done: its leftovers go too
    }
    const auto now = Clock::now();
    if (fds[0] < 0 && fds[1] < 0 && exited) break;
    if (drain_until && now >= *drain_until) break;
    if (!exited && !interrupted && g_stop_requested) {
      interrupted = true;
      stop_command(now, kTermGraceWhenStopped);
    }
    if (!exited && !timed_out && !interrupted && now >= deadline) {
      timed_out = true;
      stop_command(now, kTermGrace);
    }
    if (kill_at && now >= *kill_at) signal_command(SIGKILL);
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
        const std::string_view bytes(buffer, static_cast<std::size_t>(n));
        if (is_out) {
          printed.append_stdout(bytes);
        } else {
          printed.append_stderr(bytes);
        }
        copy_to_stderr(bytes, streaming);
      } else if (n == 0 || errno != EINTR) {
        ::close(polls[i].fd);
        (is_out ? fds[0] : fds[1]) = -1;
      }
    }
  }
  for (int fd : fds) {
    if (fd >= 0) ::close(fd);
  }
  if (!exited) {
    signal_command(SIGKILL);
    ::waitpid(pid, &status, 0);
  }

  const std::string out_text = printed.stdout_kept();
  const std::string err_text = printed.stderr_kept();
  Json result = {
      {"command", request.command},
      {"exit_code", WIFEXITED(status) ? Json(WEXITSTATUS(status)) : Json(nullptr)},
      {"timed_out", timed_out},
      {"duration_ms",
       std::chrono::duration_cast<std::chrono::milliseconds>(Clock::now() - started).count()},
  };
  if (WIFSIGNALED(status)) result["signal"] = WTERMSIG(status);
  if (timed_out) {
    result["hint"] = "the command ran past " + std::to_string(request.timeout_ms) +
                     " ms and was stopped; output so far is shown. Pass a larger timeout_ms or "
                     "make the command finish sooner";
  }
  if (interrupted) {
    result["interrupted"] = true;
    result["hint"] =
        "the command was stopped from outside (the call's timeout or a cancel); output so far "
        "is shown";
  }
  if (const std::string note = sandbox_note(out_text, err_text);
      !note.empty() && (timed_out || !WIFEXITED(status) || WEXITSTATUS(status) != 0)) {
    result["sandbox_note"] = note;
  }
  if (const std::string note = disk_note(out_text, err_text, cwd->get());
      !note.empty() && (!WIFEXITED(status) || WEXITSTATUS(status) != 0)) {
    result["disk_note"] = note;
  }
  // Which loopr limit stopped it, if one did, and the key that raises it.
  const bool failed = timed_out || !WIFEXITED(status) || WEXITSTATUS(status) != 0;
  if (timed_out) {
    result["limit"] = limit_json(
        "time", "timeout_ms (an argument of " + std::string(tool) + ")",
        static_cast<std::uint64_t>(request.timeout_ms), "ms",
        "the command was stopped at its timeout_ms of " + std::to_string(request.timeout_ms) +
            " ms; pass a larger timeout_ms (up to the tool's limit in catalog.toml)");
  } else if (Json hit = failed ? limit_hit(out_text, err_text, cwd->get()) : Json();
             !hit.is_null()) {
    result["limit"] = std::move(hit);
  }
  // Last: the outputs get what the other fields leave of the cap.
  printed.add_to(result);
  if (!result.contains("limit") && result.value("truncated", false)) {
    // Cut to the cap: that is a limit too. add_to again, as the field takes room.
    const std::uint64_t cap = result_cap();
    const std::string key = "max_output_bytes of [tools." + std::string(tool) + "] in catalog.toml";
    result["limit"] = limit_json("output", key, cap, "bytes",
                                 "the result is held to " + std::to_string(cap) + " bytes (" + key +
                                     "): only the head and tail of the output are kept");
    printed.add_to(result);
  }
  return result;
}

// run_command's and run_command_isolated's arguments, from the model.
Result<Json> run_model_command(const Worktree& worktree, const Json& raw, const char* tool) {
  auto args = Arguments::parse(raw, tool, {"command", "timeout_ms", "cwd"});
  if (!args) return std::move(args).error();
  ShellRequest request;
  auto command = args->required_string("command");
  if (!command) return std::move(command).error();
  if (command->empty()) {
    return make_error(errc::invalid_arguments, std::string(tool) + ": command is empty",
                      "pass a shell command, e.g. \"make -j2\"");
  }
  request.command = std::move(*command);
  auto timeout_ms = args->integer_or("timeout_ms", kDefaultTimeoutMs, 1, kMaxTimeoutMs);
  if (!timeout_ms) return std::move(timeout_ms).error();
  request.timeout_ms = *timeout_ms;
  auto cwd = args->string_or("cwd", ".");
  if (!cwd) return std::move(cwd).error();
  request.cwd = std::move(*cwd);
  return run_shell(worktree, request, tool);
}

// build's, test's and validate's argument: the command the daemon read from
// loopr.toml. Only the daemon adds it; the model's schema has no properties.
Result<Json> run_configured_command(const Worktree& worktree, const Json& raw, const char* tool) {
  auto args = Arguments::parse(raw, tool, {"command"});
  if (!args) return std::move(args).error();
  const std::string hint = std::string("set [commands] ") + tool + " in loopr.toml (e.g. " + tool +
                           " = \"make -j2\"), or use run_command with the command";
  if (!args->has("command")) {
    return make_error(errc::invalid_arguments,
                      std::string(tool) + ": no " + tool + " command is configured", hint);
  }
  auto command = args->required_string("command");
  if (!command) return std::move(command).error();
  if (command->empty()) {
    return make_error(errc::invalid_arguments,
                      std::string(tool) + ": the configured " + tool + " command is empty", hint);
  }
  ShellRequest request;
  request.command = std::move(*command);
  request.timeout_ms = kConfiguredCommandTimeoutMs;
  return run_shell(worktree, request, tool);
}

// hook's arguments, from the daemon only (a [[hooks]] entry of the user's;
// no catalog tool has it, so no model or client can call it): the user's
// command, with the event's JSON on its stdin and the event's name in
// LOOPR_HOOK_EVENT, at the worktree's top.
Result<Json> run_hook_command(const Worktree& worktree, const Json& raw) {
  auto args = Arguments::parse(raw, "hook", {"command", "input", "event", "timeout_ms"});
  if (!args) return std::move(args).error();
  ShellRequest request;
  auto command = args->required_string("command");
  if (!command) return std::move(command).error();
  request.command = std::move(*command);
  auto input = args->string_or("input", "");
  if (!input) return std::move(input).error();
  request.input = std::move(*input);
  auto event = args->string_or("event", "");
  if (!event) return std::move(event).error();
  ::setenv("LOOPR_HOOK_EVENT", event->c_str(), 1);
  auto timeout_ms = args->integer_or("timeout_ms", kDefaultTimeoutMs, 1, kMaxTimeoutMs);
  if (!timeout_ms) return std::move(timeout_ms).error();
  request.timeout_ms = *timeout_ms;
  return run_shell(worktree, request, "hook");
}

}  // namespace

Result<Json> hook(const Worktree& worktree, const Json& args) {
  return run_hook_command(worktree, args);
}

Result<Json> run_command(const Worktree& worktree, const Json& args) {
  return run_model_command(worktree, args, "run_command");
}

Result<Json> run_command_isolated(const Worktree& worktree, const Json& args) {
  return run_model_command(worktree, args, "run_command_isolated");
}

Result<Json> build(const Worktree& worktree, const Json& args) {
  return run_configured_command(worktree, args, "build");
}

Result<Json> test(const Worktree& worktree, const Json& args) {
  return run_configured_command(worktree, args, "test");
}

Result<Json> validate(const Worktree& worktree, const Json& args) {
  return run_configured_command(worktree, args, "validate");
}

}  // namespace loopr::tool
