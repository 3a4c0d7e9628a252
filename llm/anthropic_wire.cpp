#include "llm/anthropic_wire.hpp"

#include <map>
#include <optional>
#include <utility>
#include <vector>

#include "llm/provider.hpp"
#include "proto/json_bounded.hpp"

namespace loopr::llm {

using nlohmann::json;

namespace {

// The Messages API honours at most this many cache_control breakpoints.
constexpr int kMaxCacheBreakpoints = 4;

json ephemeral() {
  return {{"type", "ephemeral"}};
}

// Marks the last block of `content` that may carry cache_control (the API
// refuses it on an empty text block); false when none may.
bool mark_last_block(json& content) {
  for (auto block = content.rbegin(); block != content.rend(); ++block) {
    if (wire::string_member(*block, "type") == "text" &&
        wire::string_member(*block, "text").empty()) {
      continue;
    }
    (*block)["cache_control"] = ephemeral();
    return true;
  }
  return false;
}

// The rolling breakpoints: the last message (this request's whole prefix is
// written to the cache) and the user message before it (the previous
// request's last message, so its cached prefix is read even when this turn
// added more blocks than the API looks back over). `slots` is what the
// system prompt and the tools left; the earlier one is dropped first.
void mark_rolling_breakpoints(json& messages, const std::vector<Message>& source, int slots) {
  if (source.empty() || slots <= 0) return;
  const std::size_t last = source.size() - 1;
  std::vector<std::size_t> marks;
  for (std::size_t i = last; i-- > 0;) {
    if (source[i].role == Role::user) {
      marks.push_back(i);
      break;
    }
  }
  marks.push_back(last);
  if (marks.size() > static_cast<std::size_t>(slots)) {
    marks.erase(marks.begin(), marks.begin() + static_cast<std::ptrdiff_t>(marks.size()) - slots);
  }
  for (std::size_t index : marks)
    mark_last_block(messages[index]["content"]);
}

// A tool call's arguments as the tool_use block's input: the API wants an
// object, and a model's malformed arguments must not make the whole
// conversation unsendable.
json tool_input(const std::string& arguments) {
  auto input = proto::parse_json_bounded(arguments);
  if (!input || !input->is_object()) return json::object();
  return std::move(input).value();
}

json message_json(const Message& message) {
  json content = json::array();
  if (message.role == Role::user) {
    for (const auto& result : message.tool_results) {
      content.push_back({{"type", "tool_result"},
                         {"tool_use_id", result.call_id},
                         {"content", result.content},
                         {"is_error", result.is_error}});
    }
    if (!message.text.empty() || content.empty()) {
      content.push_back({{"type", "text"}, {"text", message.text}});
    }
  } else {
    if (!message.text.empty() || message.tool_calls.empty()) {
      content.push_back({{"type", "text"}, {"text", message.text}});
    }
    for (const auto& call : message.tool_calls) {
      content.push_back({{"type", "tool_use"},
                         {"id", call.id},
                         {"name", call.name},
                         {"input", tool_input(call.arguments)}});
    }
  }
  return {{"role", to_string(message.role)}, {"content", std::move(content)}};
}

Usage anthropic_usage(const json& usage) {
  Usage out;
  out.input_tokens = wire::count_member(usage, "input_tokens");
  out.output_tokens = wire::count_member(usage, "output_tokens");
  out.cache_read_tokens = wire::count_member(usage, "cache_read_input_tokens");
  out.cache_write_tokens = wire::count_member(usage, "cache_creation_input_tokens");
  return out;
}

StopReason stop_reason_from(const std::string& text, bool has_tool_calls) {
  if (text.empty()) return has_tool_calls ? StopReason::tool_use : StopReason::end_turn;
  return parse_stop_reason(text);
}

Error anthropic_protocol_error(std::string message) {
  return make_error(errc::provider_protocol, "anthropic: " + std::move(message),
                    "check that base_url points at an Anthropic Messages API endpoint");
}

// {"type": "error", "error": {"type", "message"}} → "type: message".
std::string anthropic_error_words(const json& body) {
  const json* error = nullptr;
  if (body.is_object()) {
    auto it = body.find("error");
    if (it != body.end() && it->is_object()) error = &*it;
  }
  if (error == nullptr) return {};
  std::string type = wire::string_member(*error, "type");
  std::string message = wire::string_member(*error, "message");
  if (type.empty()) return message;
  if (message.empty()) return type;
  return type + ": " + message;
}

// errc::context_overflow when an error body says the request is too long
// for the context window: "prompt is too long: N tokens > M maximum", "input
// length and `max_tokens` exceed context limit: N + K > M, ...", or the
// request_too_large type (HTTP 413). `status` 0: an event inside a stream.
std::optional<Error> anthropic_overflow(const json& body, long status) {
  std::string type;
  std::string message;
  if (body.is_object()) {
    if (auto it = body.find("error"); it != body.end() && it->is_object()) {
      type = wire::string_member(*it, "type");
      message = wire::string_member(*it, "message");
    }
  }
  std::int64_t prompt_tokens = 0;
  std::int64_t window = 0;
  if (message.find("prompt is too long") != std::string::npos) {
    prompt_tokens = wire::number_after(message, "prompt is too long:").value_or(0);
    window = wire::number_after(message, ">").value_or(0);
  } else if (message.find("exceed context limit") != std::string::npos) {
    prompt_tokens = wire::number_after(message, "exceed context limit:").value_or(0);
    window = wire::number_after(message, ">").value_or(0);
  } else if (type != "request_too_large" && status != 413) {
    return std::nullopt;
  }
  return wire::context_overflow_error("anthropic", anthropic_error_words(body), prompt_tokens,
                                      window, status);
}

// An error event inside a stream: retrying helps when the provider says it
// is overloaded or failed internally.
Error stream_error(const json& body) {
  if (auto overflow = anthropic_overflow(body, 0)) return std::move(*overflow);
  std::string type;
  if (body.contains("error") && body["error"].is_object()) {
    type = wire::string_member(body["error"], "type");
  }
  bool retryable = type == "overloaded_error" || type == "api_error" || type == "rate_limit_error";
  std::string words = anthropic_error_words(body);
  Error error = make_error(retryable ? errc::provider_unavailable : errc::provider_request,
                           "anthropic stream error: " + (words.empty() ? "unknown" : words));
  error.details = {{"error_type", type}};
  return error;
}

class AnthropicStream : public StreamAccumulator {
 public:
  Result<void> feed(const SseEvent& event, const TextSink& on_text) override {
    if (event.type == "ping") return {};
    auto parsed = wire::parse_json(event.data, "anthropic stream event '" + event.type + "'");
    if (!parsed) return std::move(parsed).error();
    const json& data = *parsed;
    if (!data.is_object())
      return anthropic_protocol_error("stream event '" + event.type + "' is not an object");
    std::string type = wire::string_member(data, "type");
    if (type.empty()) type = event.type;

    if (type == "message_start") {
      const json& message = data.contains("message") ? data["message"] : json::object();
      turn_.model = wire::string_member(message, "model");
      if (message.is_object() && message.contains("usage"))
        usage_ = anthropic_usage(message["usage"]);
    } else if (type == "content_block_start") {
      const json& block = data.contains("content_block") ? data["content_block"] : json::object();
      Block& b = blocks_[index_of(data)];
      b.type = wire::string_member(block, "type");
      if (b.type == "tool_use") {
        b.id = wire::string_member(block, "id");
        b.name = wire::string_member(block, "name");
        if (block.contains("input") && block["input"].is_object() && !block["input"].empty()) {
          b.start_input = wire::dump(block["input"]);
        }
      } else if (b.type == "text") {
        std::string text = wire::string_member(block, "text");
        if (!text.empty()) append_text(b, text, on_text);
      }
    } else if (type == "content_block_delta") {
      const json& delta = data.contains("delta") ? data["delta"] : json::object();
      std::string delta_type = wire::string_member(delta, "type");
      Block& b = blocks_[index_of(data)];
      if (delta_type == "text_delta") {
        if (b.type.empty()) b.type = "text";
        append_text(b, wire::string_member(delta, "text"), on_text);
      } else if (delta_type == "input_json_delta") {
        b.partial_json += wire::string_member(delta, "partial_json");
      }
    } else if (type == "message_delta") {
      if (data.contains("delta")) {
        std::string reason = wire::string_member(data["delta"], "stop_reason");
        if (!reason.empty()) stop_reason_ = reason;
      }
      // message_delta's usage is cumulative: a count it carries replaces ours.
      if (data.contains("usage") && data["usage"].is_object()) {
        const json& usage = data["usage"];
        Usage update = anthropic_usage(usage);
        if (usage.contains("input_tokens")) usage_.input_tokens = update.input_tokens;
        if (usage.contains("output_tokens")) usage_.output_tokens = update.output_tokens;
        if (usage.contains("cache_read_input_tokens")) {
          usage_.cache_read_tokens = update.cache_read_tokens;
        }
        if (usage.contains("cache_creation_input_tokens")) {
          usage_.cache_write_tokens = update.cache_write_tokens;
        }
      }
    } else if (type == "message_stop") {
      complete_ = true;
    } else if (type == "error") {
      return stream_error(data);
    }
    // content_block_stop and event types added later need nothing.
    return {};
  }

