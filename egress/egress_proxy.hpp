// EgressProxy: the only way out of the net and heavy lanes (DESIGN §7.9,
// SECURITY classes 21 and 22). Each of those lanes has a network namespace
// of its own with only `lo`; its runner listens on 127.0.0.1:<port> there and
// hands the listening socket to looprd (runner/egress_listener.hpp), which
// serves it here: the proxy's listener is reachable only from inside the
// lane, never from the host.
//
// Per connection: read the request head (HTTP proxy: CONNECT, or plain http
// in absolute form), judge the name (EgressPolicy), resolve it once, judge
// every address the lookup returned and connect to the first allowed one —
// the address judged is the address connected to, so DNS rebinding cannot
// pass — then relay bytes both ways until both sides are done. A refusal is
// an HTTP 403 whose body (and X-Loopr-Egress-Message header, for CONNECT
// clients that hide bodies) says which rule refused and which loopr.toml key
// would allow it. Every connection, allowed or refused, is reported once to
// the observer, with the tool call it belongs to when the job presented its
// token (attribute()).
//
// Threads: serve(), stop() and the observer run on the io thread; attribute()
// and forget() may be called from any thread. Coroutines keep the proxy's
// state alive, so destroying the proxy while the io_context still runs is
// safe: its listeners and connections are closed.
#pragma once

#include <asio/io_context.hpp>
#include <chrono>
#include <cstdint>
#include <functional>
#include <memory>
#include <string>
#include <vector>

#include "common/unique_fd.hpp"
#include "egress/egress_policy.hpp"

namespace loopr::egress {

struct NetConnection {
  std::string lane;
  std::string call_id;  // empty when the job presented no known token
  std::string host;     // as the job asked for it
  std::uint16_t port = 0;
  std::string address;  // the address connected to (or refused); empty if none
  bool allowed = false;
  // "allowed"; a refusal's rule ("loopback", "deny_domains", ...); or why an
  // allowed target was not reached: "unresolved", "unreachable"; or
  // "bad_request" for a head that is not a proxy request.
  std::string rule;
  std::string message;           // the refusal or failure, as the job heard it
  std::string allow_key;         // a policy refusal: the loopr.toml key that would allow it
  std::uint64_t bytes_sent = 0;  // job -> server
  std::uint64_t bytes_received = 0;
};

struct EgressProxyOptions {
  std::chrono::milliseconds head_timeout{30'000};     // accept -> complete request head
  std::chrono::milliseconds connect_timeout{10'000};  // lookup + connect
  // Connections open at once per lane (two of looprd's fds each); beyond
  // it a job's new connection gets a 503 at once, so no job can take all of
  // looprd's fds.
  std::size_t max_connections_per_lane = 256;
  // After one side of a relayed connection ends, how long the other side
  // may still send before both are closed.
  std::chrono::milliseconds half_closed_linger{30'000};
  // Tests only: answers name lookups instead of DNS (a name that rebinds
  // between lookups, SECURITY class 22). Called on the io thread; empty: DNS.
  std::function<Result<std::vector<IpAddress>>(const std::string& host)> resolve;
};

struct ProxyState;  // egress_proxy.cpp: shared with the connections' coroutines

class EgressProxy {
 public:
  using Observer = std::function<void(const NetConnection&)>;

  EgressProxy(asio::io_context& io, EgressPolicy policy, Observer observer,
              EgressProxyOptions options = {});
  ~EgressProxy();
  EgressProxy(const EgressProxy&) = delete;
  EgressProxy& operator=(const EgressProxy&) = delete;

  // Serves `listener`, a listening TCP socket of `lane`; a lane's previous
  // listener (a runner that was restarted) is closed. Connections already
  // open go on.
  void serve(const std::string& lane, UniqueFd listener);
  // Connections that present `token` belong to `call_id` until forget().
  // `also_allowed`: networks this call may reach beyond the lane's policy
  // (web_fetch's and web_search's own allowed_networks in loopr.toml); the
  // name rules still apply.
  void attribute(const std::string& token, const std::string& call_id,
                 std::vector<NetworkRange> also_allowed = {});
  // Ends the attribution; returns the connections of the call that the
  // proxy refused or could not make (a bad request head aside), at most
  // kMaxRefusalsKept, first ones first, so the call's result can say why.
  std::vector<NetConnection> forget(const std::string& token);
  static constexpr std::size_t kMaxRefusalsKept = 16;
  // Closes every listener and connection.
  void stop();

 private:
  std::shared_ptr<ProxyState> state_;
};

}  // namespace loopr::egress
