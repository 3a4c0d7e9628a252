// JSON forms of the neutral conversation model (conversation.hpp). The
// parsers take untrusted JSON (a store record, a hand-written scripted
// session) and answer invalid_arguments naming the field; unknown keys are
// ignored so that older readers accept newer records.
#include <string>
#include <utility>

#include "llm/conversation.hpp"

namespace loopr::llm {

using nlohmann::json;

std::string_view to_string(Role role) {
  switch (role) {
    case Role::user:
      return "user";
    case Role::assistant:
      return "assistant";
  }
  return "user";
}

std::string_view to_string(StopReason reason) {
  switch (reason) {
    case StopReason::end_turn:
      return "end_turn";
    case StopReason::tool_use:
      return "tool_use";
    case StopReason::max_tokens:
      return "max_tokens";
    case StopReason::stop_sequence:
      return "stop_sequence";
    case StopReason::refusal:
      return "refusal";
    case StopReason::other:
      return "other";
  }
  return "other";
}

StopReason parse_stop_reason(std::string_view text) {
  if (text == "end_turn") return StopReason::end_turn;
  if (text == "tool_use") return StopReason::tool_use;
  if (text == "max_tokens") return StopReason::max_tokens;
  if (text == "stop_sequence") return StopReason::stop_sequence;
  if (text == "refusal") return StopReason::refusal;
  return StopReason::other;
}

Usage& Usage::operator+=(const Usage& other) {
  input_tokens += other.input_tokens;
  output_tokens += other.output_tokens;
  cache_read_tokens += other.cache_read_tokens;
  cache_write_tokens += other.cache_write_tokens;
  return *this;
}

namespace {

Error field_error(std::string_view where, std::string_view field, std::string_view what) {
  std::string message(where);
  message += ": \"";
  message += field;
  message += "\" ";
  message += what;
  Error error = make_error(loopr::errc::invalid_arguments, std::move(message));
  error.details = {{"field", std::string(field)}};
  return error;
}

Error not_object(std::string_view where) {
  return make_error(loopr::errc::invalid_arguments, std::string(where) + " must be a JSON object");
}

// Reads an optional string member into `out`; absent or null keeps `out`.
Result<void> read_string(const json& object, std::string_view where, const char* field,
                         std::string& out, bool required = false) {
  auto it = object.find(field);
  if (it == object.end() || it->is_null()) {
    if (required) return field_error(where, field, "is missing");
    return {};
  }
  if (!it->is_string()) return field_error(where, field, "must be a string");
  out = it->get<std::string>();
  return {};
}

Result<void> read_bool(const json& object, std::string_view where, const char* field, bool& out) {
  auto it = object.find(field);
  if (it == object.end() || it->is_null()) return {};
  if (!it->is_boolean()) return field_error(where, field, "must be true or false");
  out = it->get<bool>();
  return {};
}

Result<void> read_count(const json& object, std::string_view where, const char* field,
                        std::int64_t& out) {
  auto it = object.find(field);
  if (it == object.end() || it->is_null()) return {};
  if (it->is_number_unsigned()) {
    if (it->get<std::uint64_t>() > static_cast<std::uint64_t>(INT64_MAX)) {
      return field_error(where, field, "is too large");
    }
    out = static_cast<std::int64_t>(it->get<std::uint64_t>());
    return {};
  }
  if (it->is_number_integer() && it->get<std::int64_t>() >= 0) {
    out = it->get<std::int64_t>();
    return {};
  }
  return field_error(where, field, "must be a whole number, 0 or more");
}

// Parses an array member with `parse`, naming the element that failed.
template <class T, class Parse>
Result<void> read_array(const json& object, std::string_view where, const char* field,
                        std::vector<T>& out, Parse parse) {
  auto it = object.find(field);
  if (it == object.end() || it->is_null()) return {};
  if (!it->is_array()) return field_error(where, field, "must be an array");
  for (std::size_t i = 0; i < it->size(); ++i) {
    auto item = parse((*it)[i]);
    if (!item) {
      Error error = std::move(item).error();
      error.message =
          std::string(where) + ": \"" + field + "\"[" + std::to_string(i) + "]: " + error.message;
      return error;
    }
    out.push_back(std::move(*item));
  }
  return {};
}

}  // namespace

json to_json(const ToolCall& call) {
  return {{"id", call.id}, {"name", call.name}, {"arguments", call.arguments}};
}

json to_json(const ToolResult& result) {
  return {{"call_id", result.call_id},
          {"name", result.name},
          {"content", result.content},
          {"is_error", result.is_error}};
}

json to_json(const Message& message) {
  json out = {{"role", to_string(message.role)}, {"text", message.text}};
  if (!message.tool_calls.empty()) {
    json calls = json::array();
    for (const auto& call : message.tool_calls)
      calls.push_back(to_json(call));
    out["tool_calls"] = std::move(calls);
  }
  if (!message.tool_results.empty()) {
    json results = json::array();
    for (const auto& result : message.tool_results)
      results.push_back(to_json(result));
    out["tool_results"] = std::move(results);
  }
  return out;
}

json to_json(const Usage& usage) {
  return {{"input_tokens", usage.input_tokens},
          {"output_tokens", usage.output_tokens},
          {"cache_read_tokens", usage.cache_read_tokens},
          {"cache_write_tokens", usage.cache_write_tokens}};
}

json to_json(const ModelTurn& turn) {
  json calls = json::array();
  for (const auto& call : turn.tool_calls)
    calls.push_back(to_json(call));
  return {{"text", turn.text},
          {"tool_calls", std::move(calls)},
          {"stop_reason", to_string(turn.stop_reason)},
          {"model", turn.model},
          {"usage", to_json(turn.usage)}};
}

Result<ToolCall> tool_call_from_json(const json& value) {
  constexpr std::string_view where = "tool call";
  if (!value.is_object()) return not_object(where);
  ToolCall call;
  if (auto r = read_string(value, where, "id", call.id, true); !r) return std::move(r).error();
  if (auto r = read_string(value, where, "name", call.name, true); !r) {
    return std::move(r).error();
  }
  auto it = value.find("arguments");
  if (it == value.end() || it->is_null()) {
    call.arguments = "{}";
  } else if (it->is_string()) {
    call.arguments = it->get<std::string>();
  } else {
    call.arguments = it->dump();
  }
  return call;
}

Result<ToolResult> tool_result_from_json(const json& value) {
  constexpr std::string_view where = "tool result";
  if (!value.is_object()) return not_object(where);
  ToolResult result;
  if (auto r = read_string(value, where, "call_id", result.call_id, true); !r) {
    return std::move(r).error();
  }
  if (auto r = read_string(value, where, "name", result.name); !r) return std::move(r).error();
  if (auto r = read_string(value, where, "content", result.content); !r) {
    return std::move(r).error();
  }
  if (auto r = read_bool(value, where, "is_error", result.is_error); !r) {
    return std::move(r).error();
  }
  return result;
}

Result<Message> message_from_json(const json& value) {
  constexpr std::string_view where = "message";
  if (!value.is_object()) return not_object(where);
  Message message;
  std::string role;
  if (auto r = read_string(value, where, "role", role, true); !r) return std::move(r).error();
  if (role == "user") {
    message.role = Role::user;
  } else if (role == "assistant") {
    message.role = Role::assistant;
  } else {
    return field_error(where, "role", "must be \"user\" or \"assistant\"");
  }
  if (auto r = read_string(value, where, "text", message.text); !r) return std::move(r).error();
  if (auto r = read_array(value, where, "tool_calls", message.tool_calls, tool_call_from_json);
      !r) {
    return std::move(r).error();
  }
  if (auto r =
          read_array(value, where, "tool_results", message.tool_results, tool_result_from_json);
      !r) {
    return std::move(r).error();
  }
  if (message.role == Role::user && !message.tool_calls.empty()) {
    return field_error(where, "tool_calls", "is only allowed in an assistant message");
  }
  if (message.role == Role::assistant && !message.tool_results.empty()) {
    return field_error(where, "tool_results", "is only allowed in a user message");
  }
  return message;
}

Result<Usage> usage_from_json(const json& value) {
  constexpr std::string_view where = "usage";
  if (!value.is_object()) return not_object(where);
  Usage usage;
  for (auto [field, out] : {std::pair{"input_tokens", &usage.input_tokens},
                            std::pair{"output_tokens", &usage.output_tokens},
                            std::pair{"cache_read_tokens", &usage.cache_read_tokens},
                            std::pair{"cache_write_tokens", &usage.cache_write_tokens}}) {
    if (auto r = read_count(value, where, field, *out); !r) return std::move(r).error();
  }
  return usage;
}

// Every member is optional, for hand-written scripted sessions: a turn
// without "stop_reason" ends with tool_use when it has tool calls, else
// end_turn.
Result<ModelTurn> model_turn_from_json(const json& value) {
  constexpr std::string_view where = "model turn";
  if (!value.is_object()) return not_object(where);
  ModelTurn turn;
  if (auto r = read_string(value, where, "text", turn.text); !r) return std::move(r).error();
  if (auto r = read_array(value, where, "tool_calls", turn.tool_calls, tool_call_from_json); !r) {
    return std::move(r).error();
  }
  std::string stop;
  if (auto r = read_string(value, where, "stop_reason", stop); !r) return std::move(r).error();
  if (stop.empty()) {
    turn.stop_reason = turn.tool_calls.empty() ? StopReason::end_turn : StopReason::tool_use;
  } else {
    turn.stop_reason = parse_stop_reason(stop);
    if (turn.stop_reason == StopReason::other && stop != "other") {
      return field_error(where, "stop_reason",
                         "must be end_turn, tool_use, max_tokens, stop_sequence, refusal or other");
    }
  }
  if (auto r = read_string(value, where, "model", turn.model); !r) return std::move(r).error();
  if (auto it = value.find("usage"); it != value.end() && !it->is_null()) {
    auto usage = usage_from_json(*it);
    if (!usage) {
      Error error = std::move(usage).error();
      error.message = std::string(where) + ": " + error.message;
      return error;
    }
    turn.usage = *usage;
  }
  return turn;
}

}  // namespace loopr::llm
