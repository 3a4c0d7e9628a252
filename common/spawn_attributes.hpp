// The posix_spawn attributes of a child the daemon starts and may have to
// stop as a whole (a git command, a trusted hook): a process group of its
// own (so kill(-pid) reaches what it starts), no blocked signals and every
// signal at its default action, whatever the daemon's threads set.
#pragma once

#include <signal.h>
#include <spawn.h>

namespace loopr {

// 0, or the error number of the attribute call that failed.
inline int own_group_default_signals(posix_spawnattr_t& attributes) {
  sigset_t no_signals;
  sigset_t all_signals;
  sigemptyset(&no_signals);
  sigfillset(&all_signals);
  sigdelset(&all_signals, SIGKILL);
  sigdelset(&all_signals, SIGSTOP);
  int rc = ::posix_spawnattr_setflags(
      &attributes, POSIX_SPAWN_SETPGROUP | POSIX_SPAWN_SETSIGMASK | POSIX_SPAWN_SETSIGDEF);
  if (rc == 0) rc = ::posix_spawnattr_setpgroup(&attributes, 0);
  if (rc == 0) rc = ::posix_spawnattr_setsigmask(&attributes, &no_signals);
  if (rc == 0) rc = ::posix_spawnattr_setsigdefault(&attributes, &all_signals);
  return rc;
}

}  // namespace loopr
