// Step 1 of contain(): a new user namespace in which the runner holds the
// capabilities to build the rest of the sandbox. The caller's uid and gid are
// mapped to themselves, so files in the worktree keep their owner; jobs later
// drop every capability (capabilities.hpp).
//
// Contract: the process must be single-threaded (unshare(CLONE_NEWUSER) fails
// with EINVAL otherwise). Works as root and, on kernels that allow
// unprivileged user namespaces, as an ordinary user.
#pragma once

#include "common/error.hpp"

namespace loopr::runner {

Result<void> enter_user_namespace();

}  // namespace loopr::runner
