// The provider-neutral conversation model (DESIGN.md §8): what the loop
// engine sends a model and what it gets back, whatever the wire format
// (Anthropic Messages, OpenAI Chat Completions, a scripted session). The wire
// codecs (anthropic_wire, openai_wire) translate to and from these types;
// the loop engine and the store see nothing else.
//
// JSON forms (conversation_json.cpp) are what the store keeps, what
// loop.transcript returns and what a scripted session file holds. They never
// carry a credential: a key lives only in the HTTP layer's headers.
#pragma once

#include <cstdint>
#include <nlohmann/json.hpp>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "common/error.hpp"

namespace loopr::llm {

// One tool call of a model turn. `arguments` is the JSON text exactly as the
// model produced it (reassembled from stream deltas): it may be invalid JSON
// or of the wrong shape, which the loop engine reports back to the model.
struct ToolCall {
  std::string id;    // the provider's id (toolu_..., call_...); made up if it gave none
  std::string name;  // may name a tool the loop does not offer
  std::string arguments;

  bool operator==(const ToolCall&) const = default;
};

// What a tool call gave, as the model will read it.
struct ToolResult {
  std::string call_id;  // ToolCall::id it answers
  std::string name;     // the tool's name (OpenAI-compatible servers want it)
  std::string content;  // text (usually JSON) the model reads
  bool is_error = false;

  bool operator==(const ToolResult&) const = default;
};

enum class Role { user, assistant };
std::string_view to_string(Role role);

// One message of the conversation. A user message carries text and/or the
// results of the previous assistant message's tool calls (in call order); an
// assistant message carries text and/or tool calls.
struct Message {
  Role role = Role::user;
  std::string text;
  std::vector<ToolCall> tool_calls;      // assistant only
  std::vector<ToolResult> tool_results;  // user only

  bool operator==(const Message&) const = default;
};

// Why the model stopped, normalized across providers.
enum class StopReason { end_turn, tool_use, max_tokens, stop_sequence, refusal, other };
std::string_view to_string(StopReason reason);
StopReason parse_stop_reason(std::string_view text);  // unknown text: other

// Tokens of one model call, by class. Providers that do not report a class
// leave it 0 (OpenAI-compatible servers report cached input inside
// input_tokens; the codec moves it to cache_read_tokens).
struct Usage {
  std::int64_t input_tokens = 0;  // uncached input
  std::int64_t output_tokens = 0;
  std::int64_t cache_read_tokens = 0;   // input served from the prompt cache
  std::int64_t cache_write_tokens = 0;  // input written to the prompt cache

  Usage& operator+=(const Usage& other);
  std::int64_t total() const {
    return input_tokens + output_tokens + cache_read_tokens + cache_write_tokens;
  }
  bool operator==(const Usage&) const = default;
};

// A tool the model may call: name, description, JSON Schema of its arguments
// (the catalog's llm_tool_definitions() gives a JSON array of these).
struct ToolDefinition {
  std::string name;
  std::string description;
  nlohmann::json input_schema;
};

struct ModelRequest {
  std::string model;  // empty: the provider's configured model
  std::string system;
  std::vector<Message> messages;  // starts with a user message
  std::vector<ToolDefinition> tools;
  std::int64_t max_tokens = 8192;
  // How many model calls this loop made before this one. A scripted provider
  // answers with its turn number `sequence`, so a loop resumed after a crash
  // gets the same answer again; HTTP providers ignore it.
  std::uint64_t sequence = 0;
  // Which conversation this is (the loop's id). A scripted provider may
  // answer each loop from its own lines; HTTP providers ignore it.
  std::string conversation;
};

// One model call's answer.
struct ModelTurn {
  std::string text;
  std::vector<ToolCall> tool_calls;
  StopReason stop_reason = StopReason::end_turn;
  std::string model;  // as the provider reported it
  Usage usage;

  bool operator==(const ModelTurn&) const = default;
};

// ---- JSON forms (conversation_json.cpp) ----
// {"id", "name", "arguments"}; from_json accepts "arguments" as a string (the
// text) or any other JSON value (dumped to text), for hand-written scripts.
nlohmann::json to_json(const ToolCall& call);
nlohmann::json to_json(const ToolResult& result);
nlohmann::json to_json(const Message& message);
nlohmann::json to_json(const Usage& usage);
// {"text", "tool_calls", "stop_reason", "model", "usage"}
nlohmann::json to_json(const ModelTurn& turn);
// The parsers accept any JSON and return invalid_arguments naming the field.
Result<ToolCall> tool_call_from_json(const nlohmann::json& value);
Result<ToolResult> tool_result_from_json(const nlohmann::json& value);
Result<Message> message_from_json(const nlohmann::json& value);
Result<Usage> usage_from_json(const nlohmann::json& value);
Result<ModelTurn> model_turn_from_json(const nlohmann::json& value);

}  // namespace loopr::llm
