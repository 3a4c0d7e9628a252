// AddressPolicy: which addresses a job's connection may reach — the one
// implementation of the address rules, used by the egress proxy (every
// connection of the net and heavy lanes, web_fetch's included) and by
// web_fetch itself when it connects directly (a lane with the sandbox off).
// The public internet only, unless the user allowed more in loopr.toml
// ([egress] allowed_networks): loopback, private (RFC 1918, IPv6 unique
// local), link-local (where cloud metadata services listen), carrier-grade
// NAT, multicast, documentation and reserved ranges are refused
// (SECURITY.md classes 14, 21, 22).
//
// The check runs on the address a socket is about to connect to, after DNS,
// so a name that resolves to a private address, or rebinds to one, is
// refused like the literal address.
// Addresses that embed an IPv4 address (IPv4-mapped, NAT64 64:ff9b::/96,
// 6to4 2002::/16) are judged by the embedded address. Pure; thread-safe.
#pragma once

#include <optional>
#include <string>
#include <vector>

#include "common/error.hpp"
#include "common/ip_address.hpp"

namespace loopr::egress {

// Why `address` is not a public internet address ("loopback", "private
// (RFC 1918)", ...), or nullopt when it is one.
std::optional<std::string> non_public_reason(const IpAddress& address);

// A refused address: `rule` is a short stable name for events and metrics
// ("loopback", "private", "link-local", "cgnat", "reserved", ...), `reason`
// the words for people ("link-local (cloud metadata services listen here)").
struct AddressRefusal {
  std::string rule;
  std::string reason;
};

// The example range a user would add to allow exactly `address`
// ("127.0.0.1/32", "::1/128").
std::string single_address_range(const IpAddress& address);

class AddressPolicy {
 public:
  AddressPolicy() = default;
  explicit AddressPolicy(std::vector<NetworkRange> allowed) : allowed_(std::move(allowed)) {}

  // Parses the allowed ranges (each as NetworkRange::parse); the first bad
  // one is an invalid_arguments error naming it.
  static Result<AddressPolicy> from_strings(const std::vector<std::string>& allowed);

  // Success when `address` is public or inside an allowed range; otherwise a
  // sandbox_denied error that names the address, why it is refused and how
  // to allow it. `url` is only for the message.
  Result<void> check(const IpAddress& address, const std::string& url) const;

  bool allows(const IpAddress& address) const;
  // nullopt when allowed; otherwise which rule refuses it and why.
  std::optional<AddressRefusal> refusal(const IpAddress& address) const;

 private:
  std::vector<NetworkRange> allowed_;
};

}  // namespace loopr::egress
