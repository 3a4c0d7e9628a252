// FakeDaemon: a scripted stand-in for looprd's control socket, for client
// tests. It listens on a Unix socket, reads request lines, records them, and
// answers each with what the handler for its method returns: replies,
// pushed events, malformed bytes, or a closed connection.
//
// Defaults: initialize answers protocol kProtocolVersion, ping answers
// {pong, uptime_ms}, daemon.shutdown answers {shutting_down: true} and stops
// listening (the socket file is removed); other methods get -32601.
//
// Threads: handlers are set before start() and run on the serving thread;
// requests() may be called from any thread. A request is recorded before its
// reply is written, so once a client has a reply the request is visible.
// No gtest dependency: the fake looprd binary (fake_looprd_main.cpp) uses it.
#pragma once

#include <functional>
#include <map>
#include <mutex>
#include <nlohmann/json.hpp>
#include <string>
#include <thread>
#include <vector>

#include "common/unique_fd.hpp"
#include "proto/control_messages.hpp"

namespace loopr::test {

struct FakeReply {
  std::string bytes;              // written as they are
  bool close_connection = false;  // close this connection after writing
  bool stop_listening = false;    // then close and unlink the listening socket

  static FakeReply result(const proto::Request& request, nlohmann::json result);
  static FakeReply error(const proto::Request& request, int code, std::string message,
                         nlohmann::json data = nullptr);
  static FakeReply raw(std::string bytes);
  static FakeReply nothing() { return {}; }
  // Appends an event line {"event", "data"}.
  FakeReply& event(const std::string& name, nlohmann::json data);
  // Prepends an event line, so it arrives before the reply.
  FakeReply& event_first(const std::string& name, nlohmann::json data);
};

using FakeHandler = std::function<FakeReply(const proto::Request&)>;

class FakeDaemon {
 public:
  // Listens on `socket_path`; empty: "s" in a fresh mkdtemp folder under /tmp
  // (short, so it fits sun_path), removed again by the destructor.
  explicit FakeDaemon(std::string socket_path = {});
  ~FakeDaemon();
  FakeDaemon(const FakeDaemon&) = delete;
  FakeDaemon& operator=(const FakeDaemon&) = delete;

  const std::string& socket_path() const { return socket_path_; }

  // Replaces the handler of `method`. Only before start().
  void on(const std::string& method, FakeHandler handler);
  // Answers `method` with `result` (a shortcut for on()).
  void answer(const std::string& method, nlohmann::json result);

  // Serves on a thread of its own until the destructor.
  void start();
  // Serves on the calling thread until the listening socket is closed
  // (daemon.shutdown) and every connection has ended.
  void serve();

  // Requests received so far, one list per accepted connection.
  std::vector<std::vector<proto::Request>> connections() const;
  // All requests of all connections, in arrival order per connection.
  std::vector<proto::Request> requests() const;
  // The requests with this method.
  std::vector<proto::Request> requests(const std::string& method) const;

 private:
  void loop();
  FakeReply handle(const proto::Request& request) const;

  std::string socket_path_;
  std::string owned_dir_;  // removed on destruction when we created it
  UniqueFd listener_;
  UniqueFd stop_read_;
  UniqueFd stop_write_;
  std::map<std::string, FakeHandler> handlers_;
  std::thread thread_;
  mutable std::mutex mutex_;
  std::vector<std::vector<proto::Request>> connections_;  // guarded by mutex_
};

}  // namespace loopr::test
