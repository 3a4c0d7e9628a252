#include "daemon/socket_activation.hpp"

#include <fcntl.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/un.h>
#include <unistd.h>

#include <charconv>
#include <cstddef>
#include <cstdlib>
#include <string_view>

#include "common/error.hpp"

namespace loopr::daemon {
namespace {

std::optional<long> parse_number(const char* text) {
  if (text == nullptr) return std::nullopt;
  const std::string_view digits(text);
  long value = 0;
  const auto [end, ec] = std::from_chars(digits.data(), digits.data() + digits.size(), value);
  if (ec != std::errc() || end != digits.data() + digits.size() || digits.empty()) {
    return std::nullopt;
  }
  return value;
}

void clear_environment() {
  ::unsetenv("LISTEN_PID");
  ::unsetenv("LISTEN_FDS");
  ::unsetenv("LISTEN_FDNAMES");
}

int socket_option(int fd, int option) {
  int value = -1;
  socklen_t length = sizeof value;
  if (::getsockopt(fd, SOL_SOCKET, option, &value, &length) != 0) return -1;
  return value;
}

std::string what_is(int fd) {
  struct stat st {};
  if (::fstat(fd, &st) != 0) return "not open";
  if (S_ISREG(st.st_mode)) return "a regular file";
  if (S_ISDIR(st.st_mode)) return "a folder";
  if (S_ISFIFO(st.st_mode)) return "a pipe";
  if (S_ISCHR(st.st_mode)) return "a character device";
  if (!S_ISSOCK(st.st_mode)) return "not a socket";
  const int domain = socket_option(fd, SO_DOMAIN);
  const int type = socket_option(fd, SO_TYPE);
  if (domain != AF_UNIX)
    return "a socket that is not AF_UNIX (domain " + std::to_string(domain) + ")";
  if (type != SOCK_STREAM) {
    return std::string("an AF_UNIX socket that is not SOCK_STREAM (") +
           (type == SOCK_DGRAM       ? "SOCK_DGRAM"
            : type == SOCK_SEQPACKET ? "SOCK_SEQPACKET"
                                     : "type " + std::to_string(type)) +
           ")";
  }
  if (socket_option(fd, SO_ACCEPTCONN) != 1) return "an AF_UNIX stream socket that does not listen";
  return "";
}

}  // namespace

std::optional<UniqueFd> take_activation_socket() {
  const char* pid_text = std::getenv("LISTEN_PID");
  const char* fds_text = std::getenv("LISTEN_FDS");
  if (pid_text == nullptr) {
    clear_environment();
    return std::nullopt;
  }
  const auto pid = parse_number(pid_text);
  if (!pid) {
    const std::string text(pid_text);
    clear_environment();
    throw StartupError("LISTEN_PID=" + text + " is not a process id (socket activation)");
  }
  if (*pid != static_cast<long>(::getpid())) {
    clear_environment();  // meant for another process: not ours to take
    return std::nullopt;
  }
  const std::string fds(fds_text == nullptr ? "" : fds_text);
  clear_environment();
  const auto count = parse_number(fds.c_str());
  if (!count || *count != 1) {
    throw StartupError("socket activation passed LISTEN_FDS=" + (fds.empty() ? "(unset)" : fds) +
                       "; looprd takes exactly one socket: give looprd.socket a single "
                       "ListenStream= (the control socket's path)");
  }
  if (const std::string problem = what_is(kActivationFd); !problem.empty()) {
    throw StartupError("socket activation: fd 3 is " + problem +
                       "; looprd needs a listening AF_UNIX stream socket (ListenStream=PATH "
                       "in looprd.socket)");
  }
  const int flags = ::fcntl(kActivationFd, F_GETFD);
  if (flags < 0 || ::fcntl(kActivationFd, F_SETFD, flags | FD_CLOEXEC) != 0) {
    throw StartupError("socket activation: cannot set FD_CLOEXEC on fd 3");
  }
  return UniqueFd(kActivationFd);
}

std::string bound_path(int fd) {
  sockaddr_un address{};
  socklen_t length = sizeof address;
  if (::getsockname(fd, reinterpret_cast<sockaddr*>(&address), &length) != 0) return "";
  const auto offset = offsetof(sockaddr_un, sun_path);
  if (length <= offset) return "";
  std::string path(address.sun_path, length - offset);
  if (path[0] == '\0') return "@" + path.substr(1);
  if (const auto nul = path.find('\0'); nul != std::string::npos) path.resize(nul);
  return path;
}

}  // namespace loopr::daemon
