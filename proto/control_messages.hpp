// Typed control-protocol messages (DESIGN.md §3), carried one per line
// (line_codec.hpp) between clients and looprd.
//
//   request   {"id": N, "method": "...", "params": {...}}
//   response  {"id": N, "result": ...} | {"id": N, "error": {code, message, data?}}
//   event     {"event": "...", "data": {...}}        (no id)
//
// Parsers never throw; a refusal is an Error whose details carry
// {"rpc_code": C} (the ControlErrorCode to answer with) and, when the request
// id was readable, {"id": N}. control_error_from() and error_reply() turn such
// an Error, or any other Error, into the reply the server sends.
#pragma once

#include <cstdint>
#include <nlohmann/json.hpp>
#include <optional>
#include <string>
#include <variant>
#include <vector>

#include "common/error.hpp"

namespace loopr::proto {

inline constexpr int kProtocolVersion = 1;

enum class ControlErrorCode : int {
  parse_error = -32700,
  invalid_request = -32600,
  method_not_found = -32601,
  invalid_params = -32602,
  internal_error = -32603,
  loop_not_found = 1001,
  invalid_state = 1002,
  unauthorized = 1003,
  version_mismatch = 1004,
  note_not_found = 1005,
};

struct ControlError {
  int code = static_cast<int>(ControlErrorCode::internal_error);  // any int on the wire
  std::string message;
  nlohmann::json data = nullptr;  // omitted when null
  bool operator==(const ControlError&) const = default;
};

struct Request {
  std::int64_t id = 0;
  std::string method;
  nlohmann::json params = nlohmann::json::object();  // always an object
  bool operator==(const Request&) const = default;
};

struct Response {
  // nullopt only in a reply to a request whose id could not be read
  // (written as "id": null).
  std::optional<std::int64_t> id;
  std::variant<nlohmann::json, ControlError> body = nlohmann::json::object();

