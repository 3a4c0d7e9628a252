#include "common/domain_list.hpp"

#include <algorithm>
#include <cctype>

namespace loopr {
namespace {

bool is_host_name(std::string_view name) {
  if (name.empty() || name.size() > 253) return false;
  std::size_t label = 0;
  for (char c : name) {
    if (c == '.') {
      if (label == 0) return false;
      label = 0;
      continue;
    }
    const bool ok = std::isalnum(static_cast<unsigned char>(c)) != 0 || c == '-' || c == '_';
    if (!ok || ++label > 63) return false;
  }
  return label != 0;
}

}  // namespace

std::string normalized_host(std::string_view host) {
  std::string out(host);
  std::transform(out.begin(), out.end(), out.begin(),
                 [](unsigned char c) { return static_cast<char>(std::tolower(c)); });
  while (!out.empty() && out.back() == '.')
    out.pop_back();
  return out;
}

Result<DomainList> DomainList::parse(const std::vector<std::string>& entries,
                                     const std::string& key) {
  DomainList list;
  for (const std::string& entry : entries) {
    std::string name = normalized_host(entry);
    const bool suffix = name.rfind("*.", 0) == 0;
    if (!is_host_name(suffix ? std::string_view(name).substr(2) : std::string_view(name))) {
      return make_error(errc::invalid_arguments,
                        key + ": '" + entry + "' is not a host name or '*.' and a host name",
                        "write entries such as \"example.com\" or \"*.example.com\" (no scheme, "
                        "port or path)");
    }
    list.entries_.push_back(std::move(name));
  }
  return list;
}

std::optional<std::string> DomainList::match(std::string_view host) const {
  const std::string name = normalized_host(host);
  for (const std::string& entry : entries_) {
    if (entry.rfind("*.", 0) == 0) {
      const std::string_view parent = std::string_view(entry).substr(1);  // ".example.com"
      if (name.size() > parent.size() &&
          name.compare(name.size() - parent.size(), parent.size(), parent) == 0) {
        return entry;
      }
    } else if (name == entry) {
      return entry;
    }
  }
  return std::nullopt;
}

}  // namespace loopr
