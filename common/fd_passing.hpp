// Passing one file descriptor over a Unix socket (SCM_RIGHTS): how a lane's
// runner hands looprd the egress listener it made inside the lane's network
// namespace (DESIGN §7.9). Blocking calls; the received fd is O_CLOEXEC.
#pragma once

#include "common/error.hpp"
#include "common/unique_fd.hpp"

namespace loopr {

// Sends `fd` with one byte of data over the Unix socket `socket`.
Result<void> send_fd(int socket, int fd);
// Receives one fd sent by send_fd(); an error if the peer closed first or
// sent no fd.
Result<UniqueFd> receive_fd(int socket);

}  // namespace loopr
