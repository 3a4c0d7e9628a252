// Step 1 of contain(): a new user namespace in which the runner holds the
// capabilities to build the rest of the sandbox; jobs later drop every
// capability (capabilities.hpp).
//
// As an ordinary user, the caller's uid and gid are mapped to themselves, so
// files in the worktree keep their owner.
//
// As root (uid 0), jobs must not be the host's uid 0: the namespace maps its
// uid and gid 0 to the host's overflow ids (65534, nobody/nogroup) and
// nothing else, and the runner becomes them (its supplementary groups
// dropped first). Host files owned by root are then out of reach as to any
// other user (/etc/shadow: EACCES). So that jobs can still write their
// worktrees, which looprd (root) made, each writable root is cloned before
// leaving the host's user namespace into a detached idmapped mount
// (mount_setattr MOUNT_ATTR_IDMAP, Linux >= 5.12, on a filesystem that
// supports it: ext4, xfs, btrfs, tmpfs >= 6.3) with the same mapping: there
// the on-disk owner 0 is the namespace's 0, and what a job creates is owned
// by root on disk, as looprd's git expects. Files on disk owned by another
// uid appear as nobody's. The lane's /tmp and /dev/shm are tmpfs mounted
// inside the namespace and need no mapping.
//
// Contract: the process must be single-threaded (unshare(CLONE_NEWUSER) and
// setns fail with EINVAL otherwise). Works as root and, on kernels that allow
// unprivileged user namespaces, as an ordinary user. Each step that fails
// names itself (fail closed).
#pragma once

#include <map>
#include <string>
#include <vector>

#include "common/error.hpp"
#include "common/unique_fd.hpp"

namespace loopr::runner {

// The host uid and gid jobs run as when the runner was started as root.
inline constexpr unsigned kJobHostIdAsRoot = 65534;

// `writable_roots`: canonical. Returns the idmapped mounts of the roots, by
// path, for build_lane_filesystem to attach (empty unless started as root).
Result<std::map<std::string, UniqueFd>> enter_user_namespace(
    const std::vector<std::string>& writable_roots);

}  // namespace loopr::runner
