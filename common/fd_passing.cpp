#include "common/fd_passing.hpp"

#include <sys/socket.h>

#include <cerrno>
#include <cstring>

namespace loopr {

namespace {

// One byte of data and room for one fd: the message both sides use.
struct OneFdMessage {
  char byte = 'F';
  iovec data{&byte, 1};
  alignas(cmsghdr) char control[CMSG_SPACE(sizeof(int))] = {};
  msghdr message{};

  OneFdMessage() {
    message.msg_iov = &data;
    message.msg_iovlen = 1;
    message.msg_control = control;
    message.msg_controllen = sizeof control;
  }
  OneFdMessage(const OneFdMessage&) = delete;
  OneFdMessage& operator=(const OneFdMessage&) = delete;
};

}  // namespace

Result<void> send_fd(int socket, int fd) {
  OneFdMessage one;
  msghdr& message = one.message;
  cmsghdr* header = CMSG_FIRSTHDR(&message);
  header->cmsg_level = SOL_SOCKET;
  header->cmsg_type = SCM_RIGHTS;
  header->cmsg_len = CMSG_LEN(sizeof(int));
  std::memcpy(CMSG_DATA(header), &fd, sizeof(int));
  for (;;) {
    if (::sendmsg(socket, &message, MSG_NOSIGNAL) == 1) return {};
    if (errno != EINTR) return errno_error(errno, "cannot pass a file descriptor", "sendmsg");
  }
}

Result<UniqueFd> receive_fd(int socket) {
  OneFdMessage one;
  msghdr& message = one.message;
  ssize_t n = 0;
  do {
    n = ::recvmsg(socket, &message, MSG_CMSG_CLOEXEC);
  } while (n < 0 && errno == EINTR);
  if (n < 0) return errno_error(errno, "cannot receive a file descriptor", "recvmsg");
  for (cmsghdr* header = CMSG_FIRSTHDR(&message); header != nullptr;
       header = CMSG_NXTHDR(&message, header)) {
    if (header->cmsg_level == SOL_SOCKET && header->cmsg_type == SCM_RIGHTS &&
        header->cmsg_len == CMSG_LEN(sizeof(int))) {
      int fd = -1;
      std::memcpy(&fd, CMSG_DATA(header), sizeof(int));
      return UniqueFd(fd);
    }
  }
  return make_error(errc::protocol, n == 0 ? "the peer closed before passing a file descriptor"
                                           : "the peer sent no file descriptor");
}

}  // namespace loopr
