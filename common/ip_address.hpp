// IpAddress and NetworkRange: IPv4 and IPv6 addresses and CIDR ranges, for
// web_fetch's address policy and the [web_fetch] allowed_networks setting.
//
// One representation for both families: an IPv4 address is held as its
// IPv4-mapped IPv6 form (::ffff:a.b.c.d), so "127.0.0.1" and
// "::ffff:127.0.0.1" are the same address, and an IPv4 range a.b.c.d/n is the
// IPv6 range ::ffff:a.b.c.d/(96+n). Pure values; thread-safe.
#pragma once

#include <sys/socket.h>

#include <array>
#include <cstdint>
#include <optional>
#include <string>
#include <string_view>

#include "common/error.hpp"

namespace loopr {

class IpAddress {
 public:
  IpAddress() = default;
  static IpAddress from_bytes(const std::array<std::uint8_t, 16>& bytes) {
    IpAddress address;
    address.bytes_ = bytes;
    return address;
  }
  static IpAddress from_ipv4(std::uint32_t host_order);
  // Dotted quad ("10.0.0.1") or IPv6 text ("fd00::1"); no brackets, no
  // zone, no port. inet_pton's strict forms only: "0x7f000001" and
  // "2130706433" are not addresses here (a URL parser may still read them so).
  static std::optional<IpAddress> parse(std::string_view text);
  // AF_INET or AF_INET6; anything else is nullopt.
  static std::optional<IpAddress> from_sockaddr(const sockaddr* address, socklen_t length);

  const std::array<std::uint8_t, 16>& bytes() const { return bytes_; }
  bool is_ipv4() const;  // held as ::ffff:a.b.c.d
  // The IPv4 address in host order; only meaningful when is_ipv4().
  std::uint32_t ipv4() const;
  // "10.0.0.1" for IPv4 (mapped) addresses, RFC 5952 text for IPv6.
  std::string to_string() const;

  bool operator==(const IpAddress&) const = default;

 private:
  std::array<std::uint8_t, 16> bytes_{};
};

class NetworkRange {
 public:
  // "10.0.0.0/8", "fd00::/8", or one address ("127.0.0.1" = /32, "::1" =
  // /128). A base address with bits set past the prefix is refused: a typo
  // such as "10.0.0.1/8" would otherwise allow more than was meant.
  static Result<NetworkRange> parse(std::string_view text);
  // The range of `prefix_bits` leading bits of `base`, in the 128-bit space.
  static NetworkRange of(IpAddress base, unsigned prefix_bits);

  bool contains(const IpAddress& address) const;
  std::string to_string() const;

  bool operator==(const NetworkRange&) const = default;

 private:
  IpAddress base_;
  unsigned prefix_bits_ = 128;  // in the 128-bit space (IPv4 /n is 96 + n)
};

}  // namespace loopr
