#include "tests/client/fake_daemon.hpp"

#include <fcntl.h>
#include <poll.h>
#include <sys/socket.h>
#include <sys/un.h>
#include <unistd.h>

#include <cerrno>
#include <cstdlib>
#include <cstring>
#include <stdexcept>

#include "proto/line_codec.hpp"

namespace loopr::test {
namespace {

using nlohmann::json;

std::string line(const json& object) {
  return object.dump() + "\n";
}

UniqueFd listen_on(const std::string& path) {
  sockaddr_un address{};
  if (path.size() >= sizeof address.sun_path) throw std::runtime_error("socket path too long");
  address.sun_family = AF_UNIX;
  path.copy(address.sun_path, path.size());
  UniqueFd fd(::socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0));
  if (!fd) throw std::runtime_error("socket failed");
  if (::bind(fd.get(), reinterpret_cast<const sockaddr*>(&address), sizeof address) != 0 ||
      ::listen(fd.get(), 16) != 0) {
    throw std::runtime_error("cannot listen on " + path + ": " + std::strerror(errno));
  }
  return fd;
}

void write_all(int fd, const std::string& bytes) {
  std::size_t done = 0;
  while (done < bytes.size()) {
    const ssize_t n = ::send(fd, bytes.data() + done, bytes.size() - done, MSG_NOSIGNAL);
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0) return;  // the client went away; its test sees that
    done += static_cast<std::size_t>(n);
  }
}

struct Connection {
  UniqueFd fd;
  proto::LineReader reader;
  std::size_t index;  // into connections_
};

}  // namespace

FakeReply FakeReply::result(const proto::Request& request, json result) {
  return raw(line(proto::to_json(proto::Response::success(request.id, std::move(result)))));
}

FakeReply FakeReply::error(const proto::Request& request, int code, std::string message,
                           json data) {
  return raw(line(proto::to_json(proto::Response::failure(
      request.id, proto::ControlError{code, std::move(message), std::move(data)}))));
}

FakeReply FakeReply::raw(std::string bytes) {
  FakeReply reply;
  reply.bytes = std::move(bytes);
  return reply;
}

FakeReply& FakeReply::event(const std::string& name, json data) {
  bytes += line(proto::to_json(proto::Event{name, std::move(data)}));
  return *this;
}

FakeReply& FakeReply::event_first(const std::string& name, json data) {
  bytes = line(proto::to_json(proto::Event{name, std::move(data)})) + bytes;
  return *this;
}

FakeDaemon::FakeDaemon(std::string socket_path) : socket_path_(std::move(socket_path)) {
  if (socket_path_.empty()) {
    std::string pattern = "/tmp/lcf-XXXXXX";
    if (::mkdtemp(pattern.data()) == nullptr) throw std::runtime_error("mkdtemp failed");
    owned_dir_ = pattern;
    socket_path_ = owned_dir_ + "/s";
  }
  listener_ = listen_on(socket_path_);
  int pipe_fds[2];
  if (::pipe2(pipe_fds, O_CLOEXEC) != 0) throw std::runtime_error("pipe2 failed");
  stop_read_.reset(pipe_fds[0]);
  stop_write_.reset(pipe_fds[1]);

  answer("initialize", {{"protocol", proto::kProtocolVersion},
                        {"daemon_version", "fake-1.0"},
                        {"capabilities", {{"methods", json::array()}, {"lanes", json::array()}}}});
  answer("ping", {{"pong", true}, {"uptime_ms", 1500}});
  on("daemon.shutdown", [](const proto::Request& request) {
    FakeReply reply = FakeReply::result(request, {{"shutting_down", true}});
    reply.close_connection = true;
    reply.stop_listening = true;
    return reply;
  });
}

FakeDaemon::~FakeDaemon() {
  if (thread_.joinable()) {
    const char stop = 's';
    (void)!::write(stop_write_.get(), &stop, 1);
    thread_.join();
  }
  if (listener_) ::unlink(socket_path_.c_str());
  if (!owned_dir_.empty()) {
    ::unlink(socket_path_.c_str());
    ::rmdir(owned_dir_.c_str());
  }
}

