// Drops every capability from the calling thread: effective, permitted,
// inheritable, ambient, and the bounding set (libcap). After this, exec gains
// nothing either: no_new_privs (set by the caller) stops setuid binaries.
//
// Contract: called in the job's process, after every step that needs a
// capability (mounts) and before seccomp and exec.
#pragma once

#include "common/error.hpp"

namespace loopr::runner {

Result<void> drop_all_capabilities();

}  // namespace loopr::runner
