#include "runner/network_namespace.hpp"

#include <net/if.h>
#include <sched.h>
#include <sys/ioctl.h>
#include <sys/socket.h>

#include <cstring>

#include "common/unique_fd.hpp"
#include "runner/sandbox_step.hpp"

namespace loopr::runner {

Result<void> enter_empty_network_namespace() {
  if (::unshare(CLONE_NEWNET) != 0) {
    return step_failed("network namespace", "unshare(CLONE_NEWNET)", errno);
  }
  UniqueFd sock(::socket(AF_INET, SOCK_DGRAM | SOCK_CLOEXEC, 0));
  if (!sock) return step_failed("network namespace", "socket for configuring lo", errno);
  ifreq request{};
  std::strncpy(request.ifr_name, "lo", IFNAMSIZ - 1);
  if (::ioctl(sock.get(), SIOCGIFFLAGS, &request) != 0) {
    return step_failed("network namespace", "read flags of lo", errno);
  }
  request.ifr_flags = static_cast<short>(request.ifr_flags | IFF_UP | IFF_RUNNING);
  if (::ioctl(sock.get(), SIOCSIFFLAGS, &request) != 0) {
    return step_failed("network namespace", "bring lo up", errno);
  }
  return {};
}

}  // namespace loopr::runner
