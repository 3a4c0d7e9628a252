// EgressProxy with real sockets: a listener like the one a lane's runner
// passes to looprd, served on an io thread; clients speak to it as curl
// does; an HttpTestServer stands for the internet (allowed by a test-only
// allowed_networks) or for the host's loopback (refused).
#include "egress/egress_proxy.hpp"

#include <arpa/inet.h>
#include <gtest/gtest.h>
#include <netinet/in.h>
#include <poll.h>
#include <sys/socket.h>
#include <unistd.h>

#include <asio/executor_work_guard.hpp>
#include <asio/post.hpp>
#include <atomic>
#include <future>
#include <mutex>
#include <thread>

#include "tests/support/http_test_server.hpp"

namespace loopr::egress {
namespace {

using test::HttpTestServer;

class ProxyFixture {
 public:
  explicit ProxyFixture(std::vector<std::string> allowed_networks, EgressProxyOptions options = {})
      : proxy_(
            io_,
            EgressPolicy(
                AddressPolicy::from_strings(allowed_networks).value(),
                {{"net", {DomainList(), DomainList::parse({"*.denied.test"}, "d").value()}}}),
            [this](const NetConnection& connection) {
              std::lock_guard lock(mutex_);
              seen_.push_back(connection);
            },
            std::move(options)) {
    UniqueFd listener(::socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0));
    sockaddr_in address{};
    address.sin_family = AF_INET;
    address.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    EXPECT_EQ(::bind(listener.get(), reinterpret_cast<sockaddr*>(&address), sizeof address), 0);
    EXPECT_EQ(::listen(listener.get(), 16), 0);
    socklen_t length = sizeof address;
    ::getsockname(listener.get(), reinterpret_cast<sockaddr*>(&address), &length);
    port_ = ntohs(address.sin_port);
    auto shared = std::make_shared<UniqueFd>(std::move(listener));
    asio::post(io_, [this, shared] { proxy_.serve("net", std::move(*shared)); });
    thread_ = std::thread([this] { io_.run(); });
  }
  ~ProxyFixture() {
    stop();
    work_.reset();
    thread_.join();
  }
  void stop() {
    std::promise<void> stopped;
    asio::post(io_, [&] {
      proxy_.stop();
      stopped.set_value();
    });
    stopped.get_future().wait();
  }
  EgressProxy& proxy() { return proxy_; }

