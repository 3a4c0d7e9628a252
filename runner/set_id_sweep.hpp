// The runner's sweep of set-user-ID and set-group-ID bits (SECURITY class
// 24). As root, what a job writes in its worktree is root's on disk; a
// setuid-root program left there would give root to whoever runs it on the
// host. seccomp refuses the bits on chmod, open, creat and mknod
// (seccomp_filter.cpp); openat2, whose mode seccomp cannot see, could still
// set them, so after each job whose traits say it runs commands
// (proto::JobTraits::runs_commands) the runner clears them in the job's
// worktree. The job's processes are gone by then (its PID namespace died
// with its PID 1), so nothing sets them again behind the sweep.
#pragma once

#include <cstddef>
#include <string>

namespace loopr::runner {

// Clears S_ISUID and S_ISGID on every file and folder beneath `worktree`
// (not following symlinks, not crossing into other mounts such as the
// read-only .git); returns how many it cleared.
std::size_t clear_set_id_bits(const std::string& worktree);

}  // namespace loopr::runner
