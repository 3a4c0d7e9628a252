// ProxyRequest: the head of one request a job sends to the egress proxy, as
// an HTTP proxy client writes it (RFC 9110 §9.3.6, RFC 9112 §3.2):
//   "CONNECT host:port HTTP/1.1"      a tunnel (https, git over ssh through
//                                     a ProxyCommand, any TCP protocol);
//   "GET http://host[:port]/p HTTP/1.1"  plain http in absolute form.
// Credentials come from Proxy-Authorization: Basic (the job's proxy URL
// carries "loopr:<token>@"); the token only attributes the connection to a
// tool call, it grants nothing. Pure; thread-safe; fuzzed.
#pragma once

#include <cstdint>
#include <string>
#include <string_view>

#include "common/error.hpp"

namespace loopr::egress {

struct ProxyRequest {
  bool tunnel = false;  // CONNECT
  std::string host;     // as written, an IPv6 literal without its brackets
  std::uint16_t port = 0;
  std::string token;  // the password of Proxy-Authorization: Basic, or empty
  // Plain http only: the head to send to the server — origin-form target,
  // the proxy's own headers removed, "Connection: close" — ending in CRLFCRLF.
  std::string forward_head;
};

// The largest request head the proxy reads.
inline constexpr std::size_t kMaxRequestHead = 64 * 1024;

// `head` is the request up to and including its blank line. A head that is
// not a proxy request (origin-form, https:// in absolute form, no port in a
// CONNECT, userinfo in the URL, bad syntax) is an invalid_arguments error
// whose message says what to send instead.
Result<ProxyRequest> parse_proxy_request(std::string_view head);

}  // namespace loopr::egress
