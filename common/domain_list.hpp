// DomainList: a list of host names, such as a lane's allow or deny list for
// the egress proxy ([egress.lanes.<lane>] allow_domains / deny_domains in
// loopr.toml): the settings check it when they are read, the proxy matches
// against it. An entry is an exact name ("example.com") or a suffix
// ("*.example.com": every name beneath example.com, not example.com itself).
// Names compare case-insensitively and without a trailing dot. Pure;
// thread-safe.
#pragma once

#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "common/error.hpp"

namespace loopr {

// `host` in lower case without a trailing dot: the form lists compare.
std::string normalized_host(std::string_view host);

class DomainList {
 public:
  DomainList() = default;
  // Each entry must be a host name or "*." and one; anything else (a URL, a
  // port, a bare "*", an empty string) is an invalid_arguments error naming
  // the entry and `key` (the loopr.toml key, for the message).
  static Result<DomainList> parse(const std::vector<std::string>& entries, const std::string& key);

  bool empty() const { return entries_.empty(); }
  // The entry `host` matches, as written in the list, or nullopt.
  std::optional<std::string> match(std::string_view host) const;

 private:
  std::vector<std::string> entries_;  // normalized; suffixes keep their "*."
};

}  // namespace loopr
