// Socket activation (sd_listen_fds(3)) without libsystemd, as systemd_notify
// does for sd_notify: looprd.socket binds the control socket and systemd
// starts looprd.service on the first connection, passing the listening
// socket as fd 3 with LISTEN_PID (looprd's pid) and LISTEN_FDS=1.
//
// take_activation_socket():
// - LISTEN_PID unset: not activated, nullopt (looprd binds its own socket).
// - LISTEN_PID another process's (the variables leaked from a parent):
//   ignored, nullopt; fd 3 is left alone, as sd_listen_fds does.
// - LISTEN_PID == getpid(): LISTEN_FDS must be exactly 1 and fd 3 a listening
//   AF_UNIX SOCK_STREAM socket (fstat, SO_DOMAIN, SO_TYPE, SO_ACCEPTCONN);
//   anything else throws loopr::StartupError saying what fd 3 is and what the
//   socket unit must declare. The fd is made FD_CLOEXEC and returned.
// In every case LISTEN_PID, LISTEN_FDS and LISTEN_FDNAMES are removed from the
// environment, so the runners and jobs looprd starts do not inherit them.
// Call it early in main(), before any thread starts (it calls unsetenv).
#pragma once

#include <optional>
#include <string>

#include "common/unique_fd.hpp"

namespace loopr::daemon {

// SD_LISTEN_FDS_START: the first fd systemd passes.
inline constexpr int kActivationFd = 3;

std::optional<UniqueFd> take_activation_socket();

// The path a Unix stream socket is bound to ("" when unnamed; "@name" when in
// the abstract namespace).
std::string bound_path(int fd);

}  // namespace loopr::daemon
