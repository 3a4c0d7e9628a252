// loopr's tools as MCP publishes them, and looprd's tool.call results as MCP
// tool results (MCP spec 2025-11-25, "Tools").
//
// Contract:
//  - publish_tools() takes looprd's tool.list `tools` and returns the MCP
//    Tool objects of every enabled tool a client may call (not the loop
//    engine's own, which tool.list marks `callable: false`), in catalog
//    order, narrowed to `only` when it is not empty; a name in `only` that is
//    not such a tool is errc::invalid_arguments naming the tools there are.
//    Each Tool: name, title, description, inputSchema (the catalog's
//    input_schema), outputSchema when the catalog gives the tool one,
//    annotations (readOnlyHint for read-only tiers, destructiveHint for the
//    others, openWorldHint for the net lane).
//  - tool_result() turns a tool.call result into a CallToolResult: a call
//    that ran (`ok`) gives its output as JSON text plus structuredContent
//    (when the output is an object); any other (failed, timeout, cancelled,
//    denied, invalid, error) gives isError: true and a text with loopr's
//    message and hint, so the model reads what to do. _meta "loopr/call"
//    carries call_id, lane, status and duration_ms.
#pragma once

#include <nlohmann/json.hpp>
#include <string>
#include <vector>

#include "common/error.hpp"

namespace loopr::mcp {

struct PublishedTool {
  std::string name;
  nlohmann::json tool;  // the MCP Tool object
  bool has_output_schema = false;
};

Result<std::vector<PublishedTool>> publish_tools(const nlohmann::json& catalog_tools,
                                                 const std::vector<std::string>& only);

nlohmann::json tool_result(const nlohmann::json& outcome);

// A CallToolResult with isError for a call that never reached a tool (no
// worktree, looprd unreachable): `message` and `hint` as loopr words them.
nlohmann::json error_result(const std::string& message, const std::string& hint);

}  // namespace loopr::mcp
