// Hand-written rather than a library's: Debian 12 packages no HTTP/1.1
// request parser for C++ besides whole servers (Boost.Beast's parser would
// bring Boost in for 100 lines); the grammar needed is the request line and
// header fields of RFC 9112 §3 and §5 only, and the fuzz target
// fuzz_proxy_request covers it. Base64 comes from OpenSSL.
#include "egress/proxy_request.hpp"

#include <openssl/evp.h>

#include <algorithm>
#include <cctype>
#include <charconv>
#include <vector>

#include "common/ascii_text.hpp"

namespace loopr::egress {
namespace {

Error bad(const std::string& what) {
  return make_error(errc::invalid_arguments,
                    "loopr's egress proxy cannot read the request: " + what,
                    "send CONNECT host:port for a tunnel, or GET http://host/path in absolute "
                    "form, as an HTTP proxy client does (set HTTPS_PROXY/HTTP_PROXY)");
}

bool valid_host(std::string_view host) {
  if (host.empty() || host.size() > 253) return false;
  return std::all_of(host.begin(), host.end(), [](char c) {
    return std::isalnum(static_cast<unsigned char>(c)) != 0 || c == '.' || c == '-' || c == '_' ||
           c == ':';
  });
}

// "host:port", "[v6]:port", or without the port when `default_port` is set.
Result<void> parse_authority(std::string_view authority, std::uint16_t default_port,
                             ProxyRequest& request) {
  std::string_view host = authority;
  std::string_view port;
  if (!authority.empty() && authority.front() == '[') {
    const auto close = authority.find(']');
    if (close == std::string_view::npos)
      return bad("unclosed '[' in '" + std::string(authority) + "'");
    host = authority.substr(1, close - 1);
    const std::string_view rest = authority.substr(close + 1);
    if (!rest.empty()) {
      if (rest.front() != ':') return bad("junk after ']' in '" + std::string(authority) + "'");
      port = rest.substr(1);
    }
    if (host.find(':') == std::string_view::npos)
      return bad("'[" + std::string(host) + "]' is not an IPv6 address");
  } else {
    const auto colon = authority.rfind(':');
    if (colon != std::string_view::npos) {
      host = authority.substr(0, colon);
      port = authority.substr(colon + 1);
    }
    if (host.find(':') != std::string_view::npos) {
      return bad("an IPv6 address must be in brackets: '" + std::string(authority) + "'");
    }
  }
  if (!valid_host(host)) return bad("'" + std::string(host) + "' is not a host name");
  if (port.empty()) {
    if (default_port == 0)
      return bad("CONNECT needs host:port, got '" + std::string(authority) + "'");
    request.port = default_port;
  } else {
    unsigned value = 0;
    const auto [end, ec] = std::from_chars(port.data(), port.data() + port.size(), value);
    if (ec != std::errc() || end != port.data() + port.size() || value == 0 || value > 65535) {
      return bad("'" + std::string(port) + "' is not a port");
    }
    request.port = static_cast<std::uint16_t>(value);
  }
  request.host = std::string(host);
  return {};
}

std::string basic_password(std::string_view credentials) {
  credentials = trim_blanks(credentials);
  const auto space = credentials.find(' ');
  if (space == std::string_view::npos ||
      !equals_ignoring_case(credentials.substr(0, space), "basic"))
    return {};
  const std::string_view encoded = trim_blanks(credentials.substr(space + 1));
  if (encoded.empty() || encoded.size() > 1024 || encoded.size() % 4 != 0) return {};
  std::vector<unsigned char> decoded(encoded.size() / 4 * 3 + 1);
  const int n =
      EVP_DecodeBlock(decoded.data(), reinterpret_cast<const unsigned char*>(encoded.data()),
                      static_cast<int>(encoded.size()));
  if (n < 0) return {};
  std::string text(reinterpret_cast<const char*>(decoded.data()), static_cast<std::size_t>(n));
  // EVP_DecodeBlock keeps the padding's zero bytes.
  while (!text.empty() && text.back() == '\0')
    text.pop_back();
  const auto colon = text.find(':');
  return colon == std::string::npos ? std::string() : text.substr(colon + 1);
}

// RFC 9110 §5.6.2: a field name (and a method) is a token.
bool is_token(std::string_view text) {
  static constexpr std::string_view kSpecials = "!#$%&'*+-.^_`|~";
  return !text.empty() && std::all_of(text.begin(), text.end(), [](char c) {
    return std::isalnum(static_cast<unsigned char>(c)) != 0 ||
           kSpecials.find(c) != std::string_view::npos;
  });
}

// No control characters but HTAB (RFC 9110 §5.5): a bare CR, LF or NUL in a
// forwarded field would let a job smuggle a header or a request past the
// proxy's reading of it.
bool is_field_value(std::string_view text) {
  return std::none_of(text.begin(), text.end(), [](char c) {
    const auto byte = static_cast<unsigned char>(c);
    return (byte < 0x20 && c != '\t') || byte == 0x7f;
  });
}

// A request target: visible ASCII only (RFC 9112 §3.2).
bool is_target(std::string_view text) {
  return !text.empty() && std::all_of(text.begin(), text.end(), [](char c) {
    const auto byte = static_cast<unsigned char>(c);
    return byte > 0x20 && byte < 0x7f;
  });
}

bool is_proxy_header(std::string_view name) {
  for (std::string_view hop :
       {"proxy-authorization", "proxy-connection", "connection", "keep-alive"}) {
    if (equals_ignoring_case(name, hop)) return true;
  }
  return false;
}

}  // namespace

Result<ProxyRequest> parse_proxy_request(std::string_view head) {
  if (head.size() > kMaxRequestHead) return bad("the request head is over 64 KiB");
  if (head.size() < 4 || head.substr(head.size() - 4) != "\r\n\r\n") {
    return bad("the request head does not end with a blank line");
  }
  const auto line_end = head.find("\r\n");
  const std::string_view line = head.substr(0, line_end);
  const auto first_space = line.find(' ');
  const auto last_space = line.rfind(' ');
  if (first_space == std::string_view::npos || first_space == last_space) {
    return bad("'" + std::string(line.substr(0, 200)) + "' is not a request line");
  }
  const std::string_view method = line.substr(0, first_space);
  const std::string_view target = line.substr(first_space + 1, last_space - first_space - 1);
  const std::string_view version = line.substr(last_space + 1);
  if (version != "HTTP/1.1" && version != "HTTP/1.0") {
    return bad("'" + std::string(version.substr(0, 20)) + "' is not HTTP/1.0 or HTTP/1.1");
  }
  if (method.empty() || !std::all_of(method.begin(), method.end(), [](char c) {
        return std::isupper(static_cast<unsigned char>(c)) != 0;
      })) {
    return bad("'" + std::string(method.substr(0, 20)) + "' is not a method");
  }

  if (!is_target(target)) return bad("the request target has spaces or control characters");

  ProxyRequest request;
  std::string origin_target;
  if (method == "CONNECT") {
    request.tunnel = true;
    if (auto r = parse_authority(target, 0, request); !r) return std::move(r).error();
  } else {
    constexpr std::string_view kHttp = "http://";
    if (target.size() < kHttp.size() ||
        !equals_ignoring_case(target.substr(0, kHttp.size()), kHttp)) {
      if (target.size() >= 8 && equals_ignoring_case(target.substr(0, 8), "https://")) {
        return bad("https:// URLs go through CONNECT, not " + std::string(method));
      }
      return bad("'" + std::string(target.substr(0, 200)) +
                 "' is not an absolute http:// URL (is this client configured to use a proxy?)");
    }
    const std::string_view rest = target.substr(kHttp.size());
    const auto path_at = rest.find_first_of("/?#");
    const std::string_view authority = rest.substr(0, path_at);
    if (authority.find('@') != std::string_view::npos)
      return bad("user names in URLs are not forwarded");
    if (auto r = parse_authority(authority, 80, request); !r) return std::move(r).error();
    origin_target = path_at == std::string_view::npos ? "/" : std::string(rest.substr(path_at));
    if (origin_target.front() != '/') origin_target.insert(0, "/");
    if (const auto hash = origin_target.find('#'); hash != std::string::npos)
      origin_target.resize(hash);
    request.forward_head =
        std::string(method) + " " + origin_target + " " + std::string(version) + "\r\n";
  }

  bool has_host = false;
  std::size_t at = line_end + 2;
  while (at < head.size() - 2) {
    const auto end = head.find("\r\n", at);
    const std::string_view field = head.substr(at, end - at);
    at = end + 2;
    const auto colon = field.find(':');
    if (colon == std::string_view::npos || colon == 0 || field.front() == ' ' ||
        field.front() == '\t') {
      return bad("'" + std::string(field.substr(0, 200)) + "' is not a header field");
    }
    const std::string_view name = field.substr(0, colon);
    if (!is_token(name) || !is_field_value(field.substr(colon + 1))) {
      return bad("header field '" + std::string(field.substr(0, 60)) +
                 "' has characters a header cannot have");
    }
    if (equals_ignoring_case(name, "proxy-authorization"))
      request.token = basic_password(field.substr(colon + 1));
    if (request.tunnel || is_proxy_header(name)) continue;
    if (equals_ignoring_case(name, "host")) has_host = true;
    request.forward_head.append(field).append("\r\n");
  }
  if (!request.tunnel) {
    if (!has_host) {
      const bool ipv6 = request.host.find(':') != std::string::npos;
      request.forward_head += "Host: " + (ipv6 ? "[" + request.host + "]" : request.host) +
                              (request.port == 80 ? "" : ":" + std::to_string(request.port)) +
                              "\r\n";
    }
    request.forward_head += "Connection: close\r\n\r\n";
  }
  return request;
}

}  // namespace loopr::egress
