#include "common/ip_address.hpp"

#include <arpa/inet.h>
#include <netinet/in.h>

#include <charconv>
#include <cstring>

namespace loopr {
namespace {

constexpr std::array<std::uint8_t, 12> kIpv4MappedPrefix = {0, 0, 0, 0, 0,    0,
                                                            0, 0, 0, 0, 0xff, 0xff};
constexpr unsigned kIpv4MappedBits = 96;

// True when the first `bits` bits of a and b are equal.
bool same_prefix(const std::array<std::uint8_t, 16>& a, const std::array<std::uint8_t, 16>& b,
                 unsigned bits) {
  const unsigned whole = bits / 8;
  if (std::memcmp(a.data(), b.data(), whole) != 0) return false;
  const unsigned rest = bits % 8;
  if (rest == 0) return true;
  const auto mask = static_cast<std::uint8_t>(0xff << (8 - rest));
  return (a[whole] & mask) == (b[whole] & mask);
}

}  // namespace

IpAddress IpAddress::from_ipv4(std::uint32_t host_order) {
  std::array<std::uint8_t, 16> bytes{};
  std::memcpy(bytes.data(), kIpv4MappedPrefix.data(), kIpv4MappedPrefix.size());
  for (int i = 0; i < 4; ++i)
    bytes[static_cast<std::size_t>(12 + i)] = static_cast<std::uint8_t>(host_order >> (24 - 8 * i));
  return from_bytes(bytes);
}

std::optional<IpAddress> IpAddress::parse(std::string_view text) {
  if (text.empty() || text.size() > INET6_ADDRSTRLEN) return std::nullopt;
  const std::string copy(text);
  in_addr v4{};
  if (::inet_pton(AF_INET, copy.c_str(), &v4) == 1) return from_ipv4(ntohl(v4.s_addr));
  in6_addr v6{};
  if (::inet_pton(AF_INET6, copy.c_str(), &v6) == 1) {
    std::array<std::uint8_t, 16> bytes{};
    std::memcpy(bytes.data(), v6.s6_addr, 16);
    return from_bytes(bytes);
  }
  return std::nullopt;
}

std::optional<IpAddress> IpAddress::from_sockaddr(const sockaddr* address, socklen_t length) {
  if (address == nullptr) return std::nullopt;
  if (address->sa_family == AF_INET && length >= static_cast<socklen_t>(sizeof(sockaddr_in))) {
    sockaddr_in v4{};
    std::memcpy(&v4, address, sizeof v4);
    return from_ipv4(ntohl(v4.sin_addr.s_addr));
  }
  if (address->sa_family == AF_INET6 && length >= static_cast<socklen_t>(sizeof(sockaddr_in6))) {
    sockaddr_in6 v6{};
    std::memcpy(&v6, address, sizeof v6);
    std::array<std::uint8_t, 16> bytes{};
    std::memcpy(bytes.data(), v6.sin6_addr.s6_addr, 16);
    return from_bytes(bytes);
  }
  return std::nullopt;
}

bool IpAddress::is_ipv4() const {
  return std::memcmp(bytes_.data(), kIpv4MappedPrefix.data(), kIpv4MappedPrefix.size()) == 0;
}

std::uint32_t IpAddress::ipv4() const {
  return static_cast<std::uint32_t>(bytes_[12]) << 24 |
         static_cast<std::uint32_t>(bytes_[13]) << 16 |
         static_cast<std::uint32_t>(bytes_[14]) << 8 | static_cast<std::uint32_t>(bytes_[15]);
}

std::string IpAddress::to_string() const {
  char text[INET6_ADDRSTRLEN] = {};
  if (is_ipv4()) {
    in_addr v4{};
    v4.s_addr = htonl(ipv4());
    ::inet_ntop(AF_INET, &v4, text, sizeof text);
  } else {
    in6_addr v6{};
    std::memcpy(v6.s6_addr, bytes_.data(), 16);
    ::inet_ntop(AF_INET6, &v6, text, sizeof text);
  }
  return text;
}

Result<NetworkRange> NetworkRange::parse(std::string_view text) {
  const auto slash = text.find('/');
  const std::string_view address_text = text.substr(0, slash);
  const auto base = IpAddress::parse(address_text);
  const std::string example = "write a range such as \"10.0.0.0/8\", \"fd00::/8\" or \"127.0.0.1\"";
  if (!base) {
    return make_error(errc::invalid_arguments,
                      "'" + std::string(text) + "' is not an IP address or CIDR range", example);
  }
  // IPv4 prefixes count from the mapped form's 96 bits.
  const bool ipv4_text = address_text.find(':') == std::string_view::npos;
  const unsigned family_bits = ipv4_text ? 32 : 128;
  unsigned bits = family_bits;
  if (slash != std::string_view::npos) {
    const std::string_view bits_text = text.substr(slash + 1);
    const auto [end, ec] =
        std::from_chars(bits_text.data(), bits_text.data() + bits_text.size(), bits);
    if (bits_text.empty() || ec != std::errc() || end != bits_text.data() + bits_text.size() ||
        bits > family_bits) {
      return make_error(errc::invalid_arguments,
                        "'" + std::string(text) + "' has a bad prefix length (0 to " +
                            std::to_string(family_bits) + ")",
                        example);
    }
  }
  const unsigned total_bits = ipv4_text ? kIpv4MappedBits + bits : bits;
  NetworkRange range = of(*base, total_bits);
  if (range.base_ != *base) {
    return make_error(errc::invalid_arguments,
                      "'" + std::string(text) + "' has address bits set past its /" +
                          std::to_string(bits) + " prefix",
                      "did you mean " + range.to_string() + "?");
  }
  return range;
}

NetworkRange NetworkRange::of(IpAddress base, unsigned prefix_bits) {
  if (prefix_bits > 128) prefix_bits = 128;
  std::array<std::uint8_t, 16> bytes = base.bytes();
  for (unsigned bit = prefix_bits; bit < 128; ++bit)
    bytes[bit / 8] = static_cast<std::uint8_t>(bytes[bit / 8] & ~(0x80u >> (bit % 8)));
  NetworkRange range;
  range.base_ = IpAddress::from_bytes(bytes);
  range.prefix_bits_ = prefix_bits;
  return range;
}

bool NetworkRange::contains(const IpAddress& address) const {
  return same_prefix(base_.bytes(), address.bytes(), prefix_bits_);
}

std::string NetworkRange::to_string() const {
  if (base_.is_ipv4() && prefix_bits_ >= kIpv4MappedBits) {
    return base_.to_string() + "/" + std::to_string(prefix_bits_ - kIpv4MappedBits);
  }
  return base_.to_string() + "/" + std::to_string(prefix_bits_);
}

}  // namespace loopr
