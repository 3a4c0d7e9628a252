// Step 0 of contain(): the lane's process-count limit through a cgroup, when
// the machine lets the runner have one. RLIMIT_NPROC (resource_limits.hpp)
// does not bound jobs of uid 0 at all (the kernel exempts root's user), so a
// runner started as root without a pids cgroup would leave a fork bomb to
// the job's timeout; this step closes that where it can.
//
// The runner moves itself into a new cgroup "loopr-<lane>-<pid>" with
// pids.max set, so every job of the lane is counted together and a fork
// bomb starves at most its own lane, never the daemon or other lanes. Tried
// in order: a child of the runner's own cgroup v2 (delegated, e.g. systemd
// user services), a child of the cgroup v2 root (root), a child of the
// runner's cgroup v1 pids hierarchy (root on v1/hybrid machines). Empty
// cgroups that earlier runners of the lane left behind are removed.
//
// Optional by design (DESIGN.md §11: no delegated controllers here for
// ordinary users): when no cgroup can be had, the step reports why and the
// lane runs with the rlimits alone. It never fails the lane.
//
// Contract: called first in contain(), before the user namespace (cgroupfs
// permissions are checked against the real credentials), single-threaded.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "common/unique_fd.hpp"

namespace loopr::runner {

struct LaneCgroupReport {
  bool limited = false;
  std::string description;  // where the limit lives, or why there is none
};

LaneCgroupReport join_lane_cgroup(const std::string& lane, std::uint64_t pids_max);

// The jobs' memory limit ([lanes.X] memory_mb): one memory cgroup per job
// slot, "loopr-<lane>-<pid>-job<i>" beside the lane's cgroup, made here while
// the runner still has its real credentials, with memory.max (v2; the swap
// limit 0 where it exists) or memory.limit_in_bytes (v1, root; memsw too).
// A job joins a free one from inside (write "0" to `procs`, opened here:
// cgroupfs judges a write by the opener's credentials, and after step 1 the
// runner's own would no longer do), before it runs anything; the pool is the
// runner's, one job per cgroup at a time. `oom_kills` reads the counter the
// kernel bumps when it kills a process of the cgroup for memory.
//
// Tried in order: a child of the runner's cgroup v2 (the memory controller
// enabled for its children, or enabled here once the runner has left it for
// the lane's pids cgroup), the v2 root (root), the runner's cgroup of a v1
// memory hierarchy (root). Optional like the pids cgroup: when none can be
// had, `description` says why and jobs run without a memory limit.
class JobMemoryCgroups {
 public:
  struct Slot {
    UniqueFd procs;   // cgroup.procs, O_WRONLY
    UniqueFd events;  // memory.events (v2) or memory.oom_control (v1), O_RDONLY
    std::string path;
    bool busy = false;
  };

  // `pids_per_job`: on cgroup v2 a job's cgroup lies beside the lane's pids
  // cgroup, not in it, so it gets a pids.max of its own; with
  // `lane_pids_on_v2` (the lane's pids limit is a v2 one) a v2 job cgroup
  // without one is refused, as the job would escape the lane's limit.
  static JobMemoryCgroups make(const std::string& lane, std::uint64_t memory_mb, int slots,
                               std::uint64_t pids_per_job, bool lane_pids_on_v2);

  bool limited() const { return !slots_.empty(); }
  std::uint64_t memory_mb() const { return memory_mb_; }
  const std::string& description() const { return description_; }
  // A free slot (marked busy), or -1 when every one is in use.
  int acquire();
  void release(int slot);
  // The cgroup.procs fd of `slot` for the job to write "0" to; -1 for slot -1.
  int procs_fd(int slot) const;
  // The one cgroup all the lane's warm workers join (memory_mb for them
  // all); -1 without a memory limit.
  int workers_procs_fd() const { return workers_.procs.get(); }
  // The kernel's count of OOM kills in `slot`'s cgroup since it was made.
  std::uint64_t oom_kills(int slot) const;

 private:
  std::vector<Slot> slots_;
  Slot workers_;
  std::uint64_t memory_mb_ = 0;
  std::string description_;
};

}  // namespace loopr::runner
