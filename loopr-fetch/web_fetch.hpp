// web_fetch {url, format: markdown|text|html}: fetches a public http(s) page
// and returns it as Markdown (default), plain text or the raw HTML
// (DESIGN.md §5). `allowed_networks` (CIDR strings) is never the model's: the
// daemon sets it from loopr.toml [web_fetch] allowed_networks after schema
// validation, replacing whatever the call carried (daemon/tool_router.cpp).
//
// The result fits the job's output cap (LOOPR_MAX_OUTPUT_BYTES, set by the
// runner): longer content keeps its head and says how much was cut.
#pragma once

#include <nlohmann/json.hpp>

#include "common/error.hpp"
#include "loopr-tool/worktree.hpp"

namespace loopr::fetch {

// The worktree is not used: web_fetch reads and writes no files.
Result<nlohmann::json> web_fetch(const tool::Worktree& worktree, const nlohmann::json& args);

}  // namespace loopr::fetch
