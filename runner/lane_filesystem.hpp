// The lane's filesystem, built once per lane inside a new mount namespace
// (Linux >= 5.12 for mount_setattr):
//   /            the host, bound read-only and nosuid, recursively
//   hidden paths each covered by an empty read-only tmpfs (the user's home,
//                /run, the daemon's runtime and state folders...): their
//                contents, sockets included, are not even reachable by path
//   /tmp         a private tmpfs capped at tmp_size_mb
//   /dev         a minimal tmpfs: null, zero, full, random, urandom, shm
//   writable roots bound read-write at their own paths (recreated inside a
//                hidden path when they live under one); as root, the
//                idmapped mounts of user_namespace.hpp instead of binds.
//                A root inside a folder the runner cannot pass through (a
//                0700 folder; as root the runner is nobody by then) is
//                recreated in an empty read-only tmpfs over that folder.
//                Roots may nest, listed in any order.
//                A hidden path inside a root (looprd's state folder in a
//                root of "~") is covered again on top of the root's mount,
//                even under /tmp; a root exactly at a hidden path wins
//   read paths   bound read-only where a hidden path covers them (hidden
//                paths inside a read path are covered again)
// Every cover is read-only. A job's worktree mount is cloned with the covers
// beneath it, so what is hidden inside a worktree stays hidden from its jobs.
// A step that fails on a configured path names the setting it came from
// (sandbox_step.hpp blame_setting).
// Each job then gets its own mount namespace on top (build_job_filesystem).
//
// Contract: called after enter_user_namespace() and unshare(CLONE_NEWNS), in a
// single-threaded process; paths in the spec are absolute.
#pragma once

#include <cstdint>
#include <map>
#include <string>
#include <vector>

#include "common/error.hpp"
#include "common/unique_fd.hpp"

namespace loopr::runner {

struct LaneFilesystemSpec {
  std::vector<std::string> writable_roots;  // canonical (contain() resolves them)
  std::vector<std::string> read_paths;      // readable by jobs, read-only; missing ones skipped
  std::vector<std::string> hidden_paths;    // missing paths are skipped
  // Where a hidden path comes from, by the path as given, for error
  // messages: "sandbox.hidden_paths in loopr.toml", "looprd's state
  // folder"... A path not in it is one the runner hides by default.
  std::map<std::string, std::string> hidden_origins;
  std::uint64_t tmp_size_mb = 256;
};

// Before the sandbox is built (as the caller, on the host): each root is an
// absolute path to an existing folder. The error names sandbox.worktree_roots.
Result<void> check_writable_roots(const std::vector<std::string>& roots);

// `root_mounts`: detached mounts to attach at the writable roots (by
// canonical path) instead of binding them; every one is consumed. Empty
// outside root (see user_namespace.hpp).
Result<void> build_lane_filesystem(const LaneFilesystemSpec& spec,
                                   std::map<std::string, UniqueFd> root_mounts = {});

// Per job, in the job's own mount and PID namespaces (Linux >= 5.2 for
// open_tree/move_mount, 5.6 for openat2):
//   /proc        fresh and read-only: only the job's processes
//   each writable root covered by an empty read-only tmpfs, with only these
//                put back at their own paths: the job's worktree (its own
//                mount, read-write), the configured read paths under the
//                root (read-only) and, for a linked worktree, the main
//                repository's git folder (read-only, linked_git_dir.hpp) —
//                other worktrees are neither readable nor listed
//   worktree/.git bound read-only, so nothing a job writes there is run by
//                the daemon's git later
// `worktree` is canonical and beneath a writable root (LaneRunner checks).
Result<void> build_job_filesystem(const std::string& worktree, const LaneFilesystemSpec& spec);

// Written in the lane's read-only /dev by build_lane_filesystem, named by
// APT_CONFIG in each job's environment: APT::Sandbox::User "root". apt run as root drops
// its download methods to the _apt user, which the lane's user namespace
// does not map (setgroups is refused in it, setresuid to 42 is invalid), so
// every download failed; inside the sandbox "root" is an unprivileged uid
// of the host anyway.
inline constexpr const char* kJobAptConfig = "/dev/.loopr-apt.conf";

}  // namespace loopr::runner
