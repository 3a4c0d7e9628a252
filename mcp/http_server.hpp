// The Streamable HTTP transport of MCP (spec 2025-11-25, "Transports:
// Streamable HTTP"), on loopback only, with cpp-httplib (Debian's
// libcpp-httplib-dev) for HTTP/1.1 itself.
//
// Contract:
//  - One endpoint, /mcp. POST carries one JSON-RPC message. An initialize
//    request without Mcp-Session-Id starts a new session (its id comes back in
//    the Mcp-Session-Id header); every other message needs the id of a live
//    session (missing: 400; unknown or ended: 404). Notifications and
//    responses are answered 202. A tools/call whose client accepts
//    text/event-stream is answered as an SSE stream (its progress, log lines,
//    the server's requests made for it, then its response); every other
//    request as application/json. GET is 405 (this server opens no stream of
//    its own); DELETE ends the session.
//  - Before anything else every request is checked, in this order: the Host
//    header must name the bound loopback address or localhost with the bound
//    port, and an Origin header, when present, the same as an http(s) origin
//    (403 otherwise: DNS rebinding); then, unless the token is empty, an
//    `Authorization: Bearer <token>` header equal to the token (401
//    otherwise; compared in constant time). A MCP-Protocol-Version header
//    must name a version this server speaks (400 otherwise).
//  - At most max_sessions sessions live at once; a new one then ends the
//    session idle the longest that runs no call (503 if every one is busy).
//  - bind() refuses an address that is not loopback: a TCP port carries no
//    peer credentials, and the token is all that stands between the tools
//    and anyone who reaches the port.
#pragma once

#include <cstddef>
#include <functional>
#include <memory>
#include <string>

#include "common/error.hpp"
#include "mcp/session.hpp"

namespace loopr::mcp {

struct HttpOptions {
  std::string host = "127.0.0.1";  // 127.0.0.1, ::1 or localhost
  int port = 0;                    // 0: any free port
  std::string token;               // empty: no token check (tests only)
  std::size_t max_sessions = 32;
  // Makes the session for each new MCP session.
  std::function<std::unique_ptr<McpSession>()> new_session;
};

class HttpServer {
 public:
  static Result<std::unique_ptr<HttpServer>> bind(HttpOptions options);
  ~HttpServer();
  HttpServer(const HttpServer&) = delete;
  HttpServer& operator=(const HttpServer&) = delete;

  int port() const;
  // The URL of the endpoint, e.g. http://127.0.0.1:8123/mcp.
  std::string url() const;
  // Serves until stop(); then ends every session. Returns false if the
  // server failed to listen.
  bool serve();
  // Thread-safe; may be called from a signal-watching thread.
  void stop();

 private:
  struct State;
  explicit HttpServer(std::unique_ptr<State> state);
  std::unique_ptr<State> state_;
};

// Whether `host` (as given to --http) is a loopback address this server binds.
bool is_loopback_host(const std::string& host);

}  // namespace loopr::mcp
