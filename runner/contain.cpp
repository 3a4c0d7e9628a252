#include "runner/contain.hpp"

#include <fcntl.h>
#include <linux/close_range.h>
#include <linux/sched.h>
#include <sched.h>
#include <signal.h>
#include <sys/mman.h>
#include <sys/prctl.h>
#include <sys/socket.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <unistd.h>

#include <climits>
#include <cstdlib>
#include <cstring>
#include <vector>

#include "runner/capabilities.hpp"
#include "runner/egress_listener.hpp"
#include "runner/job_environment.hpp"
#include "runner/landlock.hpp"
#include "runner/network_namespace.hpp"
#include "runner/sandbox_step.hpp"
#include "runner/user_namespace.hpp"

namespace loopr::runner {
namespace {

constexpr int kSetupFailedStatus = 126;
constexpr int kSetupErrorFd = 3;    // in the job's main process, until exec
constexpr int kToolBinaryFd = 4;    // likewise
constexpr int kWorkerFilterFd = 5;  // a warm worker's filter, kept across exec

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

// One step of the recipe: `step()`, unless the test hook names `point`, in
// which case the step fails as the kernel would have refused it.
template <class Step>
Result<void> run_step(const LaneSandboxSpec& spec, std::string_view point, std::string_view name,
                      Step&& step) {
  if (spec.inject_failure == point) {
    return step_failed(
        name, "failure injected for testing (--inject-failure " + std::string(point) + ")", EPERM);
  }
  return step();
}

// In a job's process: the step, or the end of the job with its error.
template <class Step>
void must(const LaneSandboxSpec& spec, int setup_fd, std::string_view point, std::string_view name,
          Step&& step) {
  if (auto r = run_step(spec, point, name, std::forward<Step>(step)); !r)
    fail_job(setup_fd, r.error());
}

// With the sandbox off there is no PID namespace: a small init process
// stands in for one. It forwards TERM/INT/HUP to the job's process group,
// and when the job's main process exits it kills that group and exits with
// the main process's status (128 + signal if it was killed). Processes that
// left the group (setsid) are out of its reach: sandbox = "off" promises no
// isolation.
volatile pid_t g_job_main = 0;  // set before any handler can run

void forward_to_job_group(int signo) {
  ::kill(-g_job_main, signo);
}

[[noreturn]] void run_unsandboxed_job_init(pid_t main_pid) {
  g_job_main = main_pid;
  struct sigaction action {};
  action.sa_handler = forward_to_job_group;
  ::sigemptyset(&action.sa_mask);
  for (int signo : {SIGTERM, SIGINT, SIGHUP})
    ::sigaction(signo, &action, nullptr);
  for (;;) {
    int status = 0;
    const pid_t pid = ::waitpid(main_pid, &status, 0);
    if (pid < 0 && errno == EINTR) continue;
    if (pid < 0) ::_exit(kSetupFailedStatus);
    ::kill(-main_pid, SIGKILL);
    ::_exit(WIFEXITED(status) ? WEXITSTATUS(status) : 128 + WTERMSIG(status));
  }
}

// What the job's process needs for its last steps and exec, prepared in the
// runner before the clone, so that process does little more than system
// calls (each page it touches is a copy-on-write fault).
struct ExecImage {
  std::vector<std::string> argv_strings;
  std::vector<std::string> env_strings;
  std::vector<char*> argv;
  std::vector<char*> envp;
  LandlockPolicy landlock;
};

ExecImage prepare_exec(const LaneSandboxSpec& spec, const JobLaunch& job, bool warm_worker) {
  ExecImage image;
  if (warm_worker) {
    image.argv_strings = {"loopr-tool", "--serve",     "--worktree",
                          job.worktree, "--filter-fd", std::to_string(kWorkerFilterFd)};
  } else {
    image.argv_strings = {job.in_fetch_binary ? "loopr-fetch" : "loopr-tool", job.tool,
                          "--worktree", job.worktree};
  }
  LaneFacts facts;
  facts.lane = spec.lane;
  facts.job_init = !spec.sandbox_off;
  if (!spec.sandbox_off) facts.apt_config = kJobAptConfig;
  facts.network = spec.network || spec.sandbox_off;
  facts.stream_output = job.stream_output;
  facts.max_output_bytes = job.max_output_bytes;
  facts.address_space_mb = spec.limits.max_address_space_mb;
  if (spec.network && !spec.sandbox_off) {
    facts.proxy_url = egress_proxy_url(spec.egress_port, job.egress_token);
    facts.proxy_port = spec.egress_port;
  }
  image.env_strings = job_environment(job.env, facts);
  for (std::string& arg : image.argv_strings)
    image.argv.push_back(arg.data());
  image.argv.push_back(nullptr);
  for (std::string& entry : image.env_strings)
    image.envp.push_back(entry.data());
  image.envp.push_back(nullptr);
  image.landlock.writable_dirs = {job.worktree, "/tmp", "/dev/shm"};
  image.landlock.deny_tcp = !spec.network;
  image.landlock.require_scoping = spec.network;
  return image;
}

[[noreturn]] void exec_job_main(const LaneSandbox& lane, const StartFds& start,
                                const JobLaunch& job, const ExecImage& image,
                                const SeccompProgram* seccomp) {
  ::setsid();
  // Move every fd the job needs above the ones being assigned, then into
  // place: 0-2 the job's streams, 3 the setup-error pipe, 4 the tool binary,
  // 5 a worker's filter. A plain dup2 could overwrite one that sits at 0-5.
  const int wanted[] = {start.stdin_fd, start.stdout_fd,   start.stderr_fd,
                        start.setup_fd, start.tool_binary, start.filter};
  const int count = start.filter >= 0 ? 6 : 5;
  int high[6];
  for (int i = 0; i < count; ++i) {
    high[i] = ::fcntl(wanted[i], F_DUPFD_CLOEXEC, 64);
    if (high[i] < 0) fail_job(start.setup_fd, step_failed("file descriptors", "F_DUPFD", errno));
  }
  for (int i = 0; i < 4; ++i) {
    if (::dup2(high[i], i) < 0) {
      fail_job(start.setup_fd, step_failed("file descriptors", "dup2", errno));
    }
  }
  if (::dup3(high[4], kToolBinaryFd, O_CLOEXEC) < 0) {
    fail_job(kSetupErrorFd, step_failed("file descriptors", "dup3", errno));
  }
  if (count == 6 && ::dup2(high[5], kWorkerFilterFd) < 0) {
    fail_job(kSetupErrorFd, step_failed("file descriptors", "dup2 the worker's filter", errno));
  }
  // fd 3 and 4 close at exec; nothing above the last one survives at all.
  ::fcntl(kSetupErrorFd, F_SETFD, FD_CLOEXEC);
  ::syscall(SYS_close_range, static_cast<unsigned>(count), ~0u, 0);
  if (::chdir(job.cwd.c_str()) != 0) {
    fail_job(kSetupErrorFd, step_failed("working directory", "chdir " + job.cwd, errno));
  }
  const LaneSandboxSpec& spec = lane.spec();
  if (!spec.sandbox_off) {
    const int fd = kSetupErrorFd;
    must(spec, fd, "resource-limits", "resource limits",
         [&] { return apply_resource_limits(spec.limits); });
    must(spec, fd, "landlock", "landlock", [&] { return restrict_with_landlock(image.landlock); });
    must(spec, fd, "capabilities", "drop capabilities", [] { return drop_all_capabilities(); });
    must(spec, fd, "seccomp", "seccomp", [&] { return seccomp->install(); });
  }
  ::syscall(SYS_execveat, kToolBinaryFd, "", image.argv.data(), image.envp.data(), AT_EMPTY_PATH);
  fail_job(kSetupErrorFd, step_failed("exec", "execveat " + std::string(image.argv[0]), errno));
}

// Step 2: the lane's own mount, IPC and UTS namespaces.
Result<void> enter_lane_namespaces(const LaneSandboxSpec& spec) {
  if (::unshare(CLONE_NEWNS | CLONE_NEWIPC | CLONE_NEWUTS) != 0) {
    return step_failed("namespaces", "unshare(CLONE_NEWNS | CLONE_NEWIPC | CLONE_NEWUTS)", errno);
  }
  const std::string hostname = "loopr-" + spec.lane;
  if (::sethostname(hostname.c_str(), hostname.size()) != 0) {
    // Only a name for `hostname` inside the lane: the new UTS namespace is
    // what keeps the host's name out, and it exists. Go on.
  }
  return {};
}

// Step 5: the jobs' seccomp program, compiled once for the lane.
Result<void> compile_seccomp(const LaneSandboxSpec& spec, std::optional<SeccompProgram>& program) {
  // After step 1, uid 0 here means looprd runs as root (an ordinary user's
  // runner keeps its own uid inside).
  auto compiled = SeccompProgram::compile(/*deny_network=*/!spec.network,
                                          /*deny_set_id_bits=*/::getuid() == 0);
  if (!compiled) return std::move(compiled).error();
  program = std::move(*compiled);
  return {};
}

// Step 5 too: every job restricts itself with Landlock, so it must be there.
Result<void> require_landlock(int& abi) {
  abi = landlock_abi();
  if (abi < 1) return step_failed("landlock", "Landlock is not available on this kernel");
  return {};
}

}  // namespace

Result<LaneSandbox> LaneSandbox::contain(const LaneSandboxSpec& spec,
                                         const std::string& tool_binary,
                                         const std::string& fetch_binary) {
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
  // Optional: without it only web_fetch is refused, saying where it was sought.
  lane.fetch_binary_path_ = fetch_binary;
  if (!fetch_binary.empty())
    lane.fetch_binary_.reset(::open(fetch_binary.c_str(), O_PATH | O_CLOEXEC));
  if (spec.sandbox_off) return lane;

  // 0. the lane's pids cgroup: optional, reported, never fatal
  if (spec.lane_pids_max > 0) {
    lane.cgroup_ = join_lane_cgroup(spec.lane, spec.lane_pids_max);
  } else {
    lane.cgroup_.description = "no pids cgroup for the lane (not asked for)";
  }
  *lane.memory_ = JobMemoryCgroups::make(
      spec.lane, spec.job_memory_mb, spec.job_slots, spec.limits.max_processes,
      lane.cgroup_.limited && lane.cgroup_.description.find("(cgroup v2)") != std::string::npos);
  // 1-5, in order; the first step that fails ends the recipe and names itself.
  std::map<std::string, UniqueFd> root_mounts;  // as root, the idmapped roots
  Result<void> done = run_step(spec, "user-namespace", "user namespace", [&]() -> Result<void> {
    auto mounts = enter_user_namespace(lane.spec_.filesystem.writable_roots);
    if (!mounts) return std::move(mounts).error();
    root_mounts = std::move(*mounts);
    return {};
  });
  if (done) {
    done = run_step(spec, "namespaces", "namespaces", [&] { return enter_lane_namespaces(spec); });
  }
  // Every lane has a network namespace of its own with only lo; a lane with
  // network reaches out only through looprd's egress proxy, whose listener
  // it makes here and hands over.
  if (done && spec.network && spec.egress_link < 0) {
    done = step_failed("egress listener",
                       "lane " + spec.lane +
                           " has network, which goes only through looprd's egress proxy, but the "
                           "runner was given no egress link (--egress-fd)");
  }
  if (done) {
    done = run_step(spec, "network-namespace", "network namespace", enter_empty_network_namespace);
  }
  if (done && spec.network) {
    done = run_step(spec, "egress-listener", "egress listener",
                    [&] { return offer_egress_listener(spec.egress_link, spec.egress_port); });
  }
  if (done) {
    done = run_step(spec, "lane-filesystem", "mount namespace", [&] {
      return build_lane_filesystem(lane.spec_.filesystem, std::move(root_mounts));
    });
  }
  if (done) {
    done = run_step(spec, "seccomp-compile", "seccomp",
                    [&] { return compile_seccomp(spec, lane.seccomp_); });
  }
  if (done) {
    done = run_step(spec, "seccomp-compile", "seccomp", [&]() -> Result<void> {
      auto program = SeccompProgram::compile_no_new_processes();
      if (!program) return std::move(program).error();
      auto sealed = program->sealed_copy();
      if (!sealed) return std::move(sealed).error();
      lane.worker_filter_ = std::move(*sealed);
      return {};
    });
  }
  if (done) {
    done = run_step(spec, "landlock-check", "landlock",
                    [&] { return require_landlock(lane.landlock_abi_); });
  }
  if (!done) return std::move(done).error();
  return lane;
}

Result<RunningJob> LaneSandbox::start_job(const JobLaunch& job) const {
  const bool fetch = job.in_fetch_binary;
  if (fetch && !fetch_binary_) {
    return make_error(errc::sandbox_setup,
                      job.tool + " needs loopr-fetch, which was not found at '" +
                          fetch_binary_path_ +
                          "': build it (scripts/build.sh) or install it next to loopr-tool, "
                          "then restart looprd");
  }
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

  const StartFds fds{stdin_fd.get(), out->write.get(), err->write.get(), setup->write.get(),
                     fetch ? fetch_binary_.get() : tool_binary_.get()};
  auto started = clone_job(job, fds, /*warm_worker=*/false);
  if (!started) return std::move(started).error();
  RunningJob running;
  running.pid = started->first;
  running.pidfd = std::move(started->second);
  running.stdout_pipe = std::move(out->read);
  running.stderr_pipe = std::move(err->read);
  running.setup_errors = std::move(setup->read);
  return running;
}

Result<RunningWorker> LaneSandbox::start_worker(const std::string& worktree) const {
  if (spec_.sandbox_off || !worker_filter_) {
    return make_error(errc::sandbox_setup, "warm workers run only inside the lane sandbox (lane " +
                                               spec_.lane + " runs with sandbox = \"off\")");
  }
  int pair[2];
  if (::socketpair(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0, pair) != 0) {
    return errno_error(errno, "cannot create a warm worker's channel", "");
  }
  UniqueFd ours(pair[0]);
  UniqueFd theirs(pair[1]);
  auto setup = make_pipe();
  if (!setup) return std::move(setup).error();
  // Not the runner's stderr: nothing a worker writes may pass for the
  // runner's own words in looprd's log.
  UniqueFd quiet(::open("/dev/null", O_WRONLY | O_CLOEXEC));
  if (!quiet) return errno_error(errno, "cannot open /dev/null for a warm worker", "");
  JobLaunch launch;
  launch.tool = "serve";
  launch.worktree = worktree;
  launch.cwd = worktree;
  launch.memory_cgroup_procs = memory_->workers_procs_fd();
  const StartFds fds{theirs.get(),       theirs.get(),       quiet.get(),
                     setup->write.get(), tool_binary_.get(), worker_filter_.get()};
  auto started = clone_job(launch, fds, /*warm_worker=*/true);
  if (!started) return std::move(started).error();
  RunningWorker worker;
  worker.pid = started->first;
  worker.pidfd = std::move(started->second);
  worker.channel = std::move(ours);
  worker.setup_errors = std::move(setup->read);
  return worker;
}

Result<std::pair<pid_t, UniqueFd>> LaneSandbox::clone_job(const JobLaunch& job, const StartFds& fds,
                                                          bool warm_worker) const {
  const ExecImage image = prepare_exec(spec_, job, warm_worker);
  int pidfd = -1;
  clone_args args{};
  args.flags = CLONE_PIDFD;
  if (!spec_.sandbox_off) args.flags |= CLONE_NEWPID | CLONE_NEWNS;
  args.pidfd = reinterpret_cast<std::uint64_t>(&pidfd);
  args.exit_signal = SIGCHLD;
  const long pid = ::syscall(SYS_clone3, &args, sizeof args);
  if (pid < 0) return errno_error(errno, "cannot start the job (clone3)", "");
  if (pid == 0) {
    ::prctl(PR_SET_PDEATHSIG, SIGKILL);  // kept across exec: the runner's death ends the job
    const SeccompProgram* seccomp = seccomp_ ? &*seccomp_ : nullptr;
    if (spec_.sandbox_off) {
      ::setpgid(0, 0);
      const pid_t main_pid = ::fork();
      if (main_pid < 0)
        fail_job(fds.setup_fd, step_failed("fork", "fork the job's process", errno));
      if (main_pid == 0) exec_job_main(*this, fds, job, image, seccomp);
      ::syscall(SYS_close_range, 3u, ~0u, 0);
      run_unsandboxed_job_init(main_pid);
    }
    // PID 1 of the job's own PID namespace, and loopr-tool after exec: when
    // it exits, the kernel kills whatever else of the job is left. It joins
    // its memory cgroup first, so everything it does is counted there.
    if (job.memory_cgroup_procs >= 0) {
      must(spec_, fds.setup_fd, "memory-cgroup", "memory cgroup", [&]() -> Result<void> {
        if (::write(job.memory_cgroup_procs, "0", 1) != 1) {
          return step_failed("memory cgroup", "join the job's memory cgroup", errno);
        }
        return {};
      });
    }
    must(spec_, fds.setup_fd, "job-filesystem", "mount namespace",
         [&] { return build_job_filesystem(job.worktree, spec_.filesystem); });
    exec_job_main(*this, fds, job, image, seccomp);
  }
  return std::pair<pid_t, UniqueFd>(static_cast<pid_t>(pid), UniqueFd(pidfd));
}

}  // namespace loopr::runner
