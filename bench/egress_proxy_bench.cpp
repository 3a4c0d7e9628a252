// egress_proxy_bench: what looprd's egress proxy costs a job's connection
// (DESIGN §7.9, issue 11). A server on 127.0.0.1 sends a body of --mb MiB
// and closes; the client reads it all, once directly and once through the
// real EgressProxy (a CONNECT tunnel, the policy allowing 127.0.0.1 as a
// test-only allowance), alternating run by run so both see the same noise.
// Then the added latency: connect, send a request, read a 32-byte answer,
// --connections times each way. Prints medians and the spread.
//
//   build/bin/egress_proxy_bench [--mb 100] [--runs 5] [--connections 300]
//
// The proxy runs on its own io thread, as in looprd (one io thread); the
// client and server are threads of this process.
#include <arpa/inet.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <sys/socket.h>
#include <unistd.h>

#include <asio/executor_work_guard.hpp>
#include <asio/io_context.hpp>
#include <asio/post.hpp>
#include <atomic>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <string>
#include <thread>
#include <vector>

#include "bench/sample_stats.hpp"
#include "egress/egress_proxy.hpp"

namespace {

using Clock = std::chrono::steady_clock;
using loopr::UniqueFd;

int listen_loopback(std::uint16_t& port) {
  const int fd = ::socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
  const int on = 1;
  ::setsockopt(fd, SOL_SOCKET, SO_REUSEADDR, &on, sizeof on);
  sockaddr_in address{};
  address.sin_family = AF_INET;
  address.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  if (::bind(fd, reinterpret_cast<sockaddr*>(&address), sizeof address) != 0 ||
      ::listen(fd, 512) != 0) {
    std::perror("listen");
    std::exit(1);
  }
  socklen_t length = sizeof address;
  ::getsockname(fd, reinterpret_cast<sockaddr*>(&address), &length);
  port = ntohs(address.sin_port);
  return fd;
}

int connect_loopback(std::uint16_t port) {
  const int fd = ::socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
  const int on = 1;
  ::setsockopt(fd, IPPROTO_TCP, TCP_NODELAY, &on, sizeof on);
  sockaddr_in address{};
  address.sin_family = AF_INET;
  address.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  address.sin_port = htons(port);
  if (::connect(fd, reinterpret_cast<sockaddr*>(&address), sizeof address) != 0) {
    std::perror("connect");
    std::exit(1);
  }
  return fd;
}

void write_all(int fd, const char* data, std::size_t size) {
  while (size > 0) {
    const ssize_t n = ::send(fd, data, size, MSG_NOSIGNAL);
    if (n <= 0) return;
    data += n;
    size -= static_cast<std::size_t>(n);
  }
}

// Reads until the peer closes; returns the bytes read.
std::size_t drain(int fd) {
  static thread_local std::vector<char> buffer(256 * 1024);
  std::size_t total = 0;
  for (;;) {
    const ssize_t n = ::read(fd, buffer.data(), buffer.size());
    if (n <= 0) return total;
    total += static_cast<std::size_t>(n);
  }
}

// Reads up to and including the blank line of a response head.
void read_head(int fd) {
  std::string head;
  char c = 0;
  while (head.find("\r\n\r\n") == std::string::npos && ::read(fd, &c, 1) == 1)
    head += c;
}

// Each connection: read the request head, then send `body_bytes` and close.
class Server {
 public:
  explicit Server(std::size_t body_bytes) : body_(body_bytes, 'x') {
    listener_ = listen_loopback(port_);
    thread_ = std::thread([this] {
      for (;;) {
        const int client = ::accept4(listener_, nullptr, nullptr, SOCK_CLOEXEC);
        if (client < 0) return;
        read_head(client);
        write_all(client, body_.data(), body_.size());
        ::close(client);
      }
    });
  }
  ~Server() {
    ::shutdown(listener_, SHUT_RDWR);
    ::close(listener_);
    thread_.join();
  }
  std::uint16_t port() const { return port_; }

