#include "daemon/systemd_notify.hpp"

#include <sys/socket.h>
#include <sys/un.h>

#include <cstddef>
#include <cstdlib>
#include <cstring>
#include <string>

#include "common/unique_fd.hpp"

namespace loopr::daemon {

bool notify_systemd(std::string_view state) {
  const char* target = std::getenv("NOTIFY_SOCKET");
  if (target == nullptr || target[0] == '\0') return false;
  const std::string path(target);
  sockaddr_un address{};
  if (path.size() >= sizeof address.sun_path || (path[0] != '/' && path[0] != '@')) return false;
  address.sun_family = AF_UNIX;
  path.copy(address.sun_path, path.size());
  if (path[0] == '@') address.sun_path[0] = '\0';  // abstract namespace
  const auto length = static_cast<socklen_t>(offsetof(sockaddr_un, sun_path) + path.size());
  UniqueFd fd(::socket(AF_UNIX, SOCK_DGRAM | SOCK_CLOEXEC, 0));
  if (!fd) return false;
  return ::sendto(fd.get(), state.data(), state.size(), MSG_NOSIGNAL,
                  reinterpret_cast<sockaddr*>(&address),
                  length) == static_cast<ssize_t>(state.size());
}

}  // namespace loopr::daemon
