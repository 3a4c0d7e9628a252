// http_request: one HTTP request (GET, or POST with a body) to an http(s)
// URL with libcurl; web_fetch and web_search share it, and it is the one
// place that decides how loopr-fetch connects. It follows redirects itself
// so that every hop is checked: the URL's scheme (http, https only), and
// the address every connection reaches, after DNS resolution
// (egress/address_policy.hpp) — by the lane's egress proxy when the runner
// set LOOPR_EGRESS_PROXY (a net lane with the sandbox on: the proxy's
// refusal becomes this tool's sandbox_denied error, in the proxy's words),
// otherwise here, through CURLOPT_OPENSOCKETFUNCTION, with no proxy from
// the environment: one that is not loopr's would hide the address.
//
// Memory: the body is kept up to limits.max_body_bytes; the rest of the
// transfer is abandoned and `body_truncated` says so. Threads: one call at a
// time per process is enough for loopr-fetch; nothing is shared between calls.
#pragma once

#include <chrono>
#include <cstddef>
#include <string>
#include <vector>

#include "common/error.hpp"
#include "egress/address_policy.hpp"

namespace loopr::fetch {

using egress::AddressPolicy;

struct FetchLimits {
  std::size_t max_body_bytes = 8u << 20;
  int max_redirects = 5;
  std::chrono::milliseconds connect_timeout{10'000};
  // A transfer slower than 1 byte/s for this long is abandoned (the lane's
  // job timeout bounds the whole call).
  std::chrono::seconds stall_timeout{20};
  // The whole transfer, redirects included; 0: no limit but the stall.
  std::chrono::milliseconds total_timeout{0};
};

struct HttpRequest {
  std::string method = "GET";  // "GET" or "POST"; redirects are followed for GET only
  std::string url;
  std::vector<std::string> headers;  // "Name: value"
  std::string body;                  // POST
  // What messages call the URL (web_search: its endpoint without the query,
  // which may carry a key); empty: the URL.
  std::string shown_url;
};

struct FetchedPage {
  std::string url;           // the final URL, after redirects
  long status = 0;           // HTTP status of the final response
  std::string content_type;  // as sent, e.g. "text/html; charset=utf-8"; may be empty
  std::string remote_address;
  int redirects = 0;
  std::string body;
  bool body_truncated = false;
  std::string retry_after;  // the response's Retry-After header, as sent; may be empty
};

// `request.url` must have passed checked_fetch_url. Any HTTP status is a
// result. Errors: sandbox_denied (an address the policy refuses, at any
// hop), invalid_arguments (a redirect to another scheme), not_found (the
// host does not resolve), timeout, io (connection, TLS, too many
// redirects), each with a hint.
Result<FetchedPage> http_request(const HttpRequest& request, const AddressPolicy& policy,
                                 const FetchLimits& limits);

inline Result<FetchedPage> http_get(const std::string& url, const AddressPolicy& policy,
                                    const FetchLimits& limits) {
  HttpRequest request;
  request.url = url;
  return http_request(request, policy, limits);
}

}  // namespace loopr::fetch
