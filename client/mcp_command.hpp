// looprctl mcp: loopr's tools for any MCP host (DESIGN.md §10, issue 14).
// An MCP server on stdio (or Streamable HTTP with --http) that is a client of
// looprd: it starts looprd if nothing answers on the socket (as `looprctl
// daemon start` does, reporting on stderr: stdout belongs to MCP), then runs
// one mcp::McpSession per MCP session over McpDaemonLink.
#pragma once

#include <string>

#include "client/commands.hpp"

namespace loopr::client {

struct McpOptions {
  std::string worktree;  // empty: the client's roots, else the current directory
  std::string tools;     // comma-separated; empty: every tool
  bool elicit_approvals = false;
  std::string http;        // HOST:PORT; empty: stdio
  std::string token_file;  // --http: where the bearer token is written
  bool insecure_no_token = false;
  std::string server_version;  // serverInfo.version: looprctl's own
};

int run_mcp(const CommandContext& context, const McpOptions& options);

}  // namespace loopr::client
