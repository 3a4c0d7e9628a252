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

namespace loopr::runner {

struct LaneCgroupReport {
  bool limited = false;
  std::string description;  // where the limit lives, or why there is none
};

LaneCgroupReport join_lane_cgroup(const std::string& lane, std::uint64_t pids_max);

}  // namespace loopr::runner
