#include "egress/address_policy.hpp"

#include <array>
#include <string_view>
#include <utility>

namespace loopr::egress {
namespace {

struct SpecialRange {
  std::string_view range;
  std::string_view rule;
  std::string_view reason;
};

// IANA's special-purpose registries (RFC 6890 and its updates), trimmed to
// what matters for a client: everything here is refused. IPv4 ranges also
// cover their IPv4-mapped IPv6 forms (common/ip_address.hpp).
constexpr std::array<SpecialRange, 16> kSpecialIpv4 = {{
    {"0.0.0.0/8", "this-network", "'this network' (0.0.0.0/8, which reaches this machine)"},
    {"10.0.0.0/8", "private", "private (RFC 1918)"},
    {"100.64.0.0/10", "cgnat", "carrier-grade NAT shared space (RFC 6598)"},
    {"127.0.0.0/8", "loopback", "loopback"},
    {"169.254.0.0/16", "link-local", "link-local (cloud metadata services listen here)"},
    {"172.16.0.0/12", "private", "private (RFC 1918)"},
    {"192.0.0.0/24", "reserved", "IETF protocol assignments"},
    {"192.0.2.0/24", "documentation", "documentation (TEST-NET-1)"},
    {"192.88.99.0/24", "reserved", "6to4 relay anycast"},
    {"192.168.0.0/16", "private", "private (RFC 1918)"},
    {"198.18.0.0/15", "reserved", "benchmarking (RFC 2544)"},
    {"198.51.100.0/24", "documentation", "documentation (TEST-NET-2)"},
    {"203.0.113.0/24", "documentation", "documentation (TEST-NET-3)"},
    {"224.0.0.0/4", "multicast", "multicast"},
    {"240.0.0.0/4", "reserved", "reserved (class E and broadcast)"},
    {"255.255.255.255/32", "multicast", "broadcast"},
}};

constexpr std::array<SpecialRange, 11> kSpecialIpv6 = {{
    {"::/128", "this-network", "unspecified (::)"},
    {"::1/128", "loopback", "loopback"},
    {"::/96", "reserved", "IPv4-compatible (deprecated)"},
    {"64:ff9b:1::/48", "private", "local-use NAT64 (RFC 8215)"},
    {"100::/64", "reserved", "discard-only (RFC 6666)"},
    {"2001::/32", "reserved", "Teredo tunnelling"},
    {"2001:db8::/32", "documentation", "documentation"},
    {"fc00::/7", "private", "unique local (private IPv6)"},
    {"fe80::/10", "link-local", "link-local"},
    {"fec0::/10", "private", "site-local (deprecated)"},
    {"ff00::/8", "multicast", "multicast"},
}};

struct ParsedRange {
  NetworkRange range;
  std::string_view rule;
  std::string_view reason;
};

// The tables are constants: a range that does not parse is a bug, which the
// unit tests meet at once (value() throws).
template <std::size_t N>
std::vector<ParsedRange> parse_table(const std::array<SpecialRange, N>& table) {
  std::vector<ParsedRange> ranges;
  for (const SpecialRange& special : table)
    ranges.push_back({NetworkRange::parse(special.range).value(), special.rule, special.reason});
  return ranges;
}

const std::vector<ParsedRange>& special_ipv4() {
  static const std::vector<ParsedRange> ranges = parse_table(kSpecialIpv4);
  return ranges;
}

const std::vector<ParsedRange>& special_ipv6() {
  static const std::vector<ParsedRange> ranges = parse_table(kSpecialIpv6);
  return ranges;
}

std::optional<AddressRefusal> refusal_in(const IpAddress& address,
                                         const std::vector<ParsedRange>& ranges) {
  for (const ParsedRange& special : ranges) {
    if (special.range.contains(address)) {
      return AddressRefusal{std::string(special.rule), std::string(special.reason)};
    }
  }
  return std::nullopt;
}

// The IPv4 address carried inside NAT64 (64:ff9b::/96, last 32 bits) and
// 6to4 (2002:V4ADDR::/48) addresses.
std::optional<IpAddress> embedded_ipv4(const IpAddress& address) {
  static const NetworkRange nat64 = NetworkRange::parse("64:ff9b::/96").value();
  static const NetworkRange six_to_four = NetworkRange::parse("2002::/16").value();
  const auto& b = address.bytes();
  auto ipv4_at = [&b](std::size_t at) {
    return IpAddress::from_ipv4(static_cast<std::uint32_t>(b[at]) << 24 |
                                static_cast<std::uint32_t>(b[at + 1]) << 16 |
                                static_cast<std::uint32_t>(b[at + 2]) << 8 | b[at + 3]);
  };
  if (nat64.contains(address)) return ipv4_at(12);
  if (six_to_four.contains(address)) return ipv4_at(2);
  return std::nullopt;
}

// The special range `address` lies in, judged by the IPv4 address it
// embeds where it embeds one.
std::optional<AddressRefusal> special_range_of(const IpAddress& address) {
  if (address.is_ipv4()) return refusal_in(address, special_ipv4());
  if (auto inner = embedded_ipv4(address)) {
    if (auto refusal = refusal_in(*inner, special_ipv4())) {
      refusal->reason += ", embedded as " + inner->to_string() + " in a NAT64 or 6to4 address";
      return refusal;
    }
    return std::nullopt;
  }
  return refusal_in(address, special_ipv6());
}

}  // namespace

std::optional<std::string> non_public_reason(const IpAddress& address) {
  auto refusal = special_range_of(address);
  if (!refusal) return std::nullopt;
  return std::move(refusal->reason);
}

std::string single_address_range(const IpAddress& address) {
  return address.to_string() + (address.is_ipv4() ? "/32" : "/128");
}

Result<AddressPolicy> AddressPolicy::from_strings(const std::vector<std::string>& allowed) {
  std::vector<NetworkRange> ranges;
  for (const std::string& text : allowed) {
    auto range = NetworkRange::parse(text);
    if (!range) return std::move(range).error();
    ranges.push_back(*range);
  }
  return AddressPolicy(std::move(ranges));
}

std::optional<AddressRefusal> AddressPolicy::refusal(const IpAddress& address) const {
  for (const NetworkRange& range : allowed_) {
    if (range.contains(address)) return std::nullopt;
  }
  if (auto inner = embedded_ipv4(address)) {
    for (const NetworkRange& range : allowed_) {
      if (range.contains(*inner)) return std::nullopt;
    }
  }
  return special_range_of(address);
}

bool AddressPolicy::allows(const IpAddress& address) const {
  return !refusal(address).has_value();
}

Result<void> AddressPolicy::check(const IpAddress& address, const std::string& url) const {
  const auto refused = refusal(address);
  if (!refused) return {};
  return make_error(errc::sandbox_denied,
                    "web_fetch refused to connect to " + address.to_string() + " for " + url +
                        ": the address is " + refused->reason +
                        ", and web_fetch reaches only public internet addresses",
                    "fetch a public URL instead; if the user wants this address reachable, they "
                    "can add \"" +
                        single_address_range(address) +
                        "\" to [egress] allowed_networks in loopr.toml");
}

}  // namespace loopr::egress
