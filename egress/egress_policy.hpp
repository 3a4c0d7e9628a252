// EgressPolicy: what the egress proxy lets a lane's job connect to (DESIGN
// §7.9, SECURITY classes 21 and 22). Two questions, asked in this order:
//   1. by name, before any lookup: the lane's deny list, then its allow list
//      (deny wins; an empty allow list allows every name; an IP literal is a
//      name that only an exact entry matches);
//   2. by address, on each address the proxy's own lookup returned and the
//      one it then connects to — never a second lookup, so a name that
//      rebinds between check and connect cannot pass: the AddressPolicy
//      (loopback, private, link-local, ... refused unless allowed).
// A refusal carries a short rule name (events, metrics) and a message for
// the job that says which rule refused it and which loopr.toml key would
// allow it. Pure; thread-safe.
#pragma once

#include <cstdint>
#include <map>
#include <optional>
#include <string>

#include "common/domain_list.hpp"
#include "common/ip_address.hpp"
#include "egress/address_policy.hpp"

namespace loopr::egress {

struct LaneDomainRules {
  DomainList allow;  // empty: every name
  DomainList deny;
};

struct Refusal {
  std::string rule;            // "deny_domains", "allow_domains", "loopback", "private", ...
  std::string message;         // one line: what was refused, why, and how to allow it
  std::string allow_key = {};  // the loopr.toml key that would allow it
};

class EgressPolicy {
 public:
  EgressPolicy() = default;
  EgressPolicy(AddressPolicy addresses, std::map<std::string, LaneDomainRules> lanes)
      : addresses_(std::move(addresses)), lanes_(std::move(lanes)) {}

  std::optional<Refusal> judge_name(const std::string& lane, const std::string& host,
                                    std::uint16_t port) const;
  std::optional<Refusal> judge_address(const std::string& lane, const std::string& host,
                                       std::uint16_t port, const IpAddress& address) const;

 private:
  AddressPolicy addresses_;
  std::map<std::string, LaneDomainRules> lanes_;
};

}  // namespace loopr::egress
