// What ModelApiServer reads from a model API request: the prompt as the
// provider sees it (parsed, checked, counted, split into cacheable blocks),
// for both wire formats. Pure functions: no I/O, no clock.
//
// Token counting, a stand-in for a tokenizer, deterministic:
//   count_tokens(piece) = ceil(UTF-8 bytes / 4) (0 for an empty piece),
// summed over the pieces of a prompt, in prompt order (tools → system →
// messages):
//   a tool            its definition's JSON without cache_control
//                     (Anthropic {name, description, input_schema};
//                     OpenAI {type, function}), compact, keys sorted;
//   a system block    its text (Anthropic: each block of a system array;
//                     OpenAI: each system/developer message's text);
//   a text block      its text;
//   a tool_use        name + the input's compact JSON (OpenAI: name +
//                     the arguments string, as sent);
//   a tool_result     its content's text (a string, or the text items of
//                     an array joined; other items as compact JSON);
//   anything else     its compact JSON without cache_control.
// OpenAI messages are one piece per message (its text, then each tool
// call's name + arguments); Anthropic messages one piece per content block.
// Each piece is one PromptBlock: the unit of prompt caching.
#pragma once

#include <cstddef>
#include <cstdint>
#include <nlohmann/json.hpp>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

namespace loopr::test {

enum class ModelApi { anthropic, openai };

// ceil(UTF-8 bytes / 4): the whole tokenizer.
std::int64_t count_tokens(std::string_view piece);

// One content block of a message, the same shape for both wire formats
// (OpenAI's tool_calls become tool_use blocks, its tool messages tool_result
// blocks of a user message).
struct CallBlock {
  enum class Kind { text, tool_use, tool_result, other };
  Kind kind = Kind::text;
  std::string text;  // text; tool_result: its content as text
  std::string id;    // tool_use: its id; tool_result: the tool_use_id it answers
  std::string name;  // tool_use: the tool's name
  nlohmann::json input = nlohmann::json::object();  // tool_use: the arguments
  bool is_error = false;                            // tool_result
};

struct CallMessage {
  std::string role;  // "user" or "assistant"
  std::vector<CallBlock> blocks;
};

// One cacheable block of the prompt, in prompt order.
struct PromptBlock {
  std::string key;  // canonical text the cache hashes (cache_control removed)
  std::int64_t tokens = 0;
  bool breakpoint = false;  // carried cache_control
};

// A request as the provider understood it.
struct ParsedPrompt {
  ModelApi api = ModelApi::anthropic;
  std::string model;
  std::string system;  // the system text, blocks joined with "\n\n"
  std::vector<CallMessage> messages;
  std::vector<std::string> tools;  // names, in order
  std::int64_t max_tokens = 0;     // 0: not given (OpenAI only)
  bool stream = false;
  bool include_usage = false;  // OpenAI stream_options.include_usage
  std::vector<PromptBlock> blocks;
  std::int64_t input_tokens = 0;  // the sum of the blocks' tokens
  std::size_t breakpoints = 0;    // cache_control marks, the top-level one included
};

// A refusal in the provider's own shape.
struct ApiError {
  int status = 400;
  std::string type;  // "invalid_request_error", ...
  std::string message;
  std::string param;  // OpenAI only; empty: null
  std::string code;   // OpenAI only; empty: null
};

// The error body each API sends for `error`.
nlohmann::json error_body(ModelApi api, const ApiError& error);

// Parses and checks a request body as the real API does before it runs the
// model: required fields, tool results against the previous assistant
// message's tool calls, at most 4 cache breakpoints (Anthropic). The context
// window is checked separately (check_context_window), after counting.
struct PromptOrError {
  std::optional<ParsedPrompt> prompt;
  ApiError error;  // when !prompt
};
PromptOrError parse_anthropic_request(std::string_view body);
PromptOrError parse_openai_request(std::string_view body);

// The real APIs' context-window refusals: Anthropic's "prompt is too long"
// (input > window) and "input length and `max_tokens` exceed context limit"
// (input + max_tokens > window); OpenAI's context_length_exceeded, for the
// messages alone and with max_tokens. nullopt when the request fits.
std::optional<ApiError> check_context_window(const ParsedPrompt& prompt,
                                             std::int64_t context_window);

}  // namespace loopr::test
