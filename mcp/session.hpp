// McpSession: one MCP session (MCP spec 2025-11-25) between one client and
// looprd, whatever carries its messages (stdio_server.hpp, http_server.hpp).
//
// Contract:
//  - handle() takes one message from the client. Everything that answers or
//    belongs to a request (its response, its progress, log lines about it, a
//    server request made for it such as roots/list or elicitation/create) goes
//    to the Outbox passed with that request, then Outbox::finish() says
//    nothing more follows on it. Session-wide log lines go to the outbox set
//    by set_notification_outbox() (none: dropped).
//  - handle() answers initialize, ping, logging/setLevel and tools/list before
//    it returns; tools/call runs on a thread of its own (call_threads.hpp; at
//    most max_calls_in_flight at once) so that pings, cancellations and
//    answers to the server's own requests keep flowing while tools run.
//  - tools/call goes to looprd's tool.call (lanes, sandbox, schema checks,
//    read-before-edit under one scope for the whole session, approvals,
//    output caps and the store all apply). An unknown tool or malformed
//    params is a JSON-RPC error; everything the tool did (including a refusal)
//    is a CallToolResult (tool_listing.hpp).
//  - notifications/cancelled ends the call in looprd (tool.cancel, or closing
//    its connection when looprd has not named the call yet) and no response
//    is sent for it.
//  - A call waiting for approval logs a warning naming `looprctl approve ID`;
//    with elicit_approvals and a client that declared elicitation, the
//    session also asks the client (elicitation/create) and applies its answer.
//  - The worktree: options.worktree; else the client's first file:// root
//    (roots/list, asked again after notifications/roots/list_changed); else
//    the current directory. looprd refuses one outside [sandbox]
//    worktree_roots, and the call's result says so. A call whose outbox
//    carries no requests fails at once instead of asking for roots.
//  - close() cancels every running call and waits for their threads.
// Thread-safe: transports may call handle() from several threads.
#pragma once

#include <cstddef>
#include <cstdint>
#include <future>
#include <map>
#include <memory>
#include <mutex>
#include <nlohmann/json.hpp>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "mcp/call_threads.hpp"
#include "mcp/daemon_link.hpp"
#include "mcp/json_rpc.hpp"
#include "mcp/tool_listing.hpp"

namespace loopr::mcp {

inline constexpr std::string_view kLatestProtocolVersion = "2025-11-25";
// The versions this server speaks, newest first.
inline constexpr std::string_view kProtocolVersions[] = {"2025-11-25", "2025-06-18", "2025-03-26",
                                                         "2024-11-05"};
bool is_supported_protocol_version(std::string_view version);

class Outbox {
 public:
  virtual ~Outbox() = default;
  // One message to the client. Thread-safe.
  virtual void send(const nlohmann::json& message) = 0;
  // The request this outbox served is answered or cancelled. Thread-safe.
  virtual void finish() {}
  // False for an outbox that delivers only the response (an HTTP request
  // answered as JSON, not as an event stream): the session asks the client
  // nothing through it (roots/list, elicitation/create), since no answer
  // could come.
  virtual bool carries_requests() const { return true; }
};

struct SessionOptions {
  std::optional<std::string> worktree;  // unset: the client's roots, else the current directory
  std::vector<std::string> tools;       // empty: every tool looprd offers
  bool elicit_approvals = false;
  std::string server_version;
  // The read-before-edit scope of this session's calls in looprd.
  std::string scope;
  std::size_t max_calls_in_flight = 16;
};

class McpSession {
 public:
  McpSession(DaemonLink& link, SessionOptions options);
  ~McpSession();
  McpSession(const McpSession&) = delete;
  McpSession& operator=(const McpSession&) = delete;

  void handle(const nlohmann::json& message, const std::shared_ptr<Outbox>& outbox);
  void set_notification_outbox(std::shared_ptr<Outbox> outbox);
  void close();

  bool initialized() const;
  std::string protocol_version() const;
  std::size_t calls_in_flight() const;

 private:
  struct Call {
    nlohmann::json request_id;
    std::shared_ptr<Outbox> outbox;
    std::optional<nlohmann::json> progress_token;
    CallControl control;
    std::mutex mutex;
    std::string call_id;  // looprd's, once an event named it
    bool cancelled = false;
    std::uint64_t progress = 0;
  };
  using ResponseHandler = std::function<void(const Message* response)>;

  void handle_request(const Message& message, const std::shared_ptr<Outbox>& outbox);
  void handle_notification(const Message& message);
  void handle_response(const Message& message);

  nlohmann::json initialize(const nlohmann::json& params);
  nlohmann::json list_tools(const nlohmann::json& id);
  void start_call(const Message& message, const std::shared_ptr<Outbox>& outbox);
  // The response to send for `call` (null: cancelled, send nothing).
  nlohmann::json run_call(Call& call, const nlohmann::json& id, const nlohmann::json& params);
  // A CallToolResult response with isError for a call no tool answered.
  static nlohmann::json tool_error_response(const nlohmann::json& id, const Error& error);
  void on_daemon_event(Call& call, const DaemonEvent& event);
  void ask_client_to_approve(Call& call, const nlohmann::json& approval);
  void cancel(Call& call);

  // The published tools, read from looprd once and shared (never copied per call).
  using ToolList = std::shared_ptr<const std::vector<PublishedTool>>;
  Result<ToolList> tools();
  Result<std::string> worktree_for(Call& call);
  Result<std::string> client_root(Call& call);

  // Sends a request to the client on `outbox`; `on_response` runs with its
  // response, or with nullptr if the session closes first.
  std::string ask_client(const std::shared_ptr<Outbox>& outbox, const std::string& method,
                         nlohmann::json params, ResponseHandler on_response);
  void log(std::string_view level, const std::string& text, const std::shared_ptr<Outbox>& outbox);

  DaemonLink& link_;
  const SessionOptions options_;

  mutable std::mutex mutex_;
  bool initialized_ = false;
  bool closed_ = false;
  std::string protocol_version_{kLatestProtocolVersion};
  nlohmann::json client_capabilities_ = nlohmann::json::object();
  int min_log_level_ = 1;  // index into the syslog levels: info
  std::shared_ptr<Outbox> notifications_;
  ToolList tools_;
  std::optional<std::string> root_;                 // the client's root, once asked
  std::map<std::string, ResponseHandler> pending_;  // id_key → handler
  std::uint64_t next_request_ = 1;
  std::map<std::string, std::shared_ptr<Call>> calls_by_id_;  // id_key(request id) → call
  // Last member: destroyed (stopped, joined) first, while the rest is alive.
  CallThreads call_threads_;
};

}  // namespace loopr::mcp
