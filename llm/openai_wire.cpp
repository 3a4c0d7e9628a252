#include "llm/openai_wire.hpp"

#include <map>
#include <optional>
#include <utility>

#include "llm/provider.hpp"
#include "proto/json_bounded.hpp"

namespace loopr::llm {

using nlohmann::json;

namespace {

StopReason finish_reason_from(const std::string& text, bool has_tool_calls) {
  if (has_tool_calls &&
      (text.empty() || text == "stop" || text == "tool_calls" || text == "function_call")) {
    return StopReason::tool_use;
  }
  if (text.empty() || text == "stop") return StopReason::end_turn;
  if (text == "tool_calls" || text == "function_call") return StopReason::tool_use;
  if (text == "length") return StopReason::max_tokens;
  if (text == "content_filter") return StopReason::refusal;
  return StopReason::other;
}

Usage openai_usage(const json& usage) {
  Usage out;
  if (!usage.is_object()) return out;
  std::int64_t prompt = wire::count_member(usage, "prompt_tokens");
  std::int64_t cached = 0;
  if (auto it = usage.find("prompt_tokens_details"); it != usage.end()) {
    cached = wire::count_member(*it, "cached_tokens");
  }
  cached = std::min(cached, prompt);
  out.input_tokens = prompt - cached;
  out.cache_read_tokens = cached;
  out.output_tokens = wire::count_member(usage, "completion_tokens");
  return out;
}

Error openai_protocol_error(std::string message) {
  return make_error(errc::provider_protocol, "openai: " + std::move(message),
                    "check that base_url points at an OpenAI-compatible /v1 endpoint "
                    "(one that serves /chat/completions)");
}

// {"error": {"message", "type", "code"}} (OpenAI, llama.cpp, Ollama) or
// {"object": "error", "message", "type"} (vLLM) → "type: message".
std::string openai_error_words(const json& body) {
  if (!body.is_object()) return {};
  const json* error = &body;
  if (auto it = body.find("error"); it != body.end()) {
    if (it->is_string()) return it->get<std::string>();
    if (it->is_object()) error = &*it;
  }
  std::string message = wire::string_member(*error, "message");
  std::string type = wire::string_member(*error, "type");
  if (type.empty()) type = wire::string_member(*error, "code");
  if (message.empty()) return error == &body ? std::string() : type;
  return type.empty() ? message : type + ": " + message;
}

// The prompt tokens an overflow message names: OpenAI's "your messages
// resulted in N tokens", "you requested T tokens (N in the messages, ...)"
// (OpenAI, vLLM), vLLM's "you requested N tokens in the messages" and "your
// request has N input tokens"; 0 when it names none (a bare "you requested
// T tokens" counts the completion too).
std::int64_t prompt_tokens_in(const std::string& message) {
  if (auto n = wire::number_after(message, "resulted in")) return *n;
  if (auto n = wire::number_after(message, "request has")) return *n;
  std::size_t at = message.find("you requested");
  if (at == std::string::npos) return 0;
  std::string_view rest = std::string_view(message).substr(at);
  std::size_t tokens = rest.find(" tokens");
  if (tokens == std::string_view::npos) return 0;
  std::string_view after = rest.substr(tokens + 7);
  if (after.starts_with(" in the messages")) {
    return wire::number_after(rest, "you requested").value_or(0);
  }
  if (after.starts_with(" (") && after.find(" in the messages") != std::string_view::npos) {
    return wire::number_after(after, "(").value_or(0);
  }
  return 0;
}

// errc::context_overflow when an error body says the request is too long
// for the context window: OpenAI's code context_length_exceeded, llama.cpp's
// type exceed_context_size_error (n_prompt_tokens, n_ctx), vLLM's "This
// model's maximum context length is M tokens" (as {"error": {...}} or the
// older {"object": "error", ...}), or HTTP 413. `status` 0: an event inside
// a stream.
std::optional<Error> openai_overflow(const json& body, long status) {
  const json* error = &body;
  if (body.is_object()) {
    if (auto it = body.find("error"); it != body.end() && it->is_object()) error = &*it;
  }
  const std::string message = wire::string_member(*error, "message");
  const bool matches = wire::string_member(*error, "code") == "context_length_exceeded" ||
                       wire::string_member(*error, "type") == "exceed_context_size_error" ||
                       message.find("maximum context length") != std::string::npos ||
                       message.find("exceeds the available context size") != std::string::npos;
  if (!matches && status != 413) return std::nullopt;
  std::int64_t prompt_tokens = wire::count_member(*error, "n_prompt_tokens");
  if (prompt_tokens == 0) prompt_tokens = prompt_tokens_in(message);
  std::int64_t window = wire::count_member(*error, "n_ctx");
  if (window == 0) window = wire::number_after(message, "maximum context length is").value_or(0);
  return wire::context_overflow_error("openai", openai_error_words(body), prompt_tokens, window,
                                      status);
}

std::string made_up_id(std::size_t n) {
  return "call_" + std::to_string(n);
}

class OpenAiStream : public StreamAccumulator {
 public:
  Result<void> feed(const SseEvent& event, const TextSink& on_text) override {
    if (event.data == "[DONE]") {
      complete_ = true;
      return {};
    }
    auto parsed = wire::parse_json(event.data, "openai stream chunk");
    if (!parsed) return std::move(parsed).error();
    const json& chunk = *parsed;
    if (!chunk.is_object()) return openai_protocol_error("a stream chunk is not a JSON object");
    if (auto it = chunk.find("error"); it != chunk.end() && !it->is_null()) {
      if (auto overflow = openai_overflow(chunk, 0)) return std::move(*overflow);
      std::string words = openai_error_words(chunk);
      std::string type = it->is_object() ? wire::string_member(*it, "type") : std::string();
      bool refused = type == "invalid_request_error";
      return make_error(refused ? errc::provider_request : errc::provider_unavailable,
                        "openai stream error: " + (words.empty() ? "unknown" : words));
    }
    if (std::string model = wire::string_member(chunk, "model"); !model.empty()) {
      model_ = std::move(model);
    }
    if (auto it = chunk.find("usage"); it != chunk.end() && it->is_object()) {
      usage_ = openai_usage(*it);
    }
    auto choices = chunk.find("choices");
    if (choices == chunk.end() || !choices->is_array() || choices->empty()) return {};
    const json& choice = (*choices)[0];
    if (std::string reason = wire::string_member(choice, "finish_reason"); !reason.empty()) {
      finish_reason_ = std::move(reason);
    }
    auto delta = choice.find("delta");
    if (delta == choice.end() || !delta->is_object()) return {};
    if (std::string content = wire::string_member(*delta, "content"); !content.empty()) {
      text_ += content;
      if (on_text) on_text(content);
    }
    if (auto calls = delta->find("tool_calls"); calls != delta->end() && calls->is_array()) {
      for (const auto& call : *calls) {
        // A server that gives no index sends each call whole, in order.
        std::int64_t index = call.contains("index") ? wire::count_member(call, "index")
                                                    : static_cast<std::int64_t>(calls_.size());
        Call& c = calls_[index];
        if (std::string id = wire::string_member(call, "id"); !id.empty()) c.id = std::move(id);
        if (auto fn = call.find("function"); fn != call.end() && fn->is_object()) {
          c.name += wire::string_member(*fn, "name");
          if (auto args = fn->find("arguments"); args != fn->end()) {
            if (args->is_string()) {
              c.arguments += args->get<std::string>();
            } else if (!args->is_null()) {
              c.arguments += wire::dump(*args);
            }
          }
        }
      }
    }
    return {};
  }

