// What looprd adds to a web_search call's arguments before dispatching it:
// the configured provider and its key, under the reserved key
// `search_provider`, and `allowed_networks` (loopr-fetch/web_search.hpp reads
// both). The model never sets either: the catalog's schema refuses unknown
// keys, and these functions replace whatever the call carried.
//
// The key is read here, at each call, from looprd's environment or the key
// file (llm::load_credential), so a rotated key file is picked up without a
// restart. ToolRouter calls this after every step that shows or records the
// arguments (the approval request, the store's args digest, events, logs):
// from here on the arguments travel only to the job (SECURITY.md class 26).
#pragma once

#include <cstdint>
#include <nlohmann/json.hpp>

#include "common/error.hpp"
#include "config/environment.hpp"
#include "config/settings.hpp"

namespace loopr::daemon {

// Errors the model reads as the call's result, never holding key text:
// not_configured (no [web_search] provider; says which keys to set),
// provider_auth (no key, or an unreadable key file; names the variable or
// the file), invalid_arguments (google without cx, searxng without base_url).
// `timeout_ms` is the job's timeout, within which loopr-fetch keeps its retries.
Result<void> add_web_search_provider(nlohmann::json& args,
                                     const config::WebSearchSettings& settings,
                                     const config::EnvLookup& env, std::uint64_t timeout_ms);

}  // namespace loopr::daemon
