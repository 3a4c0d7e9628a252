// LaneSandbox: the lane's sandbox, built once by contain(), in this order:
//   0. the lane's pids cgroup and the jobs' memory cgroups,  lane_cgroup.hpp
//      where the machine allows them
//   1. user namespace (uid/gid mapped to themselves; as   user_namespace.hpp
//      root, to nobody, with the worktree roots idmapped)
//   2. mount, IPC and UTS namespaces
//   3. no network lanes: an empty network namespace       network_namespace.hpp
//   4. the lane's filesystem                               lane_filesystem.hpp
//   5. the seccomp program, compiled once                  seccomp_filter.hpp
// and then, per job, start_job() clones a process into new PID and mount
// namespaces. That process is the job's PID 1: it mounts the job's /proc and
// read-only .git, then
//   6. moves to its cwd, gets fds 0-2 only and the allowlisted environment
//   7. rlimits                                             resource_limits.hpp
//   8. no_new_privs + Landlock                             landlock.hpp
//   9. drops every capability                              capabilities.hpp
//  10. installs seccomp, last, and execs loopr-tool
// so loopr-tool itself is the job's PID 1 (one process per job, not two: on
// the reference VM a second process costs more than all the other steps
// together). When it exits, the kernel kills everything left in the
// namespace, so no process outlives its job (setsid, double fork and SIGSTOP
// included). While it runs a command, loopr-tool acts as the job's init
// (LOOPR_JOB_INIT=1): it reaps orphans and its TERM and KILL reach every
// process of the job (kill(-1)). A TERM from the runner reaches a tool that
// set no handler not at all (the kernel shields a namespace's init), so the
// runner's KILL after the grace ends it.
//
// Fail closed: a step that fails stops the lane (contain) or the job
// (start_job: the failure arrives on setup_errors and the job never ran).
// The test hook inject_failure makes one named step fail as if the kernel
// had refused it, so tests can prove each step fails closed; it can only
// stop jobs from running, never weaken the sandbox.
//
// Threads: contain() and start_job() must run in a single-threaded process.
#pragma once

#include <sys/types.h>

#include <array>
#include <cstdint>
#include <map>
#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <utility>

#include "common/error.hpp"
#include "common/unique_fd.hpp"
#include "runner/lane_cgroup.hpp"
#include "runner/lane_filesystem.hpp"
#include "runner/resource_limits.hpp"
#include "runner/seccomp_filter.hpp"

