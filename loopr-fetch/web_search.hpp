// web_search {query, max_results=5 (1..10)}: asks the configured search
// provider and returns {provider, query, results: [{title, url, snippet}]},
// at most max_results (DESIGN.md §5).
//
// Reserved arguments, never the model's (the catalog's schema refuses them and
// daemon/web_search_args.cpp replaces them after every step that shows or
// records a call's arguments):
//   search_provider {kind, base_url, api_key?, cx?, max_retries,
//                    retry_base_delay_ms, retry_max_delay_ms, timeout_ms}
//   allowed_networks [CIDR...]   (loopr-fetch/job_address_policy.hpp)
// The key is sent to the provider and nowhere else: every message this tool
// returns has it redacted (SECURITY.md class 26).
//
// Retries: 429, 408/409, 5xx and transport failures (reset, refused, TLS,
// timeouts) are tried again up to max_retries times, after an exponential
// back-off with jitter, or the provider's retry-after (seconds or an HTTP
// date), each wait capped at retry_max_delay_ms; no retry starts that could
// not finish within the job's timeout_ms.
#pragma once

#include <nlohmann/json.hpp>

#include "common/error.hpp"
#include "loopr-tool/worktree.hpp"

namespace loopr::fetch {

// The worktree is not used: web_search reads and writes no files.
Result<nlohmann::json> web_search(const tool::Worktree& worktree, const nlohmann::json& args);

}  // namespace loopr::fetch
