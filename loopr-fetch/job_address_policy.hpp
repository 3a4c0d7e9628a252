// The address policy a loopr-fetch job runs under: public internet addresses,
// plus the networks in the arguments' `allowed_networks` (CIDR strings). That
// key is never the model's: the daemon sets it from loopr.toml ([web_fetch] or
// [web_search] allowed_networks) after schema validation, replacing whatever
// the call carried (daemon/tool_router.cpp).
#pragma once

#include <string_view>

#include "common/error.hpp"
#include "loopr-fetch/http_fetch.hpp"
#include "loopr-tool/arguments.hpp"

namespace loopr::fetch {

// Errors (invalid_arguments) name `tool` and the key.
Result<AddressPolicy> job_address_policy(const tool::Arguments& arguments, std::string_view tool);

}  // namespace loopr::fetch
