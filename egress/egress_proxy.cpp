#include "egress/egress_proxy.hpp"

#include <sys/socket.h>

#include <algorithm>
#include <array>
#include <asio/co_spawn.hpp>
#include <asio/detached.hpp>
#include <asio/experimental/awaitable_operators.hpp>
#include <asio/ip/tcp.hpp>
#include <asio/read_until.hpp>
#include <asio/redirect_error.hpp>
#include <asio/steady_timer.hpp>
#include <asio/use_awaitable.hpp>
#include <asio/write.hpp>
#include <functional>
#include <map>
#include <mutex>
#include <set>

#include "egress/proxy_request.hpp"

namespace loopr::egress {

using asio::awaitable;
using asio::redirect_error;
using asio::use_awaitable;
using asio::ip::tcp;
using namespace asio::experimental::awaitable_operators;

namespace {

constexpr std::size_t kRelayChunk = 64 * 1024;

// One line, safe in a header field.
std::string header_safe(std::string text) {
  for (char& c : text) {
    if (c == '\r' || c == '\n' || static_cast<unsigned char>(c) < 0x20) c = ' ';
  }
  return text;
}

std::string proxy_response(int status, const char* reason, const std::string& rule,
                           const std::string& message) {
  const std::string body = message + "\n";
  return "HTTP/1.1 " + std::to_string(status) + " " + reason +
         "\r\nContent-Type: text/plain; charset=utf-8\r\nX-Loopr-Egress: " + header_safe(rule) +
         "\r\nX-Loopr-Egress-Message: " + header_safe(message) +
         "\r\nContent-Length: " + std::to_string(body.size()) + "\r\nConnection: close\r\n\r\n" +
         body;
}

// Closes the sockets when the timer fires; cancelling the timer disarms it.
void arm(asio::steady_timer& timer, std::chrono::milliseconds after, tcp::socket& a,
         tcp::socket& b) {
  timer.expires_after(after);
  timer.async_wait([&a, &b](const std::error_code& ec) {
    if (ec) return;  // cancelled: the sockets may be gone
    std::error_code ignored;
    a.close(ignored);
    b.close(ignored);
  });
}

}  // namespace

struct ProxyState {
  ProxyState(asio::io_context& context, EgressPolicy rules, EgressProxy::Observer watcher,
             EgressProxyOptions opts)
      : io(context), policy(std::move(rules)), observer(std::move(watcher)), options(opts) {}

  asio::io_context& io;
  const EgressPolicy policy;
  const EgressProxy::Observer observer;
  const EgressProxyOptions options;
  bool stopped = false;
  std::map<std::string, std::shared_ptr<tcp::acceptor>> listeners;  // by lane
  std::set<tcp::socket*> open_sockets;                              // for stop()
  std::map<std::string, std::size_t> open_connections;              // by lane

  struct Call {
    std::string id;
    std::vector<NetworkRange> also_allowed;
    std::vector<NetConnection> refused = {};
  };
  std::mutex tokens_mutex;
  std::map<std::string, Call> calls_by_token;

  Call call_for(const std::string& token) {
    if (token.empty()) return {};
    std::lock_guard lock(tokens_mutex);
    const auto found = calls_by_token.find(token);
    return found == calls_by_token.end() ? Call{} : found->second;
  }

  // Kept for the call of `token` (EgressProxy::forget), if it has one.
  void keep_refusal(const std::string& token, const NetConnection& connection) {
    if (token.empty() || connection.allowed || connection.rule == "bad_request") return;
    std::lock_guard lock(tokens_mutex);
    const auto found = calls_by_token.find(token);
    if (found == calls_by_token.end()) return;
    if (found->second.refused.size() < EgressProxy::kMaxRefusalsKept) {
      found->second.refused.push_back(connection);
    }
  }

  void report(const NetConnection& connection) {
    if (observer) observer(connection);
  }
};

namespace {

// Keeps a socket in State::open_sockets while it lives in a coroutine frame.
class Tracked {
 public:
  Tracked(std::set<tcp::socket*>& open, tcp::socket& socket) : open_(open), socket_(socket) {
    open_.insert(&socket_);
  }
  ~Tracked() { open_.erase(&socket_); }
  Tracked(const Tracked&) = delete;
  Tracked& operator=(const Tracked&) = delete;

