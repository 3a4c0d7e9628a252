#include "loopr-fetch/job_address_policy.hpp"

#include <string>
#include <vector>

namespace loopr::fetch {

Result<AddressPolicy> job_address_policy(const tool::Arguments& arguments, std::string_view tool) {
  const std::string name(tool);
  std::vector<std::string> ranges;
  if (arguments.has("allowed_networks")) {
    const nlohmann::json& raw = arguments.raw("allowed_networks");
    if (!raw.is_array()) {
      return make_error(errc::invalid_arguments,
                        name + ": 'allowed_networks' must be an array of CIDR strings");
    }
    for (const nlohmann::json& item : raw) {
      if (!item.is_string()) {
        return make_error(errc::invalid_arguments,
                          name + ": 'allowed_networks' must hold only strings");
      }
      ranges.push_back(item.get<std::string>());
    }
  }
  auto policy = AddressPolicy::from_strings(ranges);
  if (!policy) {
    Error error = std::move(policy).error();
    error.message = name + ": allowed_networks: " + error.message;
    return error;
  }
  return policy;
}

}  // namespace loopr::fetch
