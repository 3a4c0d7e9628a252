// Landlock (Linux >= 5.13; features by ABI version): narrows what a job may
// change to its own worktree, /tmp and the few /dev nodes it needs. Reads
// stay as the lane's mount namespace allows. With ABI >= 4 a lane without
// network also refuses TCP bind/connect; with ABI >= 6 abstract Unix sockets
// and signals outside the job's domain are refused (the net lane shares the
// host's network namespace, so this is what keeps the host's abstract
// sockets out of reach there).
//
// glibc has no wrappers: the calls go through syscall() with structs defined
// here, since Debian 12's <linux/landlock.h> stops at ABI 2.
//
// Contract: called in the job's process, after no_new_privs is set (or with
// CAP_SYS_ADMIN), before seccomp and exec.
#pragma once

#include <string>
#include <vector>

#include "common/error.hpp"

namespace loopr::runner {

// The highest Landlock ABI the kernel offers, or 0 if Landlock is unavailable.
int landlock_abi();

struct LandlockPolicy {
  std::vector<std::string> writable_dirs;  // the job's worktree and /tmp
  bool deny_tcp = false;                   // no-net lanes
  bool require_scoping = false;            // net lanes: fail closed below ABI 6
};

Result<void> restrict_with_landlock(const LandlockPolicy& policy);

}  // namespace loopr::runner
