// The lane's filesystem, built once per lane inside a new mount namespace
// (Linux >= 5.12 for mount_setattr):
//   /            the host, bound read-only and nosuid, recursively
//   hidden paths each covered by an empty read-only tmpfs (the user's home,
//                /run, the daemon's runtime and state folders...): their
//                contents, sockets included, are not even reachable by path
//   /tmp         a private tmpfs capped at tmp_size_mb
//   /dev         a minimal tmpfs: null, zero, full, random, urandom, shm
//   writable roots bound read-write at their own paths (recreated inside a
//                hidden path when they live under one)
// Each job then gets its own mount namespace on top (job_filesystem()).
//
// Contract: called after enter_user_namespace() and unshare(CLONE_NEWNS), in a
// single-threaded process; paths in the spec are absolute.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "common/error.hpp"

namespace loopr::runner {

struct LaneFilesystemSpec {
  std::vector<std::string> writable_roots;
  std::vector<std::string> hidden_paths;  // missing paths are skipped
  std::uint64_t tmp_size_mb = 256;
};

Result<void> build_lane_filesystem(const LaneFilesystemSpec& spec);

// Per job, in the job's own mount and PID namespaces: a fresh read-only /proc
// that shows only the job's processes; the worktree on a mount of its own,
// with every other writable root (canonical paths) made read-only; and the
// worktree's .git (if any) bound read-only so nothing a job writes there is
// run by the daemon's git later.
Result<void> build_job_filesystem(const std::string& worktree,
                                  const std::vector<std::string>& writable_roots);

}  // namespace loopr::runner
