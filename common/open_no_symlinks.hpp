// openat2 that refuses every symlink on the way (RESOLVE_NO_SYMLINKS, Linux
// >= 5.6): look-ups of paths a job may have planted links in — the
// runner's own, and the daemon's removal of protected paths a loop added
// (loops/git/protected_restore.cpp). Returns an invalid fd on failure, errno set.
#pragma once

#include <fcntl.h>
#include <linux/openat2.h>
#include <sys/syscall.h>
#include <unistd.h>

#include <cstdint>
#include <string>

#include "common/unique_fd.hpp"

namespace loopr {

inline UniqueFd open_no_symlinks(int dirfd, const std::string& path, std::uint64_t flags,
                                 std::uint64_t resolve = 0) {
  open_how how{};
  how.flags = flags | O_CLOEXEC;
  how.resolve = resolve | RESOLVE_NO_SYMLINKS | RESOLVE_NO_MAGICLINKS;
  return UniqueFd(static_cast<int>(::syscall(SYS_openat2, dirfd, path.c_str(), &how, sizeof how)));
}

}  // namespace loopr
