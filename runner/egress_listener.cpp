#include "runner/egress_listener.hpp"

#include <netinet/in.h>
#include <sys/socket.h>
#include <unistd.h>

#include <algorithm>
#include <cctype>

#include "common/fd_passing.hpp"
#include "common/unique_fd.hpp"
#include "runner/sandbox_step.hpp"

namespace loopr::runner {

Result<void> offer_egress_listener(int egress_link, std::uint16_t port) {
  constexpr const char* kStep = "egress listener";
  UniqueFd listener(::socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0));
  if (!listener) return step_failed(kStep, "socket", errno);
  const int on = 1;
  ::setsockopt(listener.get(), SOL_SOCKET, SO_REUSEADDR, &on, sizeof on);
  sockaddr_in address{};
  address.sin_family = AF_INET;
  address.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  address.sin_port = htons(port);
  if (::bind(listener.get(), reinterpret_cast<sockaddr*>(&address), sizeof address) != 0) {
    return step_failed(kStep, "bind 127.0.0.1:" + std::to_string(port) + " in the lane", errno);
  }
  if (::listen(listener.get(), 128) != 0) return step_failed(kStep, "listen", errno);
  if (auto sent = send_fd(egress_link, listener.get()); !sent) {
    return step_failed(kStep, "pass the listener to looprd: " + sent.error().message);
  }
  ::close(egress_link);
  return {};
}

std::string egress_proxy_url(std::uint16_t port, const std::string& token) {
  const bool usable =
      !token.empty() && token.size() <= 128 && std::all_of(token.begin(), token.end(), [](char c) {
        return std::isalnum(static_cast<unsigned char>(c)) != 0 || c == '_' || c == '-';
      });
  return std::string("http://") + (usable ? "loopr:" + token + "@" : "") +
         "127.0.0.1:" + std::to_string(port);
}

}  // namespace loopr::runner
