// URLs web_fetch accepts and the links it shows, parsed with libcurl's URL
// API (CURLU), the parser the transfer itself uses, so what is checked here
// is what gets fetched. Thread-safe (no shared state).
#pragma once

#include <string>
#include <string_view>

#include "common/error.hpp"

namespace loopr::fetch {

inline constexpr std::size_t kMaxUrlBytes = 8192;

// An absolute http:// or https:// URL with a host, normalized by libcurl
// (scheme lower-cased, "/" for an empty path, spaces escaped). Anything else — no
// scheme, another scheme (file:, ftp:, gopher:, data:), no host, over
// kMaxUrlBytes, bytes libcurl refuses — is invalid_arguments saying what to
// send instead.
Result<std::string> checked_fetch_url(std::string_view url);

// `reference` (an href or a Location header) resolved against `base`; an
// empty string when it cannot be resolved or is not http(s) (javascript:,
// mailto:, data:).
std::string resolve_http_url(const std::string& base, std::string_view reference);

// The host of an absolute URL ("https://Example.com:8080/x" -> "Example.com");
// empty when it does not parse.
std::string host_of_url(const std::string& url);

}  // namespace loopr::fetch