  static Response success(std::int64_t id, nlohmann::json result);
  static Response failure(std::optional<std::int64_t> id, ControlError error);
  bool is_error() const { return body.index() == 1; }
  bool operator==(const Response&) const = default;
};

struct Event {
  std::string event;
  nlohmann::json data = nlohmann::json::object();
  bool operator==(const Event&) const = default;
};

// Wire objects, ready for encode_line(). Never throw.
nlohmann::json to_json(const ControlError& error);
nlohmann::json to_json(const Request& request);
nlohmann::json to_json(const Response& response);
nlohmann::json to_json(const Event& event);

// Server side. Refuses with rpc_code -32600 (invalid_request): a non-object,
// a missing or non-integer id, a missing or empty method, params that are
// present but not an object. details["id"] is set whenever the id was a
// readable integer, so the reply can echo it.
Result<Request> parse_request(const nlohmann::json& object);

// Client side: a Response (has "id") or an Event (has "event", no "id").
Result<std::variant<Response, Event>> parse_server_message(const nlohmann::json& object);

// The ControlError for any Error: details["rpc_code"] when present, else
// invalid_params for errc::invalid_arguments and internal_error otherwise;
// data is the Error's own JSON ({"code", "message", "hint"?, "details"?}) with
// the routing keys rpc_code and id left out of details.
ControlError control_error_from(const Error& error);
// The reply to a refused request: control_error_from(error) with the id from
// error.details["id"] (null when unknown).
Response error_reply(const Error& error);

// ---- Typed params and results. parse_* refuse with rpc_code -32602. ----

// The refusal of a request's parameters, answered as invalid_params (-32602)
// with `message` and `hint` as they are.
Error invalid_params(std::string message, std::string hint = {});

// params[key] as a yes/no switch: absent or null → false, true or false as
// given, anything else → invalid_params naming the key.
Result<bool> flag_param(const nlohmann::json& params, const char* key);

// The params of a method that reads none: whatever the request carries is
// ignored.
struct NoParams {
  bool operator==(const NoParams&) const = default;
};

// ping: {pong: true, uptime_ms}.
struct PingResult {
  std::int64_t uptime_ms = 0;
  bool operator==(const PingResult&) const = default;
};

// daemon.shutdown: {shutting_down: true}.
struct ShutdownResult {
  bool operator==(const ShutdownResult&) const = default;
};

// initialize. `version` is the control protocol version the client speaks
// (kProtocolVersion); the daemon answers a mismatch with version_mismatch.
struct InitializeParams {
  std::string client;
  std::int64_t version = kProtocolVersion;
  bool operator==(const InitializeParams&) const = default;
};
struct InitializeResult {
  std::int64_t protocol = kProtocolVersion;
  std::string daemon_version;
  nlohmann::json capabilities = nlohmann::json::object();
  bool operator==(const InitializeResult&) const = default;
};

// tool.call. args defaults to {} when absent.
struct ToolCallParams {
  std::string tool;
  nlohmann::json args = nlohmann::json::object();
  std::string worktree;
  std::optional<std::string> loop_id;
  std::optional<std::uint64_t> timeout_ms;
  // Read-before-edit scope shared by several connections of one client (an
  // MCP session's calls arrive on several): files read by a call of session
  // S may be edited by a later call of S on any connection. Unset: the
  // connection is the scope. Ignored when loop_id is set.
  std::optional<std::string> session;
  bool operator==(const ToolCallParams&) const = default;
};

// approval.approve / approval.deny (reason only meaningful for deny).
struct ApprovalDecisionParams {
  std::string id;
  std::optional<std::string> reason;
  bool operator==(const ApprovalDecisionParams&) const = default;
};

// approval.always: the rules `looprctl approve ID --always` offers for the
// waiting call `id` (policy/always_rules.hpp); with save, they are saved for
// its repository and the call is approved.
struct ApprovalAlwaysParams {
  std::string id;
  bool save = false;
  bool operator==(const ApprovalAlwaysParams&) const = default;
};

// policy.rules: the saved rules ({repo} set: of that repository only);
// policy.forget: {id} of one.
struct PolicyRulesParams {
  std::optional<std::string> repo;
  bool operator==(const PolicyRulesParams&) const = default;
};
struct PolicyForgetParams {
  std::int64_t id = 0;
  bool operator==(const PolicyForgetParams&) const = default;
};

// tool.cancel: {call_id} → {cancelled}.
struct ToolCancelParams {
  std::string call_id;
  bool operator==(const ToolCancelParams&) const = default;
};
struct ToolCancelResult {
  bool cancelled = false;
  bool operator==(const ToolCancelResult&) const = default;
};

// approval.approve / approval.deny: {id, approved}.
struct ApprovalDecisionResult {
  std::string id;
  bool approved = false;
  bool operator==(const ApprovalDecisionResult&) const = default;
};

// events.subscribe. Empty (or absent on the wire) means every topic.
struct SubscribeParams {
  std::vector<std::string> topics;
  // Only events of this loop (data.loop_id or data.loop.id) when set.
  std::optional<std::string> loop_id;
  // Only events about calls this connection made (tool.started, tool.output,
  // approval.requested, approval.resolved: data.call_id of a running call of
  // this connection).
  bool own_calls = false;
  bool operator==(const SubscribeParams&) const = default;
};

nlohmann::json to_json(const InitializeParams& params);
nlohmann::json to_json(const InitializeResult& result);
nlohmann::json to_json(const ToolCallParams& params);
nlohmann::json to_json(const ApprovalDecisionParams& params);
nlohmann::json to_json(const ApprovalAlwaysParams& params);
nlohmann::json to_json(const PolicyRulesParams& params);
nlohmann::json to_json(const PolicyForgetParams& params);
nlohmann::json to_json(const SubscribeParams& params);
nlohmann::json to_json(const PingResult& result);
nlohmann::json to_json(const ShutdownResult& result);
nlohmann::json to_json(const ToolCancelParams& params);
nlohmann::json to_json(const ToolCancelResult& result);
nlohmann::json to_json(const ApprovalDecisionResult& result);

Result<InitializeParams> parse_initialize_params(const nlohmann::json& params);
Result<InitializeResult> parse_initialize_result(const nlohmann::json& result);
Result<ToolCallParams> parse_tool_call_params(const nlohmann::json& params);
Result<ApprovalDecisionParams> parse_approval_decision_params(const nlohmann::json& params);
Result<ApprovalAlwaysParams> parse_approval_always_params(const nlohmann::json& params);
Result<PolicyRulesParams> parse_policy_rules_params(const nlohmann::json& params);
Result<PolicyForgetParams> parse_policy_forget_params(const nlohmann::json& params);
Result<SubscribeParams> parse_subscribe_params(const nlohmann::json& params);
Result<ToolCancelParams> parse_tool_cancel_params(const nlohmann::json& params);

}  // namespace loopr::proto
