// The stdio transport of MCP (spec 2025-11-25, "Transports: stdio"): the
// client writes JSON-RPC messages to our stdin and reads ours from stdout,
// one per line (no embedded newlines; our JSON is compact). Nothing else is
// ever written to stdout: logs go to stderr.
//
// Contract: serve_stdio() reads `in_fd` until end of file (the client went
// away), handing each line to the session; a line that is not JSON is
// answered with a parse error (id null) and the session goes on; a line over
// 16 MiB ends the session. Writes to `out_fd` are whole lines, one writer at
// a time; a broken pipe stops all further writes. On return every running
// call has been cancelled and joined. Returns 0 at end of file, 1 after a
// read error or an oversized line.
#pragma once

#include "mcp/session.hpp"

namespace loopr::mcp {

int serve_stdio(McpSession& session, int in_fd, int out_fd);

}  // namespace loopr::mcp
