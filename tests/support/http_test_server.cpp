#include "tests/support/http_test_server.hpp"

#include <arpa/inet.h>
#include <fcntl.h>
#include <netinet/in.h>
#include <poll.h>
#include <sys/socket.h>
#include <unistd.h>

#include <cstring>
#include <stdexcept>

namespace loopr::test {
namespace {

std::string reason_phrase(int status) {
  switch (status) {
    case 200:
      return "OK";
    case 301:
      return "Moved Permanently";
    case 302:
      return "Found";
    case 404:
      return "Not Found";
    case 500:
      return "Internal Server Error";
    default:
      return "Status";
  }
}

}  // namespace

HttpTestServer::HttpTestServer(const std::string& address) : address_(address) {
  const bool v6 = address.find(':') != std::string::npos;
  listener_ = ::socket(v6 ? AF_INET6 : AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
  if (listener_ < 0) throw std::runtime_error("socket failed");
  sockaddr_storage storage{};
  socklen_t length = 0;
  if (v6) {
    auto* in6 = reinterpret_cast<sockaddr_in6*>(&storage);
    in6->sin6_family = AF_INET6;
    if (::inet_pton(AF_INET6, address.c_str(), &in6->sin6_addr) != 1) {
      throw std::runtime_error("bad address " + address);
    }
    length = sizeof(sockaddr_in6);
  } else {
    auto* in4 = reinterpret_cast<sockaddr_in*>(&storage);
    in4->sin_family = AF_INET;
    if (::inet_pton(AF_INET, address.c_str(), &in4->sin_addr) != 1) {
      throw std::runtime_error("bad address " + address);
    }
    length = sizeof(sockaddr_in);
  }
  if (::bind(listener_, reinterpret_cast<sockaddr*>(&storage), length) != 0 ||
      ::listen(listener_, 16) != 0) {
    ::close(listener_);
    throw std::runtime_error("cannot listen on " + address + ": " + std::strerror(errno));
  }
  length = sizeof storage;
  ::getsockname(listener_, reinterpret_cast<sockaddr*>(&storage), &length);
  port_ = ntohs(v6 ? reinterpret_cast<sockaddr_in6*>(&storage)->sin6_port
                   : reinterpret_cast<sockaddr_in*>(&storage)->sin_port);
  if (::pipe2(stop_pipe_, O_CLOEXEC) != 0) throw std::runtime_error("pipe2 failed");
  thread_ = std::thread([this] { serve(); });
}

HttpTestServer::~HttpTestServer() {
  (void)!::write(stop_pipe_[1], "x", 1);
  thread_.join();
  ::close(listener_);
  ::close(stop_pipe_[0]);
  ::close(stop_pipe_[1]);
}

std::string HttpTestServer::base_url() const {
  const bool v6 = address_.find(':') != std::string::npos;
  return "http://" + (v6 ? "[" + address_ + "]" : address_) + ":" + std::to_string(port_);
}

void HttpTestServer::serve() {
  for (;;) {
    pollfd fds[2] = {{listener_, POLLIN, 0}, {stop_pipe_[0], POLLIN, 0}};
    if (::poll(fds, 2, -1) < 0) continue;
    if (fds[1].revents != 0) return;
    const int client = ::accept4(listener_, nullptr, nullptr, SOCK_CLOEXEC);
    if (client < 0) continue;
    ++connections_;
    answer(client);
    ::close(client);
  }
}

void HttpTestServer::answer(int client) {
  std::string request;
  char buffer[4096];
  while (request.find("\r\n\r\n") == std::string::npos && request.size() < 65536) {
    pollfd fd{client, POLLIN, 0};
    if (::poll(&fd, 1, 5000) <= 0) return;
    const ssize_t n = ::read(client, buffer, sizeof buffer);
    if (n <= 0) return;
    request.append(buffer, static_cast<std::size_t>(n));
  }
  // "GET /path HTTP/1.1"
  const std::size_t first_space = request.find(' ');
  const std::size_t second_space = request.find(' ', first_space + 1);
  const std::string path = request.substr(first_space + 1, second_space - first_space - 1);
  Response response;
  if (auto it = routes_.find(path); it != routes_.end()) {
    response = it->second;
  } else {
    response = {404, "text/plain", "no route for " + path, ""};
  }
  std::string reply =
      "HTTP/1.1 " + std::to_string(response.status) + " " + reason_phrase(response.status) + "\r\n";
  if (!response.content_type.empty()) reply += "Content-Type: " + response.content_type + "\r\n";
  if (!response.location.empty()) reply += "Location: " + response.location + "\r\n";
  reply += "Content-Length: " + std::to_string(response.body.size()) + "\r\n";
  reply += "Connection: close\r\n\r\n";
  reply += response.body;
  std::size_t done = 0;
  while (done < reply.size()) {
    const ssize_t n = ::send(client, reply.data() + done, reply.size() - done, MSG_NOSIGNAL);
    if (n <= 0) return;
    done += static_cast<std::size_t>(n);
  }
}

}  // namespace loopr::test
