// libFuzzer target: arbitrary bytes as the request head a job sends to the
// egress proxy (SECURITY.md classes 20 and 21). Whatever the bytes, the
// parser answers or refuses without crashing; what it accepts must be safe
// to act on: a host of host-name characters, a port in 1..65535, and for
// plain http a forwarded head that ends its header block once, with
// "Connection: close", and carries no proxy credentials on.
#include <cctype>
#include <cstddef>
#include <cstdint>
#include <cstdlib>
#include <string>
#include <string_view>

#include "egress/proxy_request.hpp"

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  const std::string_view head(reinterpret_cast<const char*>(data), size);
  auto request = loopr::egress::parse_proxy_request(head);
  if (!request) {
    if (request.error().message.empty()) std::abort();
    return 0;
  }
  if (request->host.empty() || request->port == 0) std::abort();
  for (char c : request->host) {
    if (c == '\r' || c == '\n' || c == ' ' || c == '/' || c == '@') std::abort();
  }
  if (!request->tunnel) {
    const std::string& forward = request->forward_head;
    const auto end = forward.find("\r\n\r\n");
    if (end == std::string::npos || end + 4 != forward.size()) std::abort();
    if (forward.find("Connection: close\r\n\r\n") == std::string::npos) std::abort();
    // Line by line: no bare CR, LF or NUL, and no proxy credentials passed on.
    std::size_t at = 0;
    while (at < end) {
      const auto line_end = forward.find("\r\n", at);
      const std::string_view line(forward.data() + at, line_end - at);
      for (char c : line) {
        if (c == '\r' || c == '\n' || c == '\0') std::abort();
      }
      std::string name(line.substr(0, line.find(':')));
      for (char& c : name)
        c = static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
      if (name == "proxy-authorization") std::abort();
      at = line_end + 2;
    }
  }
  return 0;
}
