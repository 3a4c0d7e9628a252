#include "runner/contain.hpp"

#include <fcntl.h>
#include <linux/close_range.h>
#include <linux/sched.h>
#include <sched.h>
#include <signal.h>
#include <sys/mman.h>
#include <sys/prctl.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <unistd.h>

#include <climits>
#include <cstdlib>
#include <cstring>
#include <vector>

#include "runner/capabilities.hpp"
#include "runner/job_environment.hpp"
#include "runner/landlock.hpp"
#include "runner/network_namespace.hpp"
#include "runner/sandbox_step.hpp"
#include "runner/user_namespace.hpp"

namespace loopr::runner {
namespace {

constexpr int kSetupFailedStatus = 126;
constexpr int kSetupErrorFd = 3;  // in the job's main process, until exec
constexpr int kToolBinaryFd = 4;  // likewise

struct Pipe {
  UniqueFd read;
  UniqueFd write;
};

Result<Pipe> make_pipe() {
  int fds[2];
  if (::pipe2(fds, O_CLOEXEC) != 0) return errno_error(errno, "cannot create a pipe", "");
  return Pipe{UniqueFd(fds[0]), UniqueFd(fds[1])};
}

// Reports a failed step to the runner and ends the process. Only called in
// a job's processes.
[[noreturn]] void fail_job(int fd, const Error& error) {
  const std::string& text = error.message;
  [[maybe_unused]] ssize_t ignored = ::write(fd, text.data(), text.size());
  ::_exit(kSetupFailedStatus);
}

// The job's main process, which leads its own session and process group.
// Set once in the job's init process before any handler can run.
volatile pid_t g_job_main = 0;
volatile sig_atomic_t g_own_pid_namespace = 1;

void forward_to_job(int signo) {
  // As PID 1 of the job's namespace, kill(-1) reaches every other process in
  // it. Without a sandbox there is no namespace, and kill(-1) would reach
  // every process of the user: only the job's process group is signalled.
  if (g_own_pid_namespace) {
    ::kill(-1, signo);
  } else {
    ::kill(-g_job_main, signo);
  }
}

// PID 1 of the job: forwards TERM/INT/HUP, reaps everything, and exits with
// the main process's status (128 + signal if it was killed).
[[noreturn]] void run_job_init(pid_t main_pid, bool own_pid_namespace) {
  g_job_main = main_pid;
  g_own_pid_namespace = own_pid_namespace ? 1 : 0;
  struct sigaction action {};
  action.sa_handler = forward_to_job;
  ::sigemptyset(&action.sa_mask);
  for (int signo : {SIGTERM, SIGINT, SIGHUP})
    ::sigaction(signo, &action, nullptr);
  for (;;) {
    int status = 0;
    const pid_t pid = ::wait(&status);
    if (pid < 0 && errno == EINTR) continue;
    if (pid < 0) ::_exit(kSetupFailedStatus);
    if (pid != main_pid) continue;
    // With a PID namespace the kernel kills the rest when PID 1 exits;
    // without one, the job's process group is the best there is.
    if (!own_pid_namespace) ::kill(-main_pid, SIGKILL);
    ::_exit(WIFEXITED(status) ? WEXITSTATUS(status) : 128 + WTERMSIG(status));
  }
}

[[noreturn]] void exec_job_main(const LaneSandbox& lane, int tool_binary, const JobLaunch& job,
                                int stdin_fd, int stdout_fd, int stderr_fd, int setup_fd,
                                const SeccompProgram* seccomp) {
  ::setsid();
  // Move every fd the job needs above the ones being assigned, then into
  // place: 0-2 the job's streams, 3 the setup-error pipe, 4 the tool binary.
  // A plain dup2 could overwrite one of them that happens to sit at 0-4.
  const int wanted[] = {stdin_fd, stdout_fd, stderr_fd, setup_fd, tool_binary};
  int high[5];
  for (int i = 0; i < 5; ++i) {
    high[i] = ::fcntl(wanted[i], F_DUPFD_CLOEXEC, 64);
    if (high[i] < 0) fail_job(setup_fd, step_failed("file descriptors", "F_DUPFD", errno));
  }
  for (int i = 0; i < 4; ++i) {
    if (::dup2(high[i], i) < 0) fail_job(setup_fd, step_failed("file descriptors", "dup2", errno));
  }
  if (::dup3(high[4], kToolBinaryFd, O_CLOEXEC) < 0) {
    fail_job(kSetupErrorFd, step_failed("file descriptors", "dup3", errno));
  }
  // fd 3 and 4 close at exec; nothing above them survives at all.
  ::fcntl(kSetupErrorFd, F_SETFD, FD_CLOEXEC);
  ::syscall(SYS_close_range, kToolBinaryFd + 1, ~0u, 0);
  if (::chdir(job.cwd.c_str()) != 0) {
    fail_job(kSetupErrorFd, step_failed("working directory", "chdir " + job.cwd, errno));
  }
  const LaneSandboxSpec& spec = lane.spec();
  if (!spec.sandbox_off) {
    if (auto r = apply_resource_limits(spec.limits); !r) fail_job(kSetupErrorFd, r.error());
    LandlockPolicy policy;
    policy.writable_dirs = {job.worktree, "/tmp", "/dev/shm"};
    policy.deny_tcp = !spec.network;
    policy.require_scoping = spec.network;
    if (auto r = restrict_with_landlock(policy); !r) fail_job(kSetupErrorFd, r.error());
    if (auto r = drop_all_capabilities(); !r) fail_job(kSetupErrorFd, r.error());
    if (auto r = seccomp->install(); !r) fail_job(kSetupErrorFd, r.error());
  }
  const std::vector<std::string> env = job_environment(job.env, spec.lane, job.max_output_bytes);
  std::vector<char*> envp;
  for (const std::string& entry : env)
    envp.push_back(const_cast<char*>(entry.c_str()));
  envp.push_back(nullptr);
  std::string argv0 = "loopr-tool";
  std::string tool = job.tool;
  std::string flag = "--worktree";
  std::string worktree = job.worktree;
  char* argv[] = {argv0.data(), tool.data(), flag.data(), worktree.data(), nullptr};
  ::syscall(SYS_execveat, kToolBinaryFd, "", argv, envp.data(), AT_EMPTY_PATH);
  fail_job(kSetupErrorFd, step_failed("exec", "execveat loopr-tool", errno));
}

}  // namespace

Result<LaneSandbox> LaneSandbox::contain(const LaneSandboxSpec& spec,
                                         const std::string& tool_binary) {
  LaneSandbox lane;
  lane.spec_ = spec;
  // Canonical before the pivot, as the jobs' mount steps compare against them.
  for (std::string& root : lane.spec_.filesystem.writable_roots) {
    char resolved[PATH_MAX];
    if (::realpath(root.c_str(), resolved) == nullptr) {
      return step_failed("mount namespace", "writable root '" + root + "' does not exist", errno);
    }
    root = resolved;
  }
  lane.tool_binary_.reset(::open(tool_binary.c_str(), O_PATH | O_CLOEXEC));
  if (!lane.tool_binary_) {
    return step_failed("tool binary", "open " + tool_binary, errno);
  }
  if (spec.sandbox_off) return lane;

  if (auto r = enter_user_namespace(); !r) return std::move(r).error();
  if (::unshare(CLONE_NEWNS | CLONE_NEWIPC | CLONE_NEWUTS) != 0) {
    return step_failed("namespaces", "unshare(CLONE_NEWNS | CLONE_NEWIPC | CLONE_NEWUTS)", errno);
  }
  const std::string hostname = "loopr-" + spec.lane;
  ::sethostname(hostname.c_str(), hostname.size());
  if (!spec.network) {
    if (auto r = enter_empty_network_namespace(); !r) return std::move(r).error();
  }
  if (auto r = build_lane_filesystem(lane.spec_.filesystem); !r) return std::move(r).error();
  auto seccomp = SeccompProgram::compile(/*deny_network=*/!spec.network);
  if (!seccomp) return std::move(seccomp).error();
  lane.seccomp_ = std::move(*seccomp);
  lane.landlock_abi_ = runner::landlock_abi();
  if (lane.landlock_abi_ < 1) {
    return step_failed("landlock", "Landlock is not available on this kernel");
  }
  return lane;
}

Result<RunningJob> LaneSandbox::start_job(const JobLaunch& job) const {
  UniqueFd stdin_fd(::memfd_create("loopr-job-args", MFD_CLOEXEC));
  if (!stdin_fd) return errno_error(errno, "cannot create the job's stdin", "");
  if (::write(stdin_fd.get(), job.args_json.data(), job.args_json.size()) !=
      static_cast<ssize_t>(job.args_json.size())) {
    return errno_error(errno, "cannot write the job's arguments", "");
  }
  ::lseek(stdin_fd.get(), 0, SEEK_SET);
  auto out = make_pipe();
  auto err = make_pipe();
  auto setup = make_pipe();
  if (!out) return std::move(out).error();
  if (!err) return std::move(err).error();
  if (!setup) return std::move(setup).error();

  int pidfd = -1;
  clone_args args{};
  args.flags = CLONE_PIDFD;
  if (!spec_.sandbox_off) args.flags |= CLONE_NEWPID | CLONE_NEWNS;
  args.pidfd = reinterpret_cast<std::uint64_t>(&pidfd);
  args.exit_signal = SIGCHLD;
  const long pid = ::syscall(SYS_clone3, &args, sizeof args);
  if (pid < 0) return errno_error(errno, "cannot start the job (clone3)", "");
  if (pid == 0) {
    // The job's PID 1 (or, with the sandbox off, its process-group leader).
    ::prctl(PR_SET_PDEATHSIG, SIGKILL);
    const int setup_fd = setup->write.get();
    if (!spec_.sandbox_off) {
      if (auto r = build_job_filesystem(job.worktree, spec_.filesystem.writable_roots); !r) {
        fail_job(setup_fd, r.error());
      }
      ::prctl(PR_SET_DUMPABLE, 0);
    } else {
      ::setpgid(0, 0);
    }
    const pid_t main_pid = ::fork();
    if (main_pid < 0) fail_job(setup_fd, step_failed("fork", "fork the job's process", errno));
    if (main_pid == 0) {
      exec_job_main(*this, tool_binary_.get(), job, stdin_fd.get(), out->write.get(),
                    err->write.get(), setup_fd, seccomp_ ? &*seccomp_ : nullptr);
    }
    ::syscall(SYS_close_range, 3u, ~0u, 0);
    run_job_init(main_pid, !spec_.sandbox_off);
  }
  RunningJob running;
  running.pid = static_cast<pid_t>(pid);
  running.pidfd.reset(pidfd);
  running.stdout_pipe = std::move(out->read);
  running.stderr_pipe = std::move(err->read);
  running.setup_errors = std::move(setup->read);
  return running;
}

}  // namespace loopr::runner