 private:
  std::set<tcp::socket*>& open_;
  tcp::socket& socket_;
};

// Copies `from` to `to` until `from` ends; then half-closes `to` and calls
// `ended` (which gives the other direction a last while). An error on
// either side closes both, which ends the other direction too.
awaitable<void> pump(tcp::socket& from, tcp::socket& to, std::uint64_t& bytes,
                     const std::function<void()>& ended) {
  std::array<char, kRelayChunk> data;
  for (;;) {
    std::error_code ec;
    const std::size_t n =
        co_await from.async_read_some(asio::buffer(data), redirect_error(use_awaitable, ec));
    if (ec == asio::error::eof) {
      to.shutdown(tcp::socket::shutdown_send, ec);
      ended();
      co_return;
    }
    if (!ec) {
      co_await asio::async_write(to, asio::buffer(data.data(), n),
                                 redirect_error(use_awaitable, ec));
    }
    if (ec) {
      std::error_code ignored;
      from.close(ignored);
      to.close(ignored);
      co_return;
    }
    bytes += n;
  }
}

awaitable<void> reply(tcp::socket& client, const std::string& response) {
  std::error_code ec;
  co_await asio::async_write(client, asio::buffer(response), redirect_error(use_awaitable, ec));
  client.shutdown(tcp::socket::shutdown_send, ec);
}

awaitable<void> serve_connection(std::shared_ptr<ProxyState> state, std::string lane,
                                 tcp::socket client) {
  auto executor = co_await asio::this_coro::executor;
  tcp::socket upstream(executor);
  Tracked track_client(state->open_sockets, client);
  Tracked track_upstream(state->open_sockets, upstream);
  asio::steady_timer deadline(executor);
  arm(deadline, state->options.head_timeout, client, upstream);

  NetConnection record;
  record.lane = lane;
  std::string token;  // the job's, once the head is read
  auto refuse = [&](int status, const char* reason, std::string rule, std::string message,
                    std::string allow_key = {}) -> awaitable<void> {
    record.rule = std::move(rule);
    record.message = std::move(message);
    record.allow_key = std::move(allow_key);
    state->keep_refusal(token, record);
    state->report(record);
    co_await reply(client, proxy_response(status, reason, record.rule, record.message));
  };

  std::string buffer;
  std::error_code ec;
  const std::size_t head_size =
      co_await asio::async_read_until(client, asio::dynamic_buffer(buffer, kMaxRequestHead),
                                      "\r\n\r\n", redirect_error(use_awaitable, ec));
  if (ec) {
    if (ec == asio::error::not_found) {
      co_await refuse(431, "Request Header Fields Too Large", "bad_request",
                      "loopr's egress proxy reads request heads of at most 64 KiB");
    }
    co_return;  // the job went away, or sent nothing in time
  }
  auto request = parse_proxy_request(std::string_view(buffer).substr(0, head_size));
  if (!request) {
    co_await refuse(400, "Bad Request", "bad_request", request.error().message);
    co_return;
  }
  record.host = request->host;
  record.port = request->port;
  token = request->token;
  const ProxyState::Call call = state->call_for(request->token);
  record.call_id = call.id;
  if (auto refusal = state->policy.judge_name(lane, request->host, request->port)) {
    co_await refuse(403, "Forbidden", refusal->rule, refusal->message, refusal->allow_key);
    co_return;
  }

  arm(deadline, state->options.connect_timeout, client, upstream);
  // The one lookup of this connection: what it returns is judged, and the
  // address judged is the one connected to.
  std::vector<tcp::endpoint> found;
  if (state->options.resolve) {
    auto addresses = state->options.resolve(request->host);
    if (!addresses) {
      ec = asio::error::host_not_found;
    } else {
      for (const IpAddress& address : *addresses) {
        found.emplace_back(asio::ip::make_address(address.to_string()), request->port);
      }
    }
  } else {
    tcp::resolver resolver(executor);
    const auto results = co_await resolver.async_resolve(
        request->host, std::to_string(request->port), tcp::resolver::numeric_service,
        redirect_error(use_awaitable, ec));
    for (const auto& entry : results)
      found.push_back(entry.endpoint());
  }
  if (ec) {
    co_await refuse(502, "Bad Gateway", "unresolved",
                    "loopr's egress proxy cannot resolve " + request->host + ": " + ec.message());
    co_return;
  }
  std::optional<tcp::endpoint> chosen;
  std::optional<Refusal> first_refusal;
  for (const tcp::endpoint& endpoint : found) {
    const auto address =
        IpAddress::from_sockaddr(endpoint.data(), static_cast<socklen_t>(endpoint.size()));
    if (!address) continue;
    auto refusal = state->policy.judge_address(lane, request->host, request->port, *address);
    if (refusal &&
        std::any_of(call.also_allowed.begin(), call.also_allowed.end(),
                    [&](const NetworkRange& range) { return range.contains(*address); })) {
      refusal.reset();
    }
    if (refusal) {
      if (!first_refusal) {
        first_refusal = std::move(refusal);
        record.address = address->to_string();
      }
      continue;
    }
    chosen = endpoint;
    record.address = address->to_string();
    break;
  }
  if (!chosen) {
    if (first_refusal) {
      co_await refuse(403, "Forbidden", first_refusal->rule, first_refusal->message,
                      first_refusal->allow_key);
    } else {
      co_await refuse(502, "Bad Gateway", "unresolved",
                      "loopr's egress proxy found no address for " + request->host);
    }
    co_return;
  }
  co_await upstream.async_connect(*chosen, redirect_error(use_awaitable, ec));
  if (ec) {
    record.allowed = true;
    co_await refuse(502, "Bad Gateway", "unreachable",
                    "loopr's egress proxy could not connect to " + record.address + " port " +
                        std::to_string(request->port) + " for " + request->host + ": " +
                        ec.message());
    co_return;
  }
  deadline.cancel();  // an open tunnel lasts as long as the job lets it
  record.allowed = true;
  record.rule = "allowed";

  const std::string_view early = std::string_view(buffer).substr(head_size);
  std::string first_bytes;
  if (request->tunnel) {
    const std::string established = "HTTP/1.1 200 Connection established\r\n\r\n";
    co_await asio::async_write(client, asio::buffer(established),
                               redirect_error(use_awaitable, ec));
    first_bytes = early;
  } else {
    first_bytes = request->forward_head + std::string(early);
  }
  if (!ec && !first_bytes.empty()) {
    co_await asio::async_write(upstream, asio::buffer(first_bytes),
                               redirect_error(use_awaitable, ec));
    record.bytes_sent += first_bytes.size();
  }
  if (!ec) {
    // Once one side is done, the other has half_closed_linger to finish:
    // a peer that neither answers nor closes cannot hold the connection
    // (and a share of looprd's fds) for good.
    const std::function<void()> ended = [&] {
      arm(deadline, state->options.half_closed_linger, client, upstream);
    };
    co_await (pump(client, upstream, record.bytes_sent, ended) &&
              pump(upstream, client, record.bytes_received, ended));
  }
  state->report(record);
}

// A connection over the lane's cap: a 503 without reading the request.
awaitable<void> refuse_over_cap(std::shared_ptr<ProxyState> state, std::string lane,
                                tcp::socket client) {
  NetConnection record;
  record.lane = lane;
  record.rule = "too_many_connections";
  record.message = "loopr's egress proxy refused a connection of lane " + lane + ": " +
                   std::to_string(state->options.max_connections_per_lane) +
                   " connections of this lane are open already; close some, or open fewer at once";
  state->report(record);
  co_await reply(client, proxy_response(503, "Service Unavailable", record.rule, record.message));
}

awaitable<void> accept_loop(std::shared_ptr<ProxyState> state, std::string lane,
                            std::shared_ptr<tcp::acceptor> acceptor) {
  auto executor = co_await asio::this_coro::executor;
  for (;;) {
    std::error_code ec;
    tcp::socket client = co_await acceptor->async_accept(redirect_error(use_awaitable, ec));
    if (!acceptor->is_open() || state->stopped || ec == asio::error::operation_aborted) co_return;
    if (ec) {
      // Out of fds or similar: pause rather than spin.
      asio::steady_timer pause(executor, std::chrono::milliseconds(100));
      co_await pause.async_wait(redirect_error(use_awaitable, ec));
      continue;
    }
    std::size_t& open = state->open_connections[lane];
    if (open >= state->options.max_connections_per_lane) {
      asio::co_spawn(executor, refuse_over_cap(state, lane, std::move(client)), asio::detached);
      continue;
    }
    ++open;
    asio::co_spawn(
        executor,
        [](std::shared_ptr<ProxyState> shared, std::string name,
           tcp::socket socket) -> awaitable<void> {
          co_await serve_connection(shared, name, std::move(socket));
          --shared->open_connections[name];
        }(state, lane, std::move(client)),
        asio::detached);
  }
}

}  // namespace

EgressProxy::EgressProxy(asio::io_context& io, EgressPolicy policy, Observer observer,
                         EgressProxyOptions options)
    : state_(std::make_shared<ProxyState>(io, std::move(policy), std::move(observer), options)) {}

EgressProxy::~EgressProxy() {
  stop();
}

void EgressProxy::serve(const std::string& lane, UniqueFd listener) {
  if (state_->stopped) return;
  sockaddr_storage address{};
  socklen_t length = sizeof address;
  ::getsockname(listener.get(), reinterpret_cast<sockaddr*>(&address), &length);
  const tcp protocol = address.ss_family == AF_INET6 ? tcp::v6() : tcp::v4();
  auto acceptor = std::make_shared<tcp::acceptor>(state_->io);
  std::error_code ec;
  acceptor->assign(protocol, listener.release(), ec);
  if (ec) return;
  auto& slot = state_->listeners[lane];
  if (slot) slot->close(ec);
  slot = acceptor;
  asio::co_spawn(state_->io, accept_loop(state_, lane, acceptor), asio::detached);
}

void EgressProxy::attribute(const std::string& token, const std::string& call_id,
                            std::vector<NetworkRange> also_allowed) {
  if (token.empty()) return;
  std::lock_guard lock(state_->tokens_mutex);
  state_->calls_by_token[token] = {call_id, std::move(also_allowed)};
}

std::vector<NetConnection> EgressProxy::forget(const std::string& token) {
  std::lock_guard lock(state_->tokens_mutex);
  const auto found = state_->calls_by_token.find(token);
  if (found == state_->calls_by_token.end()) return {};
  std::vector<NetConnection> refused = std::move(found->second.refused);
  state_->calls_by_token.erase(found);
  return refused;
}

void EgressProxy::stop() {
  state_->stopped = true;
  std::error_code ec;
  for (auto& [lane, acceptor] : state_->listeners)
    acceptor->close(ec);
  state_->listeners.clear();
  for (tcp::socket* socket : state_->open_sockets)
    socket->close(ec);
}

}  // namespace loopr::egress