  // Connects, sends `request`, reads until the proxy or the server closes.
  // `then` is sent after the first reply (a tunnel's payload).
  std::string exchange(const std::string& request, const std::string& then = "") const {
    const int fd = ::socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
    sockaddr_in address{};
    address.sin_family = AF_INET;
    address.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    address.sin_port = htons(port_);
    if (::connect(fd, reinterpret_cast<sockaddr*>(&address), sizeof address) != 0) {
      ::close(fd);
      return "connect failed";
    }
    std::string reply;
    auto read_some = [&]() {
      pollfd wait{fd, POLLIN, 0};
      if (::poll(&wait, 1, 10'000) <= 0) return false;
      char buffer[4096];
      const ssize_t n = ::read(fd, buffer, sizeof buffer);
      if (n <= 0) return false;
      reply.append(buffer, static_cast<std::size_t>(n));
      return true;
    };
    ::send(fd, request.data(), request.size(), MSG_NOSIGNAL);
    if (!then.empty()) {
      while (reply.find("\r\n\r\n") == std::string::npos && read_some()) {
      }
      ::send(fd, then.data(), then.size(), MSG_NOSIGNAL);
    }
    while (read_some()) {
    }
    ::close(fd);
    return reply;
  }

  // Opens a CONNECT tunnel and keeps it: the fd once the proxy said 200,
  // -1 if it answered anything else.
  int open_tunnel(const std::string& request) const {
    const int fd = ::socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
    sockaddr_in address{};
    address.sin_family = AF_INET;
    address.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    address.sin_port = htons(port_);
    if (::connect(fd, reinterpret_cast<sockaddr*>(&address), sizeof address) != 0) {
      ::close(fd);
      return -1;
    }
    ::send(fd, request.data(), request.size(), MSG_NOSIGNAL);
    std::string head;
    char c = 0;
    while (head.find("\r\n\r\n") == std::string::npos && ::read(fd, &c, 1) == 1)
      head += c;
    if (head.rfind("HTTP/1.1 200", 0) != 0) {
      ::close(fd);
      return -1;
    }
    return fd;
  }

  // Waits until the proxy has reported `count` connections.
  std::vector<NetConnection> seen(std::size_t count) const {
    for (int i = 0; i < 500; ++i) {
      {
        std::lock_guard lock(mutex_);
        if (seen_.size() >= count) return seen_;
      }
      std::this_thread::sleep_for(std::chrono::milliseconds(10));
    }
    std::lock_guard lock(mutex_);
    return seen_;
  }

 private:
  asio::io_context io_;
  asio::executor_work_guard<asio::io_context::executor_type> work_{io_.get_executor()};
  EgressProxy proxy_;
  std::uint16_t port_ = 0;
  mutable std::mutex mutex_;
  std::vector<NetConnection> seen_;
  std::thread thread_;
};

const std::string kToken = "Proxy-Authorization: Basic bG9vcHI6YWJjMTIz\r\n";  // loopr:abc123

TEST(EgressProxy, PlainHttpToAnAllowedAddressIsRelayedAndReportedWithItsCall) {
  HttpTestServer server;
  server.route("/page", {200, "text/plain", "hello from the server", ""});
  ProxyFixture fixture({"127.0.0.1/32"});
  fixture.proxy().attribute("abc123", "call-7");
  const std::string reply = fixture.exchange("GET " + server.base_url() +
                                             "/page HTTP/1.1\r\nHost: x\r\n" + kToken + "\r\n");
  EXPECT_EQ(reply.rfind("HTTP/1.1 200 OK\r\n", 0), 0u) << reply;
  EXPECT_NE(reply.find("hello from the server"), std::string::npos);
  const auto seen = fixture.seen(1);
  ASSERT_EQ(seen.size(), 1u);
  EXPECT_TRUE(seen[0].allowed);
  EXPECT_EQ(seen[0].rule, "allowed");
  EXPECT_EQ(seen[0].call_id, "call-7");
  EXPECT_EQ(seen[0].lane, "net");
  EXPECT_EQ(seen[0].host, "127.0.0.1");
  EXPECT_EQ(seen[0].address, "127.0.0.1");
  EXPECT_EQ(seen[0].port, server.port());
  EXPECT_GT(seen[0].bytes_received, 20u);
  EXPECT_GT(seen[0].bytes_sent, 0u);
  // Once forgotten, the token names no call.
  fixture.proxy().forget("abc123");
  fixture.exchange("GET " + server.base_url() + "/page HTTP/1.1\r\n" + kToken + "\r\n");
  EXPECT_EQ(fixture.seen(2).at(1).call_id, "");
}

// Issue 25: forget() hands back what the proxy refused for the call, so the
// call's result can say why; nothing of connections without its token.
TEST(EgressProxy, ForgetReturnsTheCallsRefusalsWithTheKeyThatAllowsThem) {
  HttpTestServer server;
  server.route("/", {200, "text/plain", "secret", ""});
  ProxyFixture fixture({});
  fixture.proxy().attribute("abc123", "call-9");
  const std::string port = std::to_string(server.port());
  fixture.exchange("CONNECT 127.0.0.1:" + port + " HTTP/1.1\r\n" + kToken + "\r\n");
  fixture.exchange("CONNECT 127.0.0.1:" + port + " HTTP/1.1\r\n\r\n");  // no token
  fixture.seen(2);
  const auto refused = fixture.proxy().forget("abc123");
  ASSERT_EQ(refused.size(), 1u);
  EXPECT_EQ(refused[0].host, "127.0.0.1");
  EXPECT_EQ(refused[0].rule, "loopback");
  EXPECT_EQ(refused[0].allow_key, "[egress] allowed_networks");
  EXPECT_EQ(refused[0].call_id, "call-9");
  EXPECT_TRUE(fixture.proxy().forget("abc123").empty());
  EXPECT_EQ(server.connections(), 0);
}

TEST(EgressProxy, AConnectTunnelCarriesBytesBothWays) {
  HttpTestServer server;
  server.route("/tunnelled", {200, "text/plain", "through the tunnel", ""});
  ProxyFixture fixture({"127.0.0.1/32"});
  const std::string reply =
      fixture.exchange("CONNECT localhost:" + std::to_string(server.port()) + " HTTP/1.1\r\n\r\n",
                       "GET /tunnelled HTTP/1.1\r\nHost: localhost\r\n\r\n");
  EXPECT_EQ(reply.rfind("HTTP/1.1 200 Connection established\r\n\r\nHTTP/1.1 200 OK", 0), 0u)
      << reply;
  EXPECT_NE(reply.find("through the tunnel"), std::string::npos);
  const auto seen = fixture.seen(1);
  ASSERT_EQ(seen.size(), 1u);
  // localhost has ::1 and 127.0.0.1; only the allowed one was connected to.
  EXPECT_EQ(seen[0].address, "127.0.0.1");
  EXPECT_EQ(seen[0].host, "localhost");
}

TEST(EgressProxy, ARefusalIsA403ThatSaysWhichRuleAndWhichKeyAndReachesNoServer) {
  HttpTestServer server;
  server.route("/", {200, "text/plain", "secret", ""});
  ProxyFixture fixture({});
  const std::string port = std::to_string(server.port());
  const std::string plain = fixture.exchange("GET http://127.0.0.1:" + port + "/ HTTP/1.1\r\n\r\n");
  EXPECT_EQ(plain.rfind("HTTP/1.1 403 Forbidden\r\n", 0), 0u) << plain;
  EXPECT_NE(plain.find("X-Loopr-Egress: loopback\r\n"), std::string::npos) << plain;
  EXPECT_NE(plain.find("\r\n\r\nloopr's egress proxy refused 127.0.0.1:" + port +
                       " (lane net): 127.0.0.1 is loopback"),
            std::string::npos)
      << plain;
  EXPECT_NE(plain.find("\"127.0.0.1/32\" to [egress] allowed_networks"), std::string::npos);
  const std::string tunnel = fixture.exchange("CONNECT 169.254.169.254:80 HTTP/1.1\r\n\r\n");
  EXPECT_EQ(tunnel.rfind("HTTP/1.1 403 Forbidden\r\n", 0), 0u) << tunnel;
  EXPECT_NE(tunnel.find("X-Loopr-Egress-Message: loopr's egress proxy refused 169.254.169.254:80"),
            std::string::npos)
      << tunnel;
  const std::string denied = fixture.exchange("CONNECT www.denied.test:443 HTTP/1.1\r\n\r\n");
  EXPECT_NE(denied.find("X-Loopr-Egress: deny_domains"), std::string::npos) << denied;
  const auto seen = fixture.seen(3);
  ASSERT_EQ(seen.size(), 3u);
  EXPECT_EQ(seen[0].rule, "loopback");
  EXPECT_EQ(seen[1].rule, "link-local");
  EXPECT_EQ(seen[2].rule, "deny_domains");
  for (const auto& connection : seen)
    EXPECT_FALSE(connection.allowed);
  EXPECT_EQ(server.connections(), 0);
}

TEST(EgressProxy, BadRequestsAndUnreachableTargetsGetTheirOwnAnswers) {
  ProxyFixture fixture({"127.0.0.1/32"});
  const std::string bad = fixture.exchange("GET /relative HTTP/1.1\r\nHost: x\r\n\r\n");
  EXPECT_EQ(bad.rfind("HTTP/1.1 400 Bad Request\r\n", 0), 0u) << bad;
  EXPECT_NE(bad.find("not an absolute http:// URL"), std::string::npos);
  // A port nothing listens on, at an allowed address.
  const int probe = ::socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
  sockaddr_in address{};
  address.sin_family = AF_INET;
  address.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  ::bind(probe, reinterpret_cast<sockaddr*>(&address), sizeof address);
  socklen_t length = sizeof address;
  ::getsockname(probe, reinterpret_cast<sockaddr*>(&address), &length);
  ::close(probe);
  const std::string closed = fixture.exchange(
      "CONNECT 127.0.0.1:" + std::to_string(ntohs(address.sin_port)) + " HTTP/1.1\r\n\r\n");
  EXPECT_EQ(closed.rfind("HTTP/1.1 502 Bad Gateway\r\n", 0), 0u) << closed;
  EXPECT_NE(closed.find("could not connect"), std::string::npos) << closed;
  const std::string oversized =
      fixture.exchange("GET http://x/ HTTP/1.1\r\nX: " + std::string(70'000, 'a') + "\r\n\r\n");
  EXPECT_EQ(oversized.rfind("HTTP/1.1 431", 0), 0u) << oversized.substr(0, 100);
  const auto seen = fixture.seen(3);
  ASSERT_EQ(seen.size(), 3u);
  EXPECT_EQ(seen[0].rule, "bad_request");
  EXPECT_EQ(seen[1].rule, "unreachable");
  EXPECT_TRUE(seen[1].allowed);  // the policy allowed it; the target was not there
  EXPECT_EQ(seen[2].rule, "bad_request");
}

TEST(EgressProxy, ACallsOwnAllowanceOpensItsConnectionsOnly) {
  HttpTestServer server;
  server.route("/", {200, "text/plain", "for one call", ""});
  ProxyFixture fixture({});
  fixture.proxy().attribute("abc123", "call-1", {NetworkRange::parse("127.0.0.1/32").value()});
  const std::string request = "GET " + server.base_url() + "/ HTTP/1.1\r\n";
  const std::string with_token = fixture.exchange(request + kToken + "\r\n");
  EXPECT_NE(with_token.find("for one call"), std::string::npos) << with_token;
  const std::string without = fixture.exchange(request + "\r\n");
  EXPECT_EQ(without.rfind("HTTP/1.1 403", 0), 0u) << without;
  EXPECT_EQ(server.connections(), 1);
}

// SECURITY class 22: a name that resolves to an allowed address when looked
// up and to a loopback one the next time. Each connection is looked up
// once, and the address judged is the one connected to: the first reaches
// the allowed server, the rebound one is refused, and the private server
// never sees a connection.
TEST(EgressProxy, ARebindingNameIsJudgedOnTheAddressItIsConnectedTo) {
  HttpTestServer allowed("127.0.0.2");  // stands for a public address
  allowed.route("/", {200, "text/plain", "the public page", ""});
  HttpTestServer loopback("127.0.0.1");
  loopback.route("/", {200, "text/plain", "private", ""});
  std::atomic<int> lookups{0};
  EgressProxyOptions options;
  options.resolve = [&](const std::string& host) -> Result<std::vector<IpAddress>> {
    EXPECT_EQ(host, "rebind.test");
    const char* answer = lookups++ == 0 ? "127.0.0.2" : "127.0.0.1";
    return std::vector<IpAddress>{IpAddress::parse(answer).value()};
  };
  ProxyFixture fixture({"127.0.0.2/32"}, std::move(options));
  // The two servers listen on different ports; the job asks for each by the
  // rebinding name, so only the address decides where a connection goes.
  const std::string first = fixture.exchange(
      "GET http://rebind.test:" + std::to_string(allowed.port()) + "/ HTTP/1.1\r\n\r\n");
  EXPECT_NE(first.find("the public page"), std::string::npos) << first;
  const std::string second = fixture.exchange(
      "GET http://rebind.test:" + std::to_string(loopback.port()) + "/ HTTP/1.1\r\n\r\n");
  EXPECT_EQ(second.rfind("HTTP/1.1 403", 0), 0u) << second;
  EXPECT_NE(second.find("127.0.0.1 (which rebind.test resolves to) is loopback"), std::string::npos)
      << second;
  EXPECT_EQ(lookups.load(), 2);  // one lookup per connection, never a second one to connect
  const auto seen = fixture.seen(2);
  ASSERT_EQ(seen.size(), 2u);
  EXPECT_EQ(seen[0].address, "127.0.0.2");
  EXPECT_EQ(seen[1].address, "127.0.0.1");
  EXPECT_EQ(seen[1].rule, "loopback");
  EXPECT_EQ(allowed.connections(), 1);
  EXPECT_EQ(loopback.connections(), 0);
}

// No job can take all of looprd's fds: beyond the lane's cap a new
// connection is a 503 at once; once one closes, there is room again.
TEST(EgressProxy, ConnectionsBeyondTheLanesCapAreRefusedUntilOneCloses) {
  // An upstream that accepts (the kernel's backlog) and never answers.
  const int upstream = ::socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
  sockaddr_in address{};
  address.sin_family = AF_INET;
  address.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  ASSERT_EQ(::bind(upstream, reinterpret_cast<sockaddr*>(&address), sizeof address), 0);
  ASSERT_EQ(::listen(upstream, 16), 0);
  socklen_t length = sizeof address;
  ::getsockname(upstream, reinterpret_cast<sockaddr*>(&address), &length);
  const std::string target =
      "CONNECT 127.0.0.1:" + std::to_string(ntohs(address.sin_port)) + " HTTP/1.1\r\n\r\n";
  EgressProxyOptions options;
  options.max_connections_per_lane = 2;
  options.half_closed_linger = std::chrono::milliseconds(100);  // the silent upstream's end
  ProxyFixture fixture({"127.0.0.1/32"}, std::move(options));
  std::vector<int> tunnels;
  for (int i = 0; i < 2; ++i) {
    const int fd = fixture.open_tunnel(target);
    ASSERT_GE(fd, 0);
    tunnels.push_back(fd);
  }
  const std::string over = fixture.exchange(target);
  EXPECT_EQ(over.rfind("HTTP/1.1 503 Service Unavailable\r\n", 0), 0u) << over;
  EXPECT_NE(over.find("2 connections of this lane are open already"), std::string::npos) << over;
  ::close(tunnels.back());
  tunnels.pop_back();
  // The proxy sees the close when it next reads: give it a moment.
  std::string again;
  for (int i = 0; i < 100; ++i) {
    const int fd = fixture.open_tunnel(target);
    if (fd >= 0) {
      tunnels.push_back(fd);
      again = "opened";
      break;
    }
    std::this_thread::sleep_for(std::chrono::milliseconds(20));
  }
  EXPECT_EQ(again, "opened");
  for (int fd : tunnels)
    ::close(fd);
  ::close(upstream);
  const auto seen = fixture.seen(1);
  ASSERT_FALSE(seen.empty());
  EXPECT_EQ(seen[0].rule, "too_many_connections");
}

TEST(EgressProxy, StopClosesTheListener) {
  ProxyFixture fixture({});
  fixture.stop();
  EXPECT_EQ(fixture.exchange("CONNECT example.com:443 HTTP/1.1\r\n\r\n"), "connect failed");
}

}  // namespace
}  // namespace loopr::egress
