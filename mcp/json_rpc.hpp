// JSON-RPC 2.0 messages as the Model Context Protocol uses them (MCP spec
// 2025-11-25, "Base Protocol"): requests {jsonrpc, id, method, params?},
// notifications {jsonrpc, method, params?}, responses {jsonrpc, id, result}
// or {jsonrpc, id, error: {code, message, data?}}. Batches (JSON arrays) were
// removed from the protocol in 2025-06-18 and are refused here.
//
// Written here rather than taken from a library: Debian 12 packages no
// JSON-RPC library for C++, and the rules MCP adds (ids are strings or
// integers, never null in a request) are a few lines over nlohmann::json.
// Pure functions, thread-safe.
#pragma once

#include <nlohmann/json.hpp>
#include <string>

namespace loopr::mcp {

// The JSON-RPC error codes MCP uses.
namespace rpc_code {
inline constexpr int parse_error = -32700;
inline constexpr int invalid_request = -32600;
inline constexpr int method_not_found = -32601;
inline constexpr int invalid_params = -32602;
inline constexpr int internal_error = -32603;
}  // namespace rpc_code

enum class MessageKind { request, notification, response, invalid };

struct Message {
  MessageKind kind = MessageKind::invalid;
  nlohmann::json id;      // request and response (null for invalid ones we can't tie to a request)
  std::string method;     // request and notification
  nlohmann::json params;  // an object, or null when absent
  nlohmann::json result;  // response: the result ...
  nlohmann::json error;   // ... or the error object
  std::string problem;    // invalid: what is wrong, for the error message
};

// What `value` is. A request or notification whose params are not an object
// (or absent) is invalid; so is anything without "jsonrpc": "2.0".
Message classify(const nlohmann::json& value);

nlohmann::json result_response(const nlohmann::json& id, nlohmann::json result);
nlohmann::json error_response(const nlohmann::json& id, int code, std::string message,
                              nlohmann::json data = nullptr);
nlohmann::json notification(std::string method, nlohmann::json params);
nlohmann::json request(const nlohmann::json& id, std::string method, nlohmann::json params);

// One line of compact JSON without the newline; text that is not valid UTF-8
// becomes U+FFFD. Never throws.
std::string encode(const nlohmann::json& message);

// A stable map key for a request id (1 and "1" differ).
std::string id_key(const nlohmann::json& id);

}  // namespace loopr::mcp
