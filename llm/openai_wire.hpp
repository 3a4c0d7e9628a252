// The OpenAI Chat Completions API (POST {base_url}/chat/completions) as a
// WireFormat; also what llama.cpp's server, vLLM and Ollama's /v1 speak.
//
// Request: model, the output cap as WireOptions::max_tokens_field
// ("max_tokens", or "max_completion_tokens" which api.openai.com's reasoning
// models require), reasoning_effort when WireOptions sets it, messages
// (system first; user text; one
// {role: "tool", tool_call_id, content} per tool result, before the user's
// text; assistant content plus tool_calls [{id, type: "function", function:
// {name, arguments}}]), tools [{type: "function", function: {name,
// description, parameters}}], and when streaming stream: true with
// stream_options {include_usage: true}. Header Authorization: Bearer KEY only
// with a key.
//
// Response: choices[0].message content / tool_calls, finish_reason (stop →
// end_turn, tool_calls → tool_use, length → max_tokens, content_filter →
// refusal; "stop" with tool calls present → tool_use), usage prompt_tokens,
// completion_tokens, prompt_tokens_details.cached_tokens (moved out of input
// into cache_read_tokens). Streams: chunks with choices[0].delta content and
// tool_calls reassembled by index, a usage chunk with empty choices, then
// "data: [DONE]". Servers that omit usage or tool call ids are tolerated (an
// id is made up: "call_<n>").
//
// Errors: {"error": {"message", "type", "code"}} (OpenAI, llama.cpp, Ollama)
// or {"object": "error", "message", "type"} (older vLLM). context_overflow
// recognises code context_length_exceeded, llama.cpp's type
// exceed_context_size_error (n_prompt_tokens, n_ctx), "maximum context
// length" (OpenAI, vLLM) and HTTP 413.
#pragma once

#include <memory>
#include <string>
#include <string_view>

#include "llm/wire_format.hpp"

namespace loopr::llm {

class OpenAiWire : public WireFormat {
 public:
  explicit OpenAiWire(WireOptions options) : options_(std::move(options)) {}

  std::string_view name() const override { return "openai"; }
  HttpRequest build_request(const ModelRequest& request, const Secret* key) const override;
  Result<ModelTurn> parse_response(std::string_view body) const override;
  std::unique_ptr<StreamAccumulator> start_stream() const override;
  std::string error_message(std::string_view body) const override;
  std::optional<Error> context_overflow(long status, std::string_view body) const override;
  const WireOptions& options() const override { return options_; }

  nlohmann::json request_body(const ModelRequest& request) const;

 private:
  WireOptions options_;
};

}  // namespace loopr::llm
