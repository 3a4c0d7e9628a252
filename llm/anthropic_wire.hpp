// The Anthropic Messages API (POST {base_url}/v1/messages) as a WireFormat.
//
// Request: model, max_tokens, system (one text block), tools {name,
// description, input_schema}, messages whose content is blocks: text,
// tool_use {id, name, input}, tool_result {tool_use_id, content, is_error}
// (a user message's tool results come before its text, as the API wants).
// A tool call whose arguments are not a JSON object is replayed with input {}.
// With prompt caching, cache_control {"type": "ephemeral"} marks at most the
// API's 4 breakpoints: the system block and the last tool definition (the
// stable prefix), the last content block of the last message (this request's
// prefix is written, and the next request reads it), and the last content
// block of the user message before it (the previous request's last message:
// its prefix is read even when this turn added more blocks than the API's
// 20-block lookback). With fewer free slots the earlier message mark goes
// first; an empty text block is never marked (the API refuses it), the block
// before it is. Headers: x-api-key (only with a key), anthropic-version:
// 2023-06-01, content-type.
//
// Response: content blocks (text, tool_use; others such as thinking are
// skipped), stop_reason, usage (input_tokens, output_tokens,
// cache_read_input_tokens, cache_creation_input_tokens). Stream events:
// message_start, content_block_start/delta/stop (text_delta,
// input_json_delta), message_delta, message_stop, ping, error.
//
// Errors: {"type": "error", "error": {"type", "message"}}, as an answer or a
// stream event. context_overflow recognises "prompt is too long: N tokens > M
// maximum", "input length and `max_tokens` exceed context limit: N + K > M",
// request_too_large and HTTP 413.
#pragma once

#include <memory>
#include <string>
#include <string_view>

#include "llm/wire_format.hpp"

namespace loopr::llm {

inline constexpr std::string_view kAnthropicVersion = "2023-06-01";

class AnthropicWire : public WireFormat {
 public:
  explicit AnthropicWire(WireOptions options) : options_(std::move(options)) {}

  std::string_view name() const override { return "anthropic"; }
  HttpRequest build_request(const ModelRequest& request, const Secret* key) const override;
  Result<ModelTurn> parse_response(std::string_view body) const override;
  std::unique_ptr<StreamAccumulator> start_stream() const override;
  std::string error_message(std::string_view body) const override;
  std::optional<Error> context_overflow(long status, std::string_view body) const override;
  const WireOptions& options() const override { return options_; }

  // The request body (what build_request sends), for tests and inspection.
  nlohmann::json request_body(const ModelRequest& request) const;

 private:
  WireOptions options_;
};

}  // namespace loopr::llm