  bool complete() const override { return complete_; }

  Result<ModelTurn> finish() override {
    if (!complete_) {
      return make_error(errc::provider_unavailable,
                        "anthropic: the stream ended before message_stop");
    }
    ModelTurn turn = turn_;
    for (auto& [index, block] : blocks_) {
      if (block.type == "text") {
        turn.text += block.text;
      } else if (block.type == "tool_use") {
        std::string arguments = !block.partial_json.empty()  ? block.partial_json
                                : !block.start_input.empty() ? block.start_input
                                                             : "{}";
        turn.tool_calls.push_back({block.id, block.name, std::move(arguments)});
      }
    }
    turn.stop_reason = stop_reason_from(stop_reason_, !turn.tool_calls.empty());
    turn.usage = usage_;
    return turn;
  }

 private:
  struct Block {
    std::string type;
    std::string text;
    std::string id;
    std::string name;
    std::string partial_json;
    std::string start_input;
  };

  static std::int64_t index_of(const json& data) { return wire::count_member(data, "index"); }

  static void append_text(Block& block, const std::string& text, const TextSink& on_text) {
    if (text.empty()) return;
    block.text += text;
    if (on_text) on_text(text);
  }

  ModelTurn turn_;
  std::map<std::int64_t, Block> blocks_;
  std::string stop_reason_;
  Usage usage_;
  bool complete_ = false;
};

}  // namespace

json AnthropicWire::request_body(const ModelRequest& request) const {
  json body = {{"model", request.model.empty() ? options_.model : request.model},
               {"max_tokens", request.max_tokens}};
  if (!request.system.empty()) {
    json block = {{"type", "text"}, {"text", request.system}};
    if (options_.prompt_caching) block["cache_control"] = ephemeral();
    body["system"] = json::array({std::move(block)});
  }
  if (!request.tools.empty()) {
    json tools = json::array();
    for (const auto& tool : request.tools) {
      tools.push_back({{"name", tool.name},
                       {"description", tool.description},
                       {"input_schema", tool.input_schema.is_null() ? json{{"type", "object"}}
                                                                    : tool.input_schema}});
    }
    if (options_.prompt_caching) tools.back()["cache_control"] = ephemeral();
    body["tools"] = std::move(tools);
  }
  json messages = json::array();
  for (const auto& message : request.messages)
    messages.push_back(message_json(message));
  if (options_.prompt_caching) {
    const int fixed = (body.contains("system") ? 1 : 0) + (body.contains("tools") ? 1 : 0);
    mark_rolling_breakpoints(messages, request.messages, kMaxCacheBreakpoints - fixed);
  }
  body["messages"] = std::move(messages);
  if (options_.stream) body["stream"] = true;
  return body;
}

HttpRequest AnthropicWire::build_request(const ModelRequest& request, const Secret* key) const {
  HttpRequest http;
  http.method = "POST";
  http.url = wire::join_url(options_.base_url, "/v1/messages");
  http.headers.emplace_back("content-type", "application/json");
  http.headers.emplace_back("anthropic-version", std::string(kAnthropicVersion));
  if (options_.stream) http.headers.emplace_back("accept", "text/event-stream");
  if (key != nullptr && !key->empty()) http.headers.emplace_back("x-api-key", key->reveal());
  http.body = wire::dump(request_body(request));
  return http;
}

Result<ModelTurn> AnthropicWire::parse_response(std::string_view body) const {
  auto parsed = wire::parse_json(body, "anthropic response");
  if (!parsed) return std::move(parsed).error();
  const json& data = *parsed;
  if (!data.is_object()) return anthropic_protocol_error("the response is not a JSON object");
  if (wire::string_member(data, "type") == "error") return stream_error(data);
  auto content = data.find("content");
  if (content == data.end() || !content->is_array()) {
    return anthropic_protocol_error("the response has no \"content\" array");
  }
  ModelTurn turn;
  turn.model = wire::string_member(data, "model");
  for (const auto& block : *content) {
    std::string type = wire::string_member(block, "type");
    if (type == "text") {
      turn.text += wire::string_member(block, "text");
    } else if (type == "tool_use") {
      std::string arguments = "{}";
      if (block.contains("input") && !block["input"].is_null()) {
        arguments = wire::dump(block["input"]);
      }
      turn.tool_calls.push_back(
          {wire::string_member(block, "id"), wire::string_member(block, "name"), arguments});
    }
  }
  turn.stop_reason =
      stop_reason_from(wire::string_member(data, "stop_reason"), !turn.tool_calls.empty());
  if (data.contains("usage")) turn.usage = anthropic_usage(data["usage"]);
  return turn;
}

std::unique_ptr<StreamAccumulator> AnthropicWire::start_stream() const {
  return std::make_unique<AnthropicStream>();
}

std::string AnthropicWire::error_message(std::string_view body) const {
  auto data = proto::parse_json_bounded(body);
  if (!data) return {};
  return anthropic_error_words(*data);
}

std::optional<Error> AnthropicWire::context_overflow(long status, std::string_view body) const {
  auto data = proto::parse_json_bounded(body);
  return anthropic_overflow(data ? *data : json(), status);
}

}  // namespace loopr::llm
