// The lane's end of the egress proxy (DESIGN §7.9). A net or heavy lane has
// a network namespace of its own with only `lo`; inside it the runner
// listens on 127.0.0.1:<port> and passes the listening socket to looprd over
// the egress link it inherited (--egress-fd), then closes its own copies.
// looprd's EgressProxy accepts the jobs' connections on it: the proxy needs
// no process inside the sandbox, and no host process can reach it.
#pragma once

#include <cstdint>
#include <string>

#include "common/error.hpp"

namespace loopr::runner {

inline constexpr std::uint16_t kDefaultEgressPort = 3128;

// In the lane's network namespace: bind, listen, pass to looprd, close.
Result<void> offer_egress_listener(int egress_link, std::uint16_t port);

// The proxy URL a job's tools use ("http://loopr:TOKEN@127.0.0.1:PORT" or,
// without a usable token, "http://127.0.0.1:PORT"). A token is used only if
// it is 1-128 characters of [0-9A-Za-z_-], so it is safe in a URL.
std::string egress_proxy_url(std::uint16_t port, const std::string& token);

}  // namespace loopr::runner
