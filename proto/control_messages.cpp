#include "proto/control_messages.hpp"

#include <limits>
#include <utility>

#include "proto/json_fields.hpp"

namespace loopr::proto {
namespace {

using detail::as_int64;
using detail::FieldReader;
using nlohmann::json;

constexpr std::int64_t kInt64Min = std::numeric_limits<std::int64_t>::min();
constexpr std::int64_t kInt64Max = std::numeric_limits<std::int64_t>::max();
constexpr std::size_t kMaxMethodBytes = 256;

json rpc_details(ControlErrorCode code) {
  return json{{"rpc_code", static_cast<int>(code)}};
}

Error invalid_request(std::string message, std::optional<std::int64_t> id) {
  Error error = make_error(errc::protocol, std::move(message),
                           R"(send {"id": <integer>, "method": "<name>", "params": {...}})");
  error.details = rpc_details(ControlErrorCode::invalid_request);
  if (id) error.details["id"] = *id;
  return error;
}

template <class T>
Result<T> finish(FieldReader& f, T value) {
  if (!f.ok()) return f.take_error();
  return value;
}

FieldReader params_reader(const json& params, const char* method) {
  return FieldReader(params, std::string("params of '") + method + "'",
                     rpc_details(ControlErrorCode::invalid_params));
}

}  // namespace

Response Response::success(std::int64_t id, json result) {
  return Response{id, std::move(result)};
}

Response Response::failure(std::optional<std::int64_t> id, ControlError error) {
  return Response{id, std::move(error)};
}

json to_json(const ControlError& error) {
  json out = {{"code", error.code}, {"message", error.message}};
  if (!error.data.is_null()) out["data"] = error.data;
  return out;
}

json to_json(const Request& request) {
  return json{{"id", request.id},
              {"method", request.method},
              {"params", request.params.is_object() ? request.params : json::object()}};
}

json to_json(const Response& response) {
  json out = json::object();
  out["id"] = response.id ? json(*response.id) : json(nullptr);
  if (const auto* error = std::get_if<ControlError>(&response.body)) {
    out["error"] = to_json(*error);
  } else {
    out["result"] = std::get<json>(response.body);
  }
  return out;
}

json to_json(const Event& event) {
  return json{{"event", event.event}, {"data", event.data}};
}

Result<Request> parse_request(const json& object) {
  if (!object.is_object()) {
    return invalid_request(
        std::string("a request must be a JSON object, not ") + object.type_name(), std::nullopt);
  }
  const auto id_it = object.find("id");
  if (id_it == object.end() || id_it->is_null()) {
    return invalid_request("request has no 'id'", std::nullopt);
  }
  const auto id = as_int64(*id_it);
  if (!id) return invalid_request("request 'id' must be a 64-bit integer", std::nullopt);

  const auto method_it = object.find("method");
  if (method_it == object.end() || !method_it->is_string()) {
    return invalid_request("request has no string 'method'", id);
  }
  const auto& method = method_it->get_ref<const std::string&>();
  if (method.empty() || method.size() > kMaxMethodBytes) {
    return invalid_request(
        "request 'method' must be 1 to " + std::to_string(kMaxMethodBytes) + " bytes", id);
  }
  Request request{*id, method, json::object()};
  const auto params_it = object.find("params");
  if (params_it != object.end() && !params_it->is_null()) {
    if (!params_it->is_object()) {
      return invalid_request(
          std::string("request 'params' must be an object, not ") + params_it->type_name(), id);
    }
    request.params = *params_it;
  }
  return request;
}

Result<std::variant<Response, Event>> parse_server_message(const json& object) {
  using Message = std::variant<Response, Event>;
  if (!object.is_object()) {
    return make_error(errc::protocol, std::string("a server message must be a JSON object, not ") +
                                          object.type_name());
  }
  const bool has_id = object.contains("id");
  if (!has_id) {
    FieldReader f(object, "event");
    Event event;
    event.event = f.identifier("event", kMaxMethodBytes);
    if (f.ok() && object.contains("data")) event.data = object.at("data");
    if (!f.ok()) return f.take_error();
    return Message(std::move(event));
  }

  FieldReader f(object, "response");
  Response response;
  const json& id = object.at("id");
  if (!id.is_null()) {
    const auto n = as_int64(id);
    if (!n) f.fail("id", "must be a 64-bit integer or null");
    response.id = n;
  }
  const bool has_result = object.contains("result");
  const bool has_error = object.contains("error");
  if (f.ok() && has_result == has_error) {
    f.fail("", "must hold exactly one of 'result' and 'error'");
  }
  if (f.ok() && has_result) response.body = object.at("result");
  if (f.ok() && has_error) {
    FieldReader e(object.at("error"), "response error");
    ControlError error;
    error.code = static_cast<int>(
        e.signed_integer("code", std::numeric_limits<int>::min(), std::numeric_limits<int>::max()));
    error.message = e.text("message");
    if (e.ok() && object.at("error").contains("data")) error.data = object.at("error").at("data");
    if (!e.ok()) return e.take_error();
    response.body = std::move(error);
  }
  if (!f.ok()) return f.take_error();
  return Message(std::move(response));
}

ControlError control_error_from(const Error& error) {
  ControlError out;
  out.message = error.message;
  out.code =
      static_cast<int>(error.code == errc::invalid_arguments ? ControlErrorCode::invalid_params
                                                             : ControlErrorCode::internal_error);
  if (error.details.is_object()) {
    const auto it = error.details.find("rpc_code");
    if (it != error.details.end()) {
      const auto code = as_int64(*it);
      if (code && *code >= std::numeric_limits<int>::min() &&
          *code <= std::numeric_limits<int>::max()) {
        out.code = static_cast<int>(*code);
      }
    }
  }
  // data carries the loopr error ({"code", "message", "hint"?, "details"?})
  // without the routing keys this module added.
  Error shown = error;
  if (shown.details.is_object()) {
    shown.details.erase("rpc_code");
    shown.details.erase("id");
    if (shown.details.empty()) shown.details = nullptr;
  }
  out.data = shown.to_json();
  return out;
}

Response error_reply(const Error& error) {
  std::optional<std::int64_t> id;
  if (error.details.is_object()) {
    const auto it = error.details.find("id");
    if (it != error.details.end()) id = as_int64(*it);
  }
  return Response::failure(id, control_error_from(error));
}

json to_json(const InitializeParams& params) {
  return json{{"client", params.client}, {"version", params.version}};
}

json to_json(const InitializeResult& result) {
  return json{
      {"protocol", result.protocol},
      {"daemon_version", result.daemon_version},
      {"capabilities", result.capabilities.is_object() ? result.capabilities : json::object()}};
}

json to_json(const ToolCallParams& params) {
  json out = {{"tool", params.tool},
              {"args", params.args.is_object() ? params.args : json::object()},
              {"worktree", params.worktree}};
  if (params.loop_id) out["loop_id"] = *params.loop_id;
  if (params.timeout_ms) out["timeout_ms"] = *params.timeout_ms;
  if (params.session) out["session"] = *params.session;
  return out;
}

json to_json(const ApprovalAlwaysParams& params) {
  return {{"id", params.id}, {"save", params.save}};
}

json to_json(const PolicyRulesParams& params) {
  json out = json::object();
  if (params.repo) out["repo"] = *params.repo;
  return out;
}

json to_json(const PolicyForgetParams& params) {
  return {{"id", params.id}};
}

json to_json(const ApprovalDecisionParams& params) {
  json out = {{"id", params.id}};
  if (params.reason) out["reason"] = *params.reason;
  return out;
}

json to_json(const SubscribeParams& params) {
  json out = {{"topics", params.topics}};
  if (params.loop_id) out["loop_id"] = *params.loop_id;
  if (params.own_calls) out["own_calls"] = true;
  return out;
}

Result<InitializeParams> parse_initialize_params(const json& params) {
  FieldReader f = params_reader(params, "initialize");
  InitializeParams out;
  out.client = f.identifier("client", 256);
  out.version = f.signed_integer("version", kInt64Min, kInt64Max);
  return finish(f, std::move(out));
}

Result<InitializeResult> parse_initialize_result(const json& result) {
  FieldReader f(result, "result of 'initialize'");
  InitializeResult out;
  out.protocol = f.signed_integer("protocol", kInt64Min, kInt64Max);
  out.daemon_version = f.text("daemon_version");
  out.capabilities = f.object("capabilities", false);
  return finish(f, std::move(out));
}

Result<ToolCallParams> parse_tool_call_params(const json& params) {
  FieldReader f = params_reader(params, "tool.call");
  ToolCallParams out;
  out.tool = f.identifier("tool", 256);
  out.args = f.object("args", false);
  out.worktree = f.identifier("worktree", 4096);
  out.loop_id = f.optional_text("loop_id", 256);
  out.timeout_ms = f.optional_unsigned("timeout_ms");
  out.session = f.optional_text("session", 128);
  return finish(f, std::move(out));
}

Result<ApprovalDecisionParams> parse_approval_decision_params(const json& params) {
  FieldReader f = params_reader(params, "approval decision");
  ApprovalDecisionParams out;
  out.id = f.identifier("id", 256);
  out.reason = f.optional_text("reason");
  return finish(f, std::move(out));
}

Result<ApprovalAlwaysParams> parse_approval_always_params(const json& params) {
  FieldReader f = params_reader(params, "approval.always");
  ApprovalAlwaysParams out;
  out.id = f.identifier("id", 256);
  out.save = f.has("save") && f.boolean("save");
  return finish(f, std::move(out));
}

Result<PolicyRulesParams> parse_policy_rules_params(const json& params) {
  FieldReader f = params_reader(params, "policy.rules");
  PolicyRulesParams out;
  out.repo = f.optional_text("repo", 4096);
  return finish(f, std::move(out));
}

Result<PolicyForgetParams> parse_policy_forget_params(const json& params) {
  FieldReader f = params_reader(params, "policy.forget");
  PolicyForgetParams out;
  out.id = f.signed_integer("id", 1, static_cast<std::int64_t>(detail::kMaxSafeInteger));
  return finish(f, std::move(out));
}

Result<SubscribeParams> parse_subscribe_params(const json& params) {
  FieldReader f = params_reader(params, "events.subscribe");
  SubscribeParams out;
  out.topics = f.string_list("topics", false);
  out.loop_id = f.optional_text("loop_id", 256);
  out.own_calls = f.has("own_calls") && f.boolean("own_calls");
  return finish(f, std::move(out));
}

Error invalid_params(std::string message, std::string hint) {
  return make_error(errc::invalid_arguments, std::move(message), std::move(hint));
}

Result<bool> flag_param(const json& params, const char* key) {
  const auto it = params.is_object() ? params.find(key) : params.end();
  if (it == params.end() || it->is_null()) return false;
  if (!it->is_boolean()) return invalid_params(std::string(key) + " must be true or false");
  return it->get<bool>();
}

json to_json(const PingResult& result) {
  return json{{"pong", true}, {"uptime_ms", result.uptime_ms}};
}

json to_json(const ShutdownResult&) {
  return json{{"shutting_down", true}};
}

json to_json(const ToolCancelParams& params) {
  return json{{"call_id", params.call_id}};
}

json to_json(const ToolCancelResult& result) {
  return json{{"cancelled", result.cancelled}};
}

json to_json(const ApprovalDecisionResult& result) {
  return json{{"id", result.id}, {"approved", result.approved}};
}

Result<ToolCancelParams> parse_tool_cancel_params(const json& params) {
  auto call_id = params.find("call_id");
  if (call_id == params.end() || !call_id->is_string()) {
    return invalid_params(
        "tool.cancel needs `call_id`, the id a tool.started event or tool.call result gave");
  }
  return ToolCancelParams{call_id->get<std::string>()};
}

}  // namespace loopr::proto
