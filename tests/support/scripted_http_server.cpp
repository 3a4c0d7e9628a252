#include "tests/support/scripted_http_server.hpp"

#include <arpa/inet.h>
#include <fcntl.h>
#include <netinet/in.h>
#include <poll.h>
#include <sys/socket.h>
#include <unistd.h>

#include <algorithm>
#include <cctype>
#include <cerrno>
#include <cstring>
#include <stdexcept>

#include "common/ascii_text.hpp"

namespace loopr::test {
namespace {

// Caps on what a client may send: the head and the body of one request.
constexpr std::size_t kMaxHeadBytes = std::size_t{1} << 20;
constexpr std::size_t kMaxBodyBytes = std::size_t{64} << 20;
// How long the server waits for a slow client before giving up on it.
constexpr std::chrono::milliseconds kClientTimeout{5000};

std::string status_reason(int status) {
  switch (status) {
    case 200:
      return "OK";
    case 201:
      return "Created";
    case 400:
      return "Bad Request";
    case 401:
      return "Unauthorized";
    case 403:
      return "Forbidden";
    case 404:
      return "Not Found";
    case 408:
      return "Request Timeout";
    case 413:
      return "Payload Too Large";
    case 429:
      return "Too Many Requests";
    case 500:
      return "Internal Server Error";
    case 502:
      return "Bad Gateway";
    case 503:
      return "Service Unavailable";
    case 529:
      return "Overloaded";
    default:
      return "Status";
  }
}

std::string lower(std::string text) {
  std::transform(text.begin(), text.end(), text.begin(),
                 [](unsigned char c) { return static_cast<char>(std::tolower(c)); });
  return text;
}

// Waits `delay`; false when the server is stopping or the client went away
// first (a client that timed out must not hold up the next connection).
bool pause_while_client_waits(int stop_fd, int client, std::chrono::milliseconds delay) {
  const auto deadline = std::chrono::steady_clock::now() + delay;
  for (;;) {
    const auto left =
        std::chrono::ceil<std::chrono::milliseconds>(deadline - std::chrono::steady_clock::now());
    if (left.count() <= 0) return true;
    pollfd fds[2] = {{stop_fd, POLLIN, 0}, {client, POLLIN | POLLRDHUP, 0}};
    const int ready = ::poll(fds, 2, static_cast<int>(left.count()));
    if (ready < 0 && errno == EINTR) continue;
    if (ready < 0 || fds[0].revents != 0) return false;
    if (fds[1].revents != 0) {
      // Bytes after the request are discarded; EOF or an error means gone.
      char discard[4096];
      const ssize_t n = ::recv(client, discard, sizeof discard, MSG_DONTWAIT);
      if (n == 0 || (n < 0 && errno != EAGAIN && errno != EINTR)) return false;
    }
  }
}

}  // namespace

ScriptedReply ScriptedReply::json(int status, const std::string& body,
                                  std::vector<std::pair<std::string, std::string>> headers) {
  std::string head = "HTTP/1.1 " + std::to_string(status) + " " + status_reason(status) + "\r\n";
  const bool has_type = std::any_of(headers.begin(), headers.end(),
                                    [](const auto& h) { return lower(h.first) == "content-type"; });
  if (!has_type) head += "Content-Type: application/json\r\n";
  head += "Content-Length: " + std::to_string(body.size()) + "\r\n";
  for (const auto& [name, value] : headers)
    head += name + ": " + value + "\r\n";
  head += "Connection: close\r\n\r\n";
  return ScriptedReply{{HttpStep::write(head + body)}};
}

ScriptedReply ScriptedReply::sse(const std::vector<std::string>& pieces,
                                 std::chrono::milliseconds gap) {
  ScriptedReply reply;
  reply.steps.push_back(
      HttpStep::write("HTTP/1.1 200 OK\r\nContent-Type: text/event-stream\r\n"
                      "Cache-Control: no-cache\r\nConnection: close\r\n\r\n"));
  for (std::size_t i = 0; i < pieces.size(); ++i) {
    if (i > 0 && gap.count() > 0) reply.steps.push_back(HttpStep::pause(gap));
    reply.steps.push_back(HttpStep::write(pieces[i]));
  }
  return reply;
}

ScriptedHttpServer::ScriptedHttpServer() : ScriptedHttpServer(Responder{}) {}

ScriptedHttpServer::ScriptedHttpServer(Responder responder) : responder_(std::move(responder)) {
  listener_ = ::socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
  if (listener_ < 0) throw std::runtime_error(std::string("socket: ") + std::strerror(errno));
  sockaddr_in address{};
  address.sin_family = AF_INET;
  address.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  socklen_t length = sizeof address;
  if (::bind(listener_, reinterpret_cast<sockaddr*>(&address), length) != 0 ||
      ::listen(listener_, 128) != 0 ||
      ::getsockname(listener_, reinterpret_cast<sockaddr*>(&address), &length) != 0 ||
      ::pipe2(stop_pipe_, O_CLOEXEC) != 0) {
    const int err = errno;
    ::close(listener_);
    throw std::runtime_error(std::string("cannot listen on 127.0.0.1: ") + std::strerror(err));
  }
  port_ = ntohs(address.sin_port);
  thread_ = std::thread([this] { serve(); });
}

ScriptedHttpServer::~ScriptedHttpServer() {
  // The pipe stays readable from here on, so every wait in serve() ends.
  (void)!::write(stop_pipe_[1], "x", 1);
  thread_.join();
  ::close(listener_);
  ::close(stop_pipe_[0]);
  ::close(stop_pipe_[1]);
}

void ScriptedHttpServer::push(ScriptedReply reply) {
  std::lock_guard lock(mutex_);
  replies_.push_back(std::move(reply));
}

std::string ScriptedHttpServer::base_url() const {
  return "http://127.0.0.1:" + std::to_string(port_);
}

std::vector<RecordedRequest> ScriptedHttpServer::requests() const {
  std::lock_guard lock(mutex_);
  return requests_;
}

std::size_t ScriptedHttpServer::connections() const {
  std::lock_guard lock(mutex_);
  return connections_;
}

std::size_t ScriptedHttpServer::bytes_written() const {
  std::lock_guard lock(mutex_);
  return bytes_written_;
}

bool ScriptedHttpServer::wait_for(int fd, short events, std::chrono::milliseconds timeout) const {
  pollfd fds[2] = {{stop_pipe_[0], POLLIN, 0}, {fd, events, 0}};
  for (;;) {
    const int ready = ::poll(fds, 2, static_cast<int>(timeout.count()));
    if (ready < 0 && errno == EINTR) continue;
    if (ready <= 0 || fds[0].revents != 0) return false;
    return fds[1].revents != 0;
  }
}

void ScriptedHttpServer::serve() {
  for (;;) {
    pollfd fds[2] = {{listener_, POLLIN, 0}, {stop_pipe_[0], POLLIN, 0}};
    if (::poll(fds, 2, -1) < 0) continue;
    if (fds[1].revents != 0) return;
    const int client = ::accept4(listener_, nullptr, nullptr, SOCK_CLOEXEC | SOCK_NONBLOCK);
    if (client < 0) continue;
    {
      std::lock_guard lock(mutex_);
      ++connections_;
    }
    answer(client);
  }
}

bool ScriptedHttpServer::read_request(int client, RecordedRequest& request) {
  std::string buffer;
  char chunk[16384];
  auto read_more = [&]() {
    for (;;) {
      const ssize_t n = ::read(client, chunk, sizeof chunk);
      if (n > 0) {
        buffer.append(chunk, static_cast<std::size_t>(n));
        return true;
      }
      if (n == 0) return false;
      if (errno == EINTR) continue;
      if (errno != EAGAIN) return false;
      if (!wait_for(client, POLLIN, kClientTimeout)) return false;
    }
  };
  std::size_t head_end = 0;
  while ((head_end = buffer.find("\r\n\r\n")) == std::string::npos) {
    if (buffer.size() > kMaxHeadBytes || !read_more()) return false;
  }
  // "POST /v1/messages HTTP/1.1", then "Name: value" lines.
  const std::string_view head(buffer.data(), head_end);
  std::size_t line_end = head.find("\r\n");
  const std::string_view request_line = head.substr(0, line_end);
  const std::size_t first_space = request_line.find(' ');
  const std::size_t second_space = request_line.find(' ', first_space + 1);
  if (first_space == std::string_view::npos || second_space == std::string_view::npos) {
    return false;
  }
  request.method = request_line.substr(0, first_space);
  request.path = request_line.substr(first_space + 1, second_space - first_space - 1);
  while (line_end != std::string_view::npos) {
    const std::size_t start = line_end + 2;
    line_end = head.find("\r\n", start);
    const std::string_view line = head.substr(start, line_end - start);
    const std::size_t colon = line.find(':');
    if (colon == std::string_view::npos) continue;
    request.headers[lower(std::string(line.substr(0, colon)))] =
        trim_blanks(line.substr(colon + 1));
  }
  std::size_t content_length = 0;
  if (auto it = request.headers.find("content-length"); it != request.headers.end()) {
    try {
      content_length = std::stoul(it->second);
    } catch (const std::exception&) {
      return false;
    }
    if (content_length > kMaxBodyBytes) return false;
  }
  if (auto it = request.headers.find("expect"); it != request.headers.end() &&
                                                lower(it->second) == "100-continue" &&
                                                buffer.size() == head_end + 4) {
    if (!write_all(client, "HTTP/1.1 100 Continue\r\n\r\n")) return false;
  }
  while (buffer.size() < head_end + 4 + content_length) {
    if (!read_more()) return false;
  }
  request.body = buffer.substr(head_end + 4, content_length);
  return true;
}

bool ScriptedHttpServer::write_all(int client, std::string_view bytes) {
  while (!bytes.empty()) {
    const ssize_t n = ::send(client, bytes.data(), bytes.size(), MSG_NOSIGNAL);
    if (n > 0) {
      bytes.remove_prefix(static_cast<std::size_t>(n));
      std::lock_guard lock(mutex_);
      bytes_written_ += static_cast<std::size_t>(n);
      continue;
    }
    if (n < 0 && errno == EINTR) continue;
    if (n < 0 && errno == EAGAIN) {
      if (!wait_for(client, POLLOUT, kClientTimeout)) return false;
      continue;
    }
    return false;  // the client went away
  }
  return true;
}

void ScriptedHttpServer::answer(int client) {
  RecordedRequest request;
  if (!read_request(client, request)) {
    ::close(client);
    return;
  }
  ScriptedReply reply;
  if (responder_) {
    {
      std::lock_guard lock(mutex_);
      requests_.push_back(request);
    }
    reply = responder_(request);
  } else {
    std::lock_guard lock(mutex_);
    requests_.push_back(request);
    if (replies_.empty()) {
      reply =
          ScriptedReply::json(500, "no scripted reply for " + request.method + " " + request.path,
                              {{"Content-Type", "text/plain"}});
    } else {
      reply = std::move(replies_.front());
      replies_.pop_front();
    }
  }
  for (const HttpStep& step : reply.steps) {
    switch (step.kind) {
      case HttpStep::Kind::write:
        if (!write_all(client, step.bytes)) {
          ::close(client);
          return;
        }
        break;
      case HttpStep::Kind::pause:
        if (!pause_while_client_waits(stop_pipe_[0], client, step.delay)) {
          ::close(client);
          return;
        }
        break;
      case HttpStep::Kind::close:
        ::close(client);
        return;
      case HttpStep::Kind::reset: {
        const linger abort_on_close{1, 0};
        ::setsockopt(client, SOL_SOCKET, SO_LINGER, &abort_on_close, sizeof abort_on_close);
        ::close(client);
        return;
      }
    }
  }
  ::close(client);
}

}  // namespace loopr::test