 private:
  std::string body_;
  int listener_ = -1;
  std::uint16_t port_ = 0;
  std::thread thread_;
};

struct Proxy {
  Proxy()
      : proxy(io,
              loopr::egress::EgressPolicy(
                  loopr::egress::AddressPolicy::from_strings({"127.0.0.1/32"}).value(), {}),
              nullptr) {
    UniqueFd listener(listen_loopback(port));
    auto shared = std::make_shared<UniqueFd>(std::move(listener));
    asio::post(io, [this, shared] { proxy.serve("net", std::move(*shared)); });
    thread = std::thread([this] { io.run(); });
  }
  ~Proxy() {
    asio::post(io, [this] {
      proxy.stop();
      work.reset();
    });
    thread.join();
  }
  asio::io_context io;
  asio::executor_work_guard<asio::io_context::executor_type> work{io.get_executor()};
  loopr::egress::EgressProxy proxy;
  std::uint16_t port = 0;
  std::thread thread;
};

// One fetch of the server's body; through the proxy when proxy_port != 0.
std::size_t fetch(std::uint16_t server_port, std::uint16_t proxy_port) {
  const int fd = connect_loopback(proxy_port != 0 ? proxy_port : server_port);
  if (proxy_port != 0) {
    const std::string connect =
        "CONNECT 127.0.0.1:" + std::to_string(server_port) + " HTTP/1.1\r\n\r\n";
    write_all(fd, connect.data(), connect.size());
    read_head(fd);
  }
  const std::string request = "GET / HTTP/1.1\r\nHost: x\r\n\r\n";
  write_all(fd, request.data(), request.size());
  const std::size_t got = drain(fd);
  ::close(fd);
  return got;
}

double ms_since(Clock::time_point start) {
  return std::chrono::duration<double, std::milli>(Clock::now() - start).count();
}

int int_flag(int argc, char** argv, const char* name, int fallback) {
  for (int i = 1; i + 1 < argc; ++i) {
    if (std::strcmp(argv[i], name) == 0) return std::atoi(argv[i + 1]);
  }
  return fallback;
}

}  // namespace

int main(int argc, char** argv) {
  const int mb = int_flag(argc, argv, "--mb", 100);
  const int runs = int_flag(argc, argv, "--runs", 5);
  const int connections = int_flag(argc, argv, "--connections", 300);
  Proxy proxy;

  {
    Server server(static_cast<std::size_t>(mb) << 20);
    std::vector<double> direct_mb_s, proxied_mb_s;
    for (int run = 0; run < runs; ++run) {
      for (bool through : {false, true}) {
        const auto start = Clock::now();
        const std::size_t got = fetch(server.port(), through ? proxy.port : 0);
        const double seconds = ms_since(start) / 1000.0;
        const double rate = static_cast<double>(got) / (1 << 20) / seconds;
        (through ? proxied_mb_s : direct_mb_s).push_back(rate);
      }
    }
    const auto direct = loopr::bench::stats_of(direct_mb_s);
    const auto proxied = loopr::bench::stats_of(proxied_mb_s);
    std::printf("download %d MiB, %d runs each, alternating\n", mb, runs);
    std::printf("  direct      median %7.0f MiB/s (min %.0f, max %.0f)\n", direct.p50,
                *std::min_element(direct_mb_s.begin(), direct_mb_s.end()), direct.max);
    std::printf("  via proxy   median %7.0f MiB/s (min %.0f, max %.0f)\n", proxied.p50,
                *std::min_element(proxied_mb_s.begin(), proxied_mb_s.end()), proxied.max);
    std::printf("  ratio proxy/direct: %.2f\n", proxied.p50 / direct.p50);
  }
  {
    Server server(32);
    std::vector<double> direct_ms, proxied_ms;
    for (int i = 0; i < connections; ++i) {
      for (bool through : {false, true}) {
        const auto start = Clock::now();
        fetch(server.port(), through ? proxy.port : 0);
        (through ? proxied_ms : direct_ms).push_back(ms_since(start));
      }
    }
    const auto direct = loopr::bench::stats_of(direct_ms);
    const auto proxied = loopr::bench::stats_of(proxied_ms);
    std::printf("connect + request + 32-byte answer, %d connections each, alternating\n",
                connections);
    std::printf("  direct      p50 %.3f ms  p90 %.3f ms  p99 %.3f ms\n", direct.p50, direct.p90,
                direct.p99);
    std::printf("  via proxy   p50 %.3f ms  p90 %.3f ms  p99 %.3f ms\n", proxied.p50, proxied.p90,
                proxied.p99);
    std::printf("  added by the proxy (p50): %.3f ms\n", proxied.p50 - direct.p50);
  }
  return 0;
}
