#include "daemon/control_server.hpp"

#include <fcntl.h>
#include <spdlog/spdlog.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/un.h>
#include <unistd.h>

#include <asio/co_spawn.hpp>
#include <asio/detached.hpp>
#include <asio/write.hpp>
#include <cerrno>
#include <cstring>
#include <filesystem>

#include "common/error.hpp"
#include "common/private_folder.hpp"
#include "common/unique_fd.hpp"
#include "proto/line_codec.hpp"

namespace loopr::daemon {
namespace {

using asio::redirect_error;
using asio::use_awaitable;

std::string parent_folder(const std::string& path) {
  return std::filesystem::path(path).parent_path().string();
}

// Whether a daemon answers on `path` (connect succeeds).
bool someone_listens(const std::string& path) {
  UniqueFd fd(::socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0));
  if (!fd) return false;
  sockaddr_un address{};
  address.sun_family = AF_UNIX;
  path.copy(address.sun_path, sizeof address.sun_path - 1);
  return ::connect(fd.get(), reinterpret_cast<sockaddr*>(&address), sizeof address) == 0;
}

}  // namespace

void ensure_private_folder(const std::string& folder) {
  auto made = make_private_folders(folder);
  if (made) made = require_private_folder(folder);
  if (!made) {
    throw StartupError(made.error().message +
                       (made.error().hint.empty() ? "" : "; " + made.error().hint));
  }
}

ControlServer::ControlServer(asio::io_context& io, std::string socket_path,
                             RequestDispatcher dispatcher, std::size_t max_client_queue_bytes)
    : io_(io),
      socket_path_(std::move(socket_path)),
      dispatcher_(std::move(dispatcher)),
      max_client_queue_bytes_(max_client_queue_bytes),
      acceptor_(io) {}

void ControlServer::listen() {
  ensure_private_folder(parent_folder(socket_path_));
  struct stat st {};
  if (::lstat(socket_path_.c_str(), &st) == 0) {
    if (!S_ISSOCK(st.st_mode)) {
      throw StartupError(socket_path_ +
                         " exists and is not a socket; remove it or choose "
                         "another path with --socket");
    }
    if (someone_listens(socket_path_)) {
      throw StartupError("another looprd is already running on " + socket_path_ +
                         " (stop it with `looprctl daemon stop`)");
    }
    ::unlink(socket_path_.c_str());  // stale: its daemon died
  }
  // Bind with umask 0177 so the socket is 0600 from its first instant.
  const mode_t old_mask = ::umask(0177);
  std::error_code ec;
  acceptor_.open(asio::local::stream_protocol(), ec);
  if (!ec) acceptor_.bind(asio::local::stream_protocol::endpoint(socket_path_), ec);
  ::umask(old_mask);
  if (!ec) acceptor_.listen(asio::socket_base::max_listen_connections, ec);
  if (ec) throw StartupError("cannot listen on " + socket_path_ + ": " + ec.message());
  owns_socket_file_ = true;
  ::fcntl(acceptor_.native_handle(), F_SETFD, FD_CLOEXEC);
}

void ControlServer::adopt(UniqueFd listener) {
  if (socket_path_.starts_with('/')) {
    auto folder = require_private_folder(parent_folder(socket_path_));
    if (!folder) {
      throw StartupError(folder.error().message +
                         (folder.error().hint.empty() ? "" : "; " + folder.error().hint) +
                         " (the folder of the socket systemd passed; DirectoryMode=0700 in "
                         "looprd.socket makes it private)");
    }
  }
  std::error_code ec;
  acceptor_.assign(asio::local::stream_protocol(), listener.get(), ec);
  if (ec) {
    throw StartupError("cannot serve the socket systemd passed (" + socket_path_ +
                       "): " + ec.message());
  }
  listener.release();  // the acceptor owns it now
  owns_socket_file_ = false;
}

void ControlServer::start_accepting() {
  accepting_ = true;
  asio::co_spawn(io_, accept_loop(), asio::detached);
}

asio::awaitable<void> ControlServer::accept_loop() {
  while (accepting_) {
    std::error_code ec;
    auto socket = co_await acceptor_.async_accept(redirect_error(use_awaitable, ec));
    if (ec) {
      if (!accepting_) co_return;
      spdlog::warn("accept on the control socket: {}", ec.message());
      if (ec == asio::error::no_descriptors) {  // EMFILE: let some close first
        asio::steady_timer pause(io_, std::chrono::milliseconds(100));
        co_await pause.async_wait(redirect_error(use_awaitable, ec));
      }
      continue;
    }
    if (!accepting_) co_return;  // stopped while this accept completed: the socket closes
    ::fcntl(socket.native_handle(), F_SETFD, FD_CLOEXEC);
    ucred peer{};
    socklen_t length = sizeof peer;
    if (::getsockopt(socket.native_handle(), SOL_SOCKET, SO_PEERCRED, &peer, &length) != 0 ||
        peer.uid != ::geteuid()) {
      spdlog::warn("refused a control client of uid {} (pid {}): looprd serves only uid {}",
                   peer.uid, peer.pid, ::geteuid());
      auto line = proto::encode_line(proto::to_json(proto::Response::failure(
          std::nullopt, proto::ControlError{static_cast<int>(proto::ControlErrorCode::unauthorized),
                                            "this looprd serves only its own user (uid " +
                                                std::to_string(::geteuid()) + ")",
                                            nullptr})));
      if (line) {
        ::send(socket.native_handle(), line->data(), line->size(), MSG_DONTWAIT | MSG_NOSIGNAL);
      }
      continue;  // the socket closes here
    }
    const std::uint64_t id = next_session_++;
    auto session = std::make_shared<ClientSession>(std::move(socket), id, dispatcher_,
                                                   max_client_queue_bytes_);
    sessions_[id] = session;
    auto hook = on_session;
    if (hook) hook(*session);
    auto previous = std::move(session->on_close);
    session->on_close = [this, id, previous](ClientSession& closed) {
      if (previous) previous(closed);
      sessions_.erase(id);
    };
    session->start();
  }
}

void ControlServer::stop_accepting() {
  if (!accepting_ && !acceptor_.is_open()) return;
  accepting_ = false;
  std::error_code ignored;
  acceptor_.close(ignored);
  // An adopted socket file is systemd's: it keeps listening there and starts
  // looprd again on the next connection.
  if (owns_socket_file_) ::unlink(socket_path_.c_str());
}

void ControlServer::close_sessions() {
  auto sessions = sessions_;
  for (auto& [id, weak] : sessions) {
    if (auto session = weak.lock()) session->close_after_flush();
  }
}

}  // namespace loopr::daemon
