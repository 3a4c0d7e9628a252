#include "mcp/json_rpc.hpp"

#include <utility>

namespace loopr::mcp {

using json = nlohmann::json;

namespace {

bool valid_id(const json& id) {
  return id.is_string() || id.is_number_integer() || id.is_number_unsigned();
}

Message invalid(json id, std::string problem) {
  Message message;
  message.kind = MessageKind::invalid;
  message.id = valid_id(id) ? std::move(id) : json(nullptr);
  message.problem = std::move(problem);
  return message;
}

}  // namespace

Message classify(const json& value) {
  if (value.is_array()) {
    return invalid(nullptr,
                   "JSON-RPC batches are not part of MCP since 2025-06-18: send one "
                   "message per line (stdio) or per request (HTTP)");
  }
  if (!value.is_object()) return invalid(nullptr, "a message must be a JSON object");
  const json id = value.contains("id") ? value["id"] : json(nullptr);
  auto version = value.find("jsonrpc");
  if (version == value.end() || *version != "2.0") {
    return invalid(id, "a message needs \"jsonrpc\": \"2.0\"");
  }
  Message message;
  if (auto method = value.find("method"); method != value.end()) {
    if (!method->is_string() || method->get_ref<const std::string&>().empty()) {
      return invalid(id, "\"method\" must be a non-empty string");
    }
    message.method = method->get<std::string>();
    if (auto params = value.find("params"); params != value.end() && !params->is_null()) {
      if (!params->is_object()) return invalid(id, "\"params\" must be an object");
      message.params = *params;
    }
    if (!value.contains("id")) {
      message.kind = MessageKind::notification;
      return message;
    }
    if (!valid_id(id)) return invalid(nullptr, "a request's \"id\" must be a string or an integer");
    message.kind = MessageKind::request;
    message.id = id;
    return message;
  }
  const bool has_result = value.contains("result");
  const bool has_error = value.contains("error");
  if (has_result == has_error) {
    return invalid(id,
                   "a message needs \"method\" (a request), or one of \"result\" and "
                   "\"error\" (a response)");
  }
  if (has_error && !value["error"].is_object()) return invalid(id, "\"error\" must be an object");
  message.kind = MessageKind::response;
  message.id = id;
  if (has_result) message.result = value["result"];
  if (has_error) message.error = value["error"];
  return message;
}

json result_response(const json& id, json result) {
  return {{"jsonrpc", "2.0"}, {"id", id}, {"result", std::move(result)}};
}

json error_response(const json& id, int code, std::string message, json data) {
  json error = {{"code", code}, {"message", std::move(message)}};
  if (!data.is_null()) error["data"] = std::move(data);
  return {{"jsonrpc", "2.0"}, {"id", id}, {"error", std::move(error)}};
}

json notification(std::string method, json params) {
  json out = {{"jsonrpc", "2.0"}, {"method", std::move(method)}};
  if (!params.is_null()) out["params"] = std::move(params);
  return out;
}

json request(const json& id, std::string method, json params) {
  json out = {{"jsonrpc", "2.0"}, {"id", id}, {"method", std::move(method)}};
  if (!params.is_null()) out["params"] = std::move(params);
  return out;
}

std::string encode(const json& message) {
  return message.dump(-1, ' ', false, json::error_handler_t::replace);
}

std::string id_key(const json& id) {
  return id.is_string() ? "s:" + id.get<std::string>() : "n:" + id.dump();
}

}  // namespace loopr::mcp
