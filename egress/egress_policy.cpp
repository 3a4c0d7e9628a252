#include "egress/egress_policy.hpp"

namespace loopr::egress {
namespace {

std::string target(const std::string& host, std::uint16_t port) {
  const bool ipv6 = host.find(':') != std::string::npos;
  return (ipv6 ? "[" + host + "]" : host) + ":" + std::to_string(port);
}

std::string refused(const std::string& lane, const std::string& host, std::uint16_t port) {
  return "loopr's egress proxy refused " + target(host, port) + " (lane " + lane + "): ";
}

}  // namespace

std::optional<Refusal> EgressPolicy::judge_name(const std::string& lane, const std::string& host,
                                                std::uint16_t port) const {
  const auto rules = lanes_.find(lane);
  if (rules == lanes_.end()) return std::nullopt;
  const std::string key = "[egress.lanes." + lane + "]";
  if (auto entry = rules->second.deny.match(host)) {
    return Refusal{"deny_domains",
                   refused(lane, host, port) + "the name matches \"" + *entry + "\" in " + key +
                       " deny_domains of loopr.toml; the user " +
                       "can remove that entry to allow it",
                   key + " deny_domains"};
  }
  if (!rules->second.allow.empty() && !rules->second.allow.match(host)) {
    return Refusal{"allow_domains",
                   refused(lane, host, port) + "the name is not in " + key +
                       " allow_domains of loopr.toml; the user can add \"" + normalized_host(host) +
                       "\" there to allow it",
                   key + " allow_domains"};
  }
  return std::nullopt;
}

std::optional<Refusal> EgressPolicy::judge_address(const std::string& lane, const std::string& host,
                                                   std::uint16_t port,
                                                   const IpAddress& address) const {
  auto refusal = addresses_.refusal(address);
  if (!refusal) return std::nullopt;
  const std::string text = address.to_string();
  const std::string via = text == normalized_host(host) ? "" : " (which " + host + " resolves to)";
  return Refusal{refusal->rule,
                 refused(lane, host, port) + text + via + " is " + refusal->reason +
                     ", and jobs reach only public internet addresses; the user " + "can add \"" +
                     single_address_range(address) +
                     "\" to [egress] allowed_networks in loopr.toml to allow it",
                 "[egress] allowed_networks"};
}

}  // namespace loopr::egress