void FakeDaemon::on(const std::string& method, FakeHandler handler) {
  handlers_[method] = std::move(handler);
}

void FakeDaemon::answer(const std::string& method, json result) {
  on(method,
     [result](const proto::Request& request) { return FakeReply::result(request, result); });
}

void FakeDaemon::start() {
  thread_ = std::thread([this] { loop(); });
}

void FakeDaemon::serve() {
  loop();
}

std::vector<std::vector<proto::Request>> FakeDaemon::connections() const {
  std::lock_guard lock(mutex_);
  return connections_;
}

std::vector<proto::Request> FakeDaemon::requests() const {
  std::vector<proto::Request> all;
  for (const auto& connection : connections()) {
    all.insert(all.end(), connection.begin(), connection.end());
  }
  return all;
}

std::vector<proto::Request> FakeDaemon::requests(const std::string& method) const {
  std::vector<proto::Request> matching;
  for (const auto& request : requests()) {
    if (request.method == method) matching.push_back(request);
  }
  return matching;
}

FakeReply FakeDaemon::handle(const proto::Request& request) const {
  const auto it = handlers_.find(request.method);
  if (it == handlers_.end()) {
    return FakeReply::error(request, static_cast<int>(proto::ControlErrorCode::method_not_found),
                            "unknown method '" + request.method + "'");
  }
  return it->second(request);
}

void FakeDaemon::loop() {
  std::vector<Connection> clients;
  while (listener_ || !clients.empty()) {
    std::vector<pollfd> fds;
    fds.push_back({stop_read_.get(), POLLIN, 0});
    fds.push_back({listener_ ? listener_.get() : -1, POLLIN, 0});
    for (const auto& client : clients)
      fds.push_back({client.fd.get(), POLLIN, 0});
    if (::poll(fds.data(), fds.size(), -1) < 0) {
      if (errno == EINTR) continue;
      return;
    }
    if (fds[0].revents != 0) return;
    const std::size_t polled = clients.size();  // fds[2..] are these, not the one accepted below
    if (fds[1].revents != 0) {
      UniqueFd accepted(::accept4(listener_.get(), nullptr, nullptr, SOCK_CLOEXEC));
      if (accepted) {
        std::lock_guard lock(mutex_);
        connections_.emplace_back();
        clients.push_back(
            Connection{std::move(accepted), proto::LineReader(), connections_.size() - 1});
      }
    }
    std::vector<std::size_t> finished;
    for (std::size_t i = 0; i < polled; ++i) {
      if (fds[i + 2].revents == 0) continue;
      Connection& client = clients[i];
      char buffer[65536];
      const ssize_t n = ::read(client.fd.get(), buffer, sizeof buffer);
      if (n <= 0) {
        finished.push_back(i);
        continue;
      }
      client.reader.feed(std::string_view(buffer, static_cast<std::size_t>(n)));
      bool close_it = false;
      while (!close_it) {
        auto next = client.reader.next();
        if (!next || !*next) {
          close_it = !next && client.reader.failed();
          break;
        }
        auto request = proto::parse_request(**next);
        if (!request) {
          write_all(client.fd.get(), line(proto::to_json(proto::error_reply(request.error()))));
          continue;
        }
        {
          std::lock_guard lock(mutex_);
          connections_[client.index].push_back(*request);
        }
        const FakeReply reply = handle(*request);
        write_all(client.fd.get(), reply.bytes);
        if (reply.stop_listening && listener_) {
          ::unlink(socket_path_.c_str());
          listener_.reset();
        }
        close_it = reply.close_connection;
      }
      if (close_it) finished.push_back(i);
    }
    for (auto it = finished.rbegin(); it != finished.rend(); ++it) {
      clients.erase(clients.begin() + static_cast<std::ptrdiff_t>(*it));
    }
  }
}

}  // namespace loopr::test