namespace loopr::runner {

// Steps the test hook can make fail. Lane steps stop the runner (exit 3);
// job steps make each job end with status error, naming the step.
inline constexpr std::array<std::string_view, 6> kInjectableLaneSteps = {
    "user-namespace",  "namespaces",      "network-namespace",
    "lane-filesystem", "seccomp-compile", "landlock-check"};
inline constexpr std::array<std::string_view, 5> kInjectableJobSteps = {
    "job-filesystem", "resource-limits", "landlock", "capabilities", "seccomp"};

struct LaneSandboxSpec {
  std::string lane;
  bool network = false;
  LaneFilesystemSpec filesystem;
  JobLimits limits;
  // pids.max of the lane's cgroup (step 0); 0: do not try.
  std::uint64_t lane_pids_max = 0;
  // Each job's memory limit, MiB, in a cgroup of its own (step 0,
  // JobMemoryCgroups); 0: none. `job_slots` such cgroups are made.
  std::uint64_t job_memory_mb = 0;
  int job_slots = 1;
  // Explicit opt-out for machines that cannot sandbox at all: jobs then run
  // as plain child processes in their own process group. Logged loudly.
  bool sandbox_off = false;
  // Test hook: the step of this name (kInjectable*Steps) fails. Empty: none.
  std::string inject_failure;
  // A lane with network: the socket to looprd over which the lane's egress
  // listener is passed (egress_listener.hpp), and the listener's port inside
  // the lane. Required for a network lane unless the sandbox is off.
  int egress_link = -1;
  std::uint16_t egress_port = 3128;
};

struct JobLaunch {
  std::string tool;
  bool in_fetch_binary = false;  // loopr-fetch runs it, not loopr-tool (JobTraits::program)
  std::string args_json;         // the tool's stdin
  std::string worktree;          // absolute, beneath a writable root
  std::string cwd;               // absolute, inside the worktree
  std::map<std::string, std::string> env;  // filtered by job_environment()
  std::int64_t max_output_bytes = 100'000;
  bool stream_output = false;  // the lane streams output (LOOPR_STREAM_OUTPUT)
  std::string egress_token;    // put in the job's proxy URL (egress_proxy_url)
  // cgroup.procs of the job's memory cgroup (JobMemoryCgroups::procs_fd),
  // which the job's PID 1 joins first; -1: none.
  int memory_cgroup_procs = -1;
};

// A warm worker for one worktree (warm_workers.hpp): started like a job (the
// same PID and mount namespaces, filesystem, rlimits, Landlock, capabilities
// and lane seccomp filter), but it execs `loopr-tool --serve`, which stacks a
// filter against new processes (SeccompProgram::compile_no_new_processes)
// before it reads a call, and then serves calls on `channel` until it closes.
struct RunningWorker {
  pid_t pid = -1;         // the worker's PID 1 (itself), a child of the runner
  UniqueFd pidfd;         // readable once it has exited
  UniqueFd channel;       // calls out, replies in (proto/worker_messages.hpp)
  UniqueFd setup_errors;  // EOF at exec; a message if a sandbox step failed
};

// A started job. The runner owns every fd here.
struct RunningJob {
  pid_t pid = -1;        // the job's PID 1, a child of the runner
  UniqueFd pidfd;        // readable once that process has exited
  UniqueFd stdout_pipe;  // read ends
  UniqueFd stderr_pipe;
  UniqueFd setup_errors;  // EOF at exec; a message if a sandbox step failed
};

// The fds a job's main process starts from, the runner's: its streams, the
// setup-error pipe's write end, the binary to exec, and for a warm worker
// the filter it installs (-1 otherwise).
struct StartFds {
  int stdin_fd;
  int stdout_fd;
  int stderr_fd;
  int setup_fd;
  int tool_binary;
  int filter = -1;
};

class LaneSandbox {
 public:
  // Opens the loopr-tool and loopr-fetch binaries first (O_PATH), so they
  // can be exec'd even if their folder is hidden from jobs, then builds the
  // lane sandbox. loopr-tool must open; a missing loopr-fetch only makes
  // web_fetch jobs fail with an error that says where it was sought.
  static Result<LaneSandbox> contain(const LaneSandboxSpec& spec, const std::string& tool_binary,
                                     const std::string& fetch_binary = {});

  Result<RunningJob> start_job(const JobLaunch& job) const;

  // Refused with the sandbox off (workers exist to be confined). The worker's
  // stderr is /dev/null (nothing it writes passes for the runner's words).
  Result<RunningWorker> start_worker(const std::string& worktree) const;

  const LaneSandboxSpec& spec() const { return spec_; }
  int landlock_abi() const { return landlock_abi_; }
  const LaneCgroupReport& cgroup() const { return cgroup_; }
  // The jobs' memory cgroups; the LaneRunner hands them out to jobs.
  JobMemoryCgroups* memory_cgroups() const { return memory_.get(); }

 private:
  LaneSandbox() = default;
  // Clones the job's PID 1 into the sandbox and execs the tool (or, for a
  // warm worker, `loopr-tool --serve`) from `fds`; the pid and its pidfd.
  Result<std::pair<pid_t, UniqueFd>> clone_job(const JobLaunch& job, const StartFds& fds,
                                               bool warm_worker) const;

  LaneSandboxSpec spec_;
  UniqueFd tool_binary_;
  UniqueFd fetch_binary_;  // empty when loopr-fetch was not found
  std::string fetch_binary_path_;
  std::optional<SeccompProgram> seccomp_;
  UniqueFd worker_filter_;  // compile_no_new_processes(), sealed
  int landlock_abi_ = 0;
  LaneCgroupReport cgroup_;
  std::shared_ptr<JobMemoryCgroups> memory_ = std::make_shared<JobMemoryCgroups>();
};

}  // namespace loopr::runner
