// HttpTestServer: a tiny HTTP/1.1 server on a loopback address for
// web_fetch tests. It answers each path with a canned response and counts the
// connections it accepts, so a test can assert that a refused fetch never
// reached it. One connection at a time, one request per connection
// (Connection: close). Threads: serves on its own thread; routes are set
// before the first request; the counters are atomic.
#pragma once

#include <atomic>
#include <map>
#include <string>
#include <thread>

namespace loopr::test {

class HttpTestServer {
 public:
  struct Response {
    int status = 200;
    std::string content_type = "text/html; charset=utf-8";
    std::string body;
    std::string location;  // sent as Location: when not empty
  };

  // Listens on `address` ("127.0.0.1", "127.0.0.2", "::1") on a free port.
  // Throws std::runtime_error when it cannot.
  explicit HttpTestServer(const std::string& address = "127.0.0.1");
  ~HttpTestServer();
  HttpTestServer(const HttpTestServer&) = delete;
  HttpTestServer& operator=(const HttpTestServer&) = delete;

  void route(const std::string& path, Response response) { routes_[path] = std::move(response); }
  int port() const { return port_; }
  // "http://127.0.0.1:PORT" or "http://[::1]:PORT"
  std::string base_url() const;
  int connections() const { return connections_.load(); }

 private:
  void serve();
  void answer(int client);

  std::string address_;
  int listener_ = -1;
  int stop_pipe_[2] = {-1, -1};
  int port_ = 0;
  std::map<std::string, Response> routes_;
  std::atomic<int> connections_{0};
  std::thread thread_;
};

}  // namespace loopr::test
