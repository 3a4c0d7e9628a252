// ControlServer: the control socket (DESIGN.md §3). The socket is created
// mode 0600 inside a folder that is the user's own and mode 0700; a client is
// served only if SO_PEERCRED says it runs as the daemon's own uid (root
// included: another uid is refused with error 1003 and disconnected).
//
// listen() refuses to start when another looprd already answers on the path,
// and removes a stale socket left by a daemon that died. adopt() serves a
// socket systemd bound and listens on (socket activation, looprd.socket):
// that socket file is systemd's, so stop_accepting() leaves it in place.
// Threads: io thread only.
#pragma once

#include <asio/awaitable.hpp>
#include <asio/io_context.hpp>
#include <asio/local/stream_protocol.hpp>
#include <cstdint>
#include <map>
#include <memory>
#include <string>

#include "common/unique_fd.hpp"
#include "daemon/client_session.hpp"

namespace loopr::daemon {

class ControlServer {
 public:
  ControlServer(asio::io_context& io, std::string socket_path, RequestDispatcher dispatcher,
                std::size_t max_client_queue_bytes);

  // Creates the folder and binds the socket. Throws loopr::StartupError.
  void listen();
  // Serves `listener`, a listening AF_UNIX stream socket bound to the
  // socket path by systemd (see socket_activation.hpp). Checks that the
  // path's folder is private like listen() does. Throws StartupError.
  void adopt(UniqueFd listener);
  void start_accepting();
  // Stops accepting and removes the socket file (unless adopted).
  void stop_accepting();
  // Closes every session once its queued replies are written.
  void close_sessions();

  std::size_t client_count() const { return sessions_.size(); }
  // Called for every session before it starts (to hook on_close and the like).
  std::function<void(ClientSession&)> on_session;

 private:
  asio::awaitable<void> accept_loop();

  asio::io_context& io_;
  std::string socket_path_;
  RequestDispatcher dispatcher_;
  std::size_t max_client_queue_bytes_;
  asio::local::stream_protocol::acceptor acceptor_;
  std::map<std::uint64_t, std::weak_ptr<ClientSession>> sessions_;
  std::uint64_t next_session_ = 1;
  bool accepting_ = false;
  bool owns_socket_file_ = false;  // bound by listen(), not by systemd
};

// Creates `folder` (missing components 0700) and makes sure it is private:
// owned by this uid, writable by no one else. A folder loopr did not create is
// never chmod'ed: one that others can write is refused. Throws StartupError
// naming the folder, what is wrong with it and what to do.
void ensure_private_folder(const std::string& folder);

}  // namespace loopr::daemon