  bool complete() const override { return complete_; }

  Result<ModelTurn> finish() override {
    // Some servers close the stream after the finish_reason without [DONE].
    if (!complete_ && finish_reason_.empty()) {
      return make_error(errc::provider_unavailable,
                        "openai: the stream ended before a finish_reason or [DONE]");
    }
    ModelTurn turn;
    turn.text = text_;
    turn.model = model_;
    std::size_t n = 0;
    for (auto& [index, call] : calls_) {
      ++n;
      turn.tool_calls.push_back({call.id.empty() ? made_up_id(n) : call.id, call.name,
                                 call.arguments.empty() ? "{}" : call.arguments});
    }
    turn.stop_reason = finish_reason_from(finish_reason_, !turn.tool_calls.empty());
    turn.usage = usage_;
    return turn;
  }

 private:
  struct Call {
    std::string id;
    std::string name;
    std::string arguments;
  };

  std::string text_;
  std::string model_;
  std::map<std::int64_t, Call> calls_;
  std::string finish_reason_;
  Usage usage_;
  bool complete_ = false;
};

}  // namespace

json OpenAiWire::request_body(const ModelRequest& request) const {
  json messages = json::array();
  if (!request.system.empty()) {
    messages.push_back({{"role", "system"}, {"content", request.system}});
  }
  for (const auto& message : request.messages) {
    if (message.role == Role::user) {
      for (const auto& result : message.tool_results) {
        // Chat Completions has no error flag for a tool result: the content says it.
        messages.push_back(
            {{"role", "tool"}, {"tool_call_id", result.call_id}, {"content", result.content}});
      }
      if (!message.text.empty() || message.tool_results.empty()) {
        messages.push_back({{"role", "user"}, {"content", message.text}});
      }
    } else {
      json out = {{"role", "assistant"}};
      if (!message.text.empty() || message.tool_calls.empty()) {
        out["content"] = message.text;
      } else {
        out["content"] = nullptr;
      }
      if (!message.tool_calls.empty()) {
        json calls = json::array();
        for (const auto& call : message.tool_calls) {
          calls.push_back({{"id", call.id},
                           {"type", "function"},
                           {"function", {{"name", call.name}, {"arguments", call.arguments}}}});
        }
        out["tool_calls"] = std::move(calls);
      }
      messages.push_back(std::move(out));
    }
  }
  json body = {{"model", request.model.empty() ? options_.model : request.model},
               {options_.max_tokens_field.empty() ? "max_tokens" : options_.max_tokens_field,
                request.max_tokens},
               {"messages", std::move(messages)}};
  if (!options_.reasoning_effort.empty()) body["reasoning_effort"] = options_.reasoning_effort;
  if (!request.tools.empty()) {
    json tools = json::array();
    for (const auto& tool : request.tools) {
      tools.push_back({{"type", "function"},
                       {"function",
                        {{"name", tool.name},
                         {"description", tool.description},
                         {"parameters", tool.input_schema.is_null() ? json{{"type", "object"}}
                                                                    : tool.input_schema}}}});
    }
    body["tools"] = std::move(tools);
  }
  if (options_.stream) {
    body["stream"] = true;
    body["stream_options"] = {{"include_usage", true}};
  }
  return body;
}

HttpRequest OpenAiWire::build_request(const ModelRequest& request, const Secret* key) const {
  HttpRequest http;
  http.method = "POST";
  http.url = wire::join_url(options_.base_url, "/chat/completions");
  http.headers.emplace_back("content-type", "application/json");
  if (options_.stream) http.headers.emplace_back("accept", "text/event-stream");
  if (key != nullptr && !key->empty()) {
    http.headers.emplace_back("authorization", "Bearer " + key->reveal());
  }
  http.body = wire::dump(request_body(request));
  return http;
}

Result<ModelTurn> OpenAiWire::parse_response(std::string_view body) const {
  auto parsed = wire::parse_json(body, "openai response");
  if (!parsed) return std::move(parsed).error();
  const json& data = *parsed;
  if (!data.is_object()) return openai_protocol_error("the response is not a JSON object");
  if (auto it = data.find("error"); it != data.end() && !it->is_null()) {
    if (auto overflow = openai_overflow(data, 0)) return std::move(*overflow);
    return make_error(errc::provider_unavailable, "openai error: " + openai_error_words(data));
  }
  auto choices = data.find("choices");
  if (choices == data.end() || !choices->is_array() || choices->empty()) {
    return openai_protocol_error("the response has no \"choices\"");
  }
  const json& choice = (*choices)[0];
  auto message = choice.find("message");
  if (message == choice.end() || !message->is_object()) {
    return openai_protocol_error("choices[0] has no \"message\" object");
  }
  ModelTurn turn;
  turn.model = wire::string_member(data, "model");
  turn.text = wire::string_member(*message, "content");
  if (auto calls = message->find("tool_calls"); calls != message->end() && calls->is_array()) {
    for (const auto& call : *calls) {
      ToolCall out;
      out.id = wire::string_member(call, "id");
      if (out.id.empty()) out.id = made_up_id(turn.tool_calls.size() + 1);
      if (auto fn = call.find("function"); fn != call.end() && fn->is_object()) {
        out.name = wire::string_member(*fn, "name");
        if (auto args = fn->find("arguments"); args != fn->end()) {
          out.arguments = args->is_string() ? args->get<std::string>() : wire::dump(*args);
        }
      }
      if (out.arguments.empty()) out.arguments = "{}";
      turn.tool_calls.push_back(std::move(out));
    }
  }
  turn.stop_reason =
      finish_reason_from(wire::string_member(choice, "finish_reason"), !turn.tool_calls.empty());
  if (auto usage = data.find("usage"); usage != data.end()) turn.usage = openai_usage(*usage);
  return turn;
}

std::unique_ptr<StreamAccumulator> OpenAiWire::start_stream() const {
  return std::make_unique<OpenAiStream>();
}

std::string OpenAiWire::error_message(std::string_view body) const {
  auto data = proto::parse_json_bounded(body);
  if (!data) return {};
  return openai_error_words(*data);
}

std::optional<Error> OpenAiWire::context_overflow(long status, std::string_view body) const {
  auto data = proto::parse_json_bounded(body);
  return openai_overflow(data ? *data : json(), status);
}

}  // namespace loopr::llm
