// LaneSandbox: the lane's sandbox, built once by contain(), in this order:
//   1. user namespace (uid/gid mapped to themselves)      user_namespace.hpp
//   2. mount, IPC and UTS namespaces
//   3. no network lanes: an empty network namespace       network_namespace.hpp
//   4. the lane's filesystem                               lane_filesystem.hpp
//   5. the seccomp program, compiled once                  seccomp_filter.hpp
// and then, per job, start_job() clones a process into new PID and mount
// namespaces. That process is the job's PID 1: it mounts the job's /proc and
// read-only .git, then forks the job's main process, which in order
//   6. moves to its cwd, gets fds 0-2 only and the allowlisted environment
//   7. rlimits                                             resource_limits.hpp
//   8. no_new_privs + Landlock                             landlock.hpp
//   9. drops every capability                              capabilities.hpp
//  10. installs seccomp, last, and execs loopr-tool
// PID 1 forwards SIGTERM to every process of the job and exits when the main
// process does; the kernel then kills whatever is left in the namespace, so
// no process outlives its job (setsid, double fork and SIGSTOP included).
//
// Fail closed: a step that fails stops the lane (contain) or the job
// (start_job: the failure arrives on setup_errors and the job never ran).
//
// Threads: contain() and start_job() must run in a single-threaded process.
#pragma once

#include <sys/types.h>

#include <cstdint>
#include <map>
#include <optional>
#include <string>

#include "common/error.hpp"
#include "common/unique_fd.hpp"
#include "runner/lane_filesystem.hpp"
#include "runner/resource_limits.hpp"
#include "runner/seccomp_filter.hpp"

namespace loopr::runner {

struct LaneSandboxSpec {
  std::string lane;
  bool network = false;
  LaneFilesystemSpec filesystem;
  JobLimits limits;
  // Explicit opt-out for machines that cannot sandbox at all: jobs then run
  // as plain child processes in their own process group. Logged loudly.
  bool sandbox_off = false;
};

struct JobLaunch {
  std::string tool;
  std::string args_json;                   // the tool's stdin
  std::string worktree;                    // absolute, beneath a writable root
  std::string cwd;                         // absolute, inside the worktree
  std::map<std::string, std::string> env;  // filtered by job_environment()
  std::int64_t max_output_bytes = 100'000;
};

// A started job. The runner owns every fd here.
struct RunningJob {
  pid_t pid = -1;        // the job's PID 1, a child of the runner
  UniqueFd pidfd;        // readable once that process has exited
  UniqueFd stdout_pipe;  // read ends
  UniqueFd stderr_pipe;
  UniqueFd setup_errors;  // EOF at exec; a message if a sandbox step failed
};

class LaneSandbox {
 public:
  // Opens the loopr-tool binary first (O_PATH), so it can be exec'd even if
  // its folder is hidden from jobs, then builds the lane sandbox.
  static Result<LaneSandbox> contain(const LaneSandboxSpec& spec, const std::string& tool_binary);

  Result<RunningJob> start_job(const JobLaunch& job) const;

  const LaneSandboxSpec& spec() const { return spec_; }
  int landlock_abi() const { return landlock_abi_; }

 private:
  LaneSandbox() = default;

  LaneSandboxSpec spec_;
  UniqueFd tool_binary_;
  std::optional<SeccompProgram> seccomp_;
  int landlock_abi_ = 0;
};

}  // namespace loopr::runner
