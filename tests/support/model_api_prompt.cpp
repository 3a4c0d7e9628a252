#include "tests/support/model_api_prompt.hpp"

#include <set>
#include <utility>

namespace loopr::test {
namespace {

using nlohmann::json;

constexpr std::size_t kMaxCacheBreakpoints = 4;

std::string canonical(const json& value) {
  return value.dump(-1, ' ', false, json::error_handler_t::replace);
}

// `value` without its own cache_control (nor its content items'): the cache
// key and the counted piece ignore where the breakpoints are.
json without_cache_control(json value) {
  if (!value.is_object()) return value;
  value.erase("cache_control");
  auto content = value.find("content");
  if (content != value.end() && content->is_array()) {
    for (auto& item : *content)
      if (item.is_object()) item.erase("cache_control");
  }
  return value;
}

// cache_control marks on `block` and on its content items.
std::size_t marks_in(const json& block) {
  if (!block.is_object()) return 0;
  std::size_t marks = block.contains("cache_control") ? 1 : 0;
  auto content = block.find("content");
  if (content != block.end() && content->is_array()) {
    for (const auto& item : *content)
      if (item.is_object() && item.contains("cache_control")) ++marks;
  }
  return marks;
}

std::string string_of(const json& object, const char* key) {
  auto it = object.find(key);
  return it != object.end() && it->is_string() ? it->get<std::string>() : std::string();
}

// A tool_result's (or an OpenAI message's) content as text: a string as it
// is, an array's text items joined, other items as compact JSON.
std::string content_text(const json& content) {
  if (content.is_string()) return content.get<std::string>();
  if (content.is_null()) return {};
  if (!content.is_array()) return canonical(content);
  std::string text;
  for (const auto& item : content) {
    if (item.is_object() && string_of(item, "type") == "text") {
      text += string_of(item, "text");
    } else {
      text += canonical(without_cache_control(item));
    }
  }
  return text;
}

ApiError invalid(std::string message, std::string param = {}, std::string code = {}) {
  return {400, "invalid_request_error", std::move(message), std::move(param), std::move(code)};
}

PromptOrError refuse(ApiError error) {
  return {std::nullopt, std::move(error)};
}

void add_block(ParsedPrompt& prompt, std::string key, std::string_view piece, std::size_t marks) {
  PromptBlock block;
  block.key = std::move(key);
  block.tokens = count_tokens(piece);
  block.breakpoint = marks > 0;
  prompt.input_tokens += block.tokens;
  prompt.breakpoints += marks;
  prompt.blocks.push_back(std::move(block));
}

// ---- Anthropic Messages ----

// One content block of message `index` → a CallBlock and its prompt block.
void add_anthropic_block(ParsedPrompt& prompt, CallMessage& message, std::size_t index,
                         const json& block) {
  const std::string key = "m" + std::to_string(index) + ":" + message.role + ":" +
                          canonical(without_cache_control(block));
  CallBlock out;
  std::string piece;
  const std::string type = block.is_object() ? string_of(block, "type") : std::string();
  if (type == "text") {
    out.kind = CallBlock::Kind::text;
    out.text = string_of(block, "text");
    piece = out.text;
  } else if (type == "tool_use") {
    out.kind = CallBlock::Kind::tool_use;
    out.id = string_of(block, "id");
    out.name = string_of(block, "name");
    if (block.contains("input")) out.input = block["input"];
    piece = out.name + canonical(out.input);
  } else if (type == "tool_result") {
    out.kind = CallBlock::Kind::tool_result;
    out.id = string_of(block, "tool_use_id");
    out.text = block.contains("content") ? content_text(block["content"]) : std::string();
    out.is_error = block.value("is_error", false);
    piece = out.text;
  } else {
    out.kind = CallBlock::Kind::other;
    piece = canonical(without_cache_control(block));
  }
  add_block(prompt, key, piece, marks_in(block));
  message.blocks.push_back(std::move(out));
}

// Each tool_result answers a tool_use of the previous (assistant) message;
// then, each tool_use is answered in the next message (when there is one).
std::optional<ApiError> check_anthropic_tool_pairs(const std::vector<CallMessage>& messages) {
  for (std::size_t i = 0; i < messages.size(); ++i) {
    std::set<std::string> offered;
    if (i > 0 && messages[i - 1].role == "assistant") {
      for (const auto& block : messages[i - 1].blocks)
        if (block.kind == CallBlock::Kind::tool_use) offered.insert(block.id);
    }
    for (std::size_t j = 0; j < messages[i].blocks.size(); ++j) {
      const CallBlock& block = messages[i].blocks[j];
      if (block.kind == CallBlock::Kind::tool_result && offered.count(block.id) == 0) {
        return invalid("messages." + std::to_string(i) + ".content." + std::to_string(j) +
                       ": unexpected `tool_use_id` found in `tool_result` blocks: " + block.id +
                       ". Each `tool_result` block must have a corresponding `tool_use` block in "
                       "the previous message.");
      }
    }
  }
  for (std::size_t i = 0; i < messages.size(); ++i) {
    if (messages[i].role != "assistant" || i + 1 >= messages.size()) continue;
    std::set<std::string> answered;
    for (const auto& block : messages[i + 1].blocks)
      if (block.kind == CallBlock::Kind::tool_result) answered.insert(block.id);
    std::string missing;
    for (const auto& block : messages[i].blocks) {
      if (block.kind == CallBlock::Kind::tool_use && answered.count(block.id) == 0) {
        missing += (missing.empty() ? "" : ", ") + block.id;
      }
    }
    if (!missing.empty()) {
      return invalid(
          "messages." + std::to_string(i) +
          ": `tool_use` ids were found without `tool_result` blocks immediately after: " + missing +
          ". Each `tool_use` block must have a corresponding `tool_result` block in the "
          "next message.");
    }
  }
  return std::nullopt;
}

// ---- OpenAI Chat Completions ----

std::optional<ApiError> check_openai_tool_pairs(const json& messages) {
  std::set<std::string> open;  // ids of the last assistant's calls not answered yet
  bool after_calls = false;    // inside the run of tool messages after tool_calls
  for (std::size_t i = 0; i < messages.size(); ++i) {
    const json& message = messages[i];
    const std::string role = string_of(message, "role");
    const std::string where = "messages.[" + std::to_string(i) + "].role";
    if (role == "tool") {
      const std::string id = string_of(message, "tool_call_id");
      if (!after_calls || open.erase(id) == 0) {
        return invalid(
            "Invalid parameter: messages with role 'tool' must be a response to a preceeding "
            "message with 'tool_calls'.",
            where);
      }
      continue;
    }
    if (!open.empty()) {
      std::string missing;
      for (const auto& id : open)
        missing += (missing.empty() ? "" : ", ") + id;
      return invalid(
          "An assistant message with 'tool_calls' must be followed by tool messages responding "
          "to each 'tool_call_id'. The following tool_call_ids did not have response messages: " +
              missing,
          where);
    }
    after_calls = false;
    if (role == "assistant" && message.contains("tool_calls") && message["tool_calls"].is_array()) {
      for (const auto& call : message["tool_calls"])
        if (call.is_object()) open.insert(string_of(call, "id"));
      after_calls = !open.empty();
    }
  }
  if (!open.empty()) {
    std::string missing;
    for (const auto& id : open)
      missing += (missing.empty() ? "" : ", ") + id;
    return invalid(
        "An assistant message with 'tool_calls' must be followed by tool messages responding to "
        "each 'tool_call_id'. The following tool_call_ids did not have response messages: " +
            missing,
        "messages.[" + std::to_string(messages.size() - 1) + "].role");
  }
  return std::nullopt;
}

// The message list in CallMessage form: system text apart, tool messages
// (and a user message right after them) merged into one user message.
void add_openai_message(ParsedPrompt& prompt, std::size_t index, const json& message) {
  const std::string role = string_of(message, "role");
  const std::string key = "m" + std::to_string(index) + ":" + canonical(message);
  if (role == "system" || role == "developer") {
    const std::string text = content_text(message.value("content", json()));
    prompt.system += (prompt.system.empty() ? "" : "\n\n") + text;
    add_block(prompt, key, text, 0);
    return;
  }
  const bool merge = !prompt.messages.empty() && prompt.messages.back().role == "user" &&
                     (role == "tool" || role == "user") && !prompt.messages.back().blocks.empty() &&
                     prompt.messages.back().blocks.back().kind == CallBlock::Kind::tool_result;
  if (!merge) prompt.messages.push_back({role == "assistant" ? "assistant" : "user", {}});
  CallMessage& out = prompt.messages.back();
  std::string piece;
  if (role == "tool") {
    CallBlock block;
    block.kind = CallBlock::Kind::tool_result;
    block.id = string_of(message, "tool_call_id");
    block.text = content_text(message.value("content", json()));
    piece = block.text;
    out.blocks.push_back(std::move(block));
  } else {
    const std::string text = content_text(message.value("content", json()));
    piece = text;
    if (!text.empty()) out.blocks.push_back({CallBlock::Kind::text, text, {}, {}, json::object()});
    if (role == "assistant" && message.contains("tool_calls") && message["tool_calls"].is_array()) {
      for (const auto& call : message["tool_calls"]) {
        if (!call.is_object()) continue;
        const json function = call.value("function", json::object());
        CallBlock block;
        block.kind = CallBlock::Kind::tool_use;
        block.id = string_of(call, "id");
        block.name = string_of(function, "name");
        const std::string arguments = string_of(function, "arguments");
        json input = json::parse(arguments, nullptr, false);
        block.input = input.is_discarded() ? json::object() : input;
        piece += block.name + arguments;
        out.blocks.push_back(std::move(block));
      }
    }
  }
  add_block(prompt, key, piece, 0);
}

}  // namespace

std::int64_t count_tokens(std::string_view piece) {
  return static_cast<std::int64_t>((piece.size() + 3) / 4);
}

json error_body(ModelApi api, const ApiError& error) {
  if (api == ModelApi::anthropic) {
    return {{"type", "error"}, {"error", {{"type", error.type}, {"message", error.message}}}};
  }
  return {{"error",
           {{"message", error.message},
            {"type", error.type},
            {"param", error.param.empty() ? json() : json(error.param)},
            {"code", error.code.empty() ? json() : json(error.code)}}}};
}

PromptOrError parse_anthropic_request(std::string_view body) {
  const json root = json::parse(body, nullptr, false);
  if (root.is_discarded() || !root.is_object()) {
    return refuse(
        invalid("There was an error parsing the body of your request: not a JSON object"));
  }
  ParsedPrompt prompt;
  prompt.api = ModelApi::anthropic;
  if (!root.contains("model")) return refuse(invalid("model: Field required"));
  prompt.model = string_of(root, "model");
  auto max_tokens = root.find("max_tokens");
  if (max_tokens == root.end()) return refuse(invalid("max_tokens: Field required"));
  if (!max_tokens->is_number_integer()) {
    return refuse(invalid("max_tokens: Input should be a valid integer"));
  }
  prompt.max_tokens = max_tokens->get<std::int64_t>();
  if (prompt.max_tokens < 1) {
    return refuse(invalid("max_tokens: Input should be greater than or equal to 1"));
  }
  auto messages = root.find("messages");
  if (messages == root.end()) return refuse(invalid("messages: Field required"));
  if (!messages->is_array()) return refuse(invalid("messages: Input should be a valid list"));
  prompt.stream = root.value("stream", false);

  // tools → system → messages: the order the prompt (and its cache) has.
  if (root.contains("tools") && root["tools"].is_array()) {
    for (const auto& tool : root["tools"]) {
      if (!tool.is_object()) return refuse(invalid("tools: Input should be a valid dictionary"));
      prompt.tools.push_back(string_of(tool, "name"));
      const std::string piece = canonical(without_cache_control(tool));
      add_block(prompt, "tool:" + piece, piece, marks_in(tool));
    }
  }
  if (root.contains("system")) {
    const json& system = root["system"];
    if (system.is_string()) {
      prompt.system = system.get<std::string>();
      add_block(prompt, "system:" + canonical(json{{"type", "text"}, {"text", prompt.system}}),
                prompt.system, 0);
    } else if (system.is_array()) {
      for (const auto& block : system) {
        const std::string text = block.is_object() ? string_of(block, "text") : std::string();
        prompt.system += (prompt.system.empty() ? "" : "\n\n") + text;
        add_block(prompt, "system:" + canonical(without_cache_control(block)), text,
                  marks_in(block));
      }
    } else {
      return refuse(invalid("system: Input should be a valid string"));
    }
  }
  for (std::size_t i = 0; i < messages->size(); ++i) {
    const json& message = (*messages)[i];
    const std::string where = "messages." + std::to_string(i);
    if (!message.is_object())
      return refuse(invalid(where + ": Input should be a valid dictionary"));
    const std::string role = string_of(message, "role");
    if (role != "user" && role != "assistant") {
      return refuse(invalid(where + ".role: Input should be 'user' or 'assistant'"));
    }
    CallMessage out{role, {}};
    const json content = message.value("content", json());
    if (content.is_string()) {
      add_anthropic_block(prompt, out, i, json{{"type", "text"}, {"text", content}});
    } else if (content.is_array()) {
      for (const auto& block : content)
        add_anthropic_block(prompt, out, i, block);
    } else {
      return refuse(invalid(where + ".content: Input should be a valid list"));
    }
    const bool final_assistant = role == "assistant" && i + 1 == messages->size();
    if (out.blocks.empty() && !final_assistant) {
      return refuse(invalid(where +
                            ": all messages must have non-empty content except for the optional "
                            "final assistant message"));
    }
    prompt.messages.push_back(std::move(out));
  }
  if (prompt.messages.empty()) {
    return refuse(invalid("messages: at least one message is required"));
  }
  if (auto error = check_anthropic_tool_pairs(prompt.messages)) return refuse(*error);
  // Automatic caching: a top-level cache_control marks the last block.
  if (root.contains("cache_control") && !prompt.blocks.empty()) {
    prompt.blocks.back().breakpoint = true;
    prompt.breakpoints += 1;
  }
  if (prompt.breakpoints > kMaxCacheBreakpoints) {
    return refuse(invalid("A maximum of 4 blocks with cache_control may be provided. Found " +
                          std::to_string(prompt.breakpoints) + "."));
  }
  return {std::move(prompt), {}};
}

PromptOrError parse_openai_request(std::string_view body) {
  const json root = json::parse(body, nullptr, false);
  if (root.is_discarded() || !root.is_object()) {
    return refuse(invalid(
        "We could not parse the JSON body of your request. (HINT: This likely means you aren't "
        "using your HTTP library correctly. The OpenAI API expects a JSON payload, but what was "
        "sent was not valid JSON."));
  }
  ParsedPrompt prompt;
  prompt.api = ModelApi::openai;
  if (!root.contains("model")) return refuse(invalid("you must provide a model parameter"));
  prompt.model = string_of(root, "model");
  auto messages = root.find("messages");
  if (messages == root.end()) {
    return refuse(invalid("Missing required parameter: 'messages'.", "messages",
                          "missing_required_parameter"));
  }
  if (!messages->is_array() || messages->empty()) {
    return refuse(
        invalid("Invalid 'messages': empty array. Expected an array with minimum length "
                "1, but got an empty array instead.",
                "messages", "empty_array"));
  }
  for (const char* key : {"max_completion_tokens", "max_tokens"}) {
    auto it = root.find(key);
    if (it == root.end() || it->is_null()) continue;
    if (!it->is_number_integer() || it->get<std::int64_t>() < 1) {
      return refuse(invalid(std::string("Invalid '") + key + "': expected an integer above 0.", key,
                            "invalid_value"));
    }
    prompt.max_tokens = it->get<std::int64_t>();
    break;
  }
  prompt.stream = root.value("stream", false);
  if (root.contains("stream_options") && root["stream_options"].is_object()) {
    prompt.include_usage = root["stream_options"].value("include_usage", false);
  }
  if (auto error = check_openai_tool_pairs(*messages)) return refuse(*error);
  if (root.contains("tools") && root["tools"].is_array()) {
    for (const auto& tool : root["tools"]) {
      const json function = tool.is_object() ? tool.value("function", json::object()) : json();
      prompt.tools.push_back(function.is_object() ? string_of(function, "name") : std::string());
      const std::string piece = canonical(tool);
      add_block(prompt, "tool:" + piece, piece, 0);
    }
  }
  for (std::size_t i = 0; i < messages->size(); ++i) {
    const json& message = (*messages)[i];
    if (!message.is_object()) {
      return refuse(
          invalid("Invalid type for 'messages[" + std::to_string(i) + "]': expected an object.",
                  "messages[" + std::to_string(i) + "]", "invalid_type"));
    }
    add_openai_message(prompt, i, message);
  }
  return {std::move(prompt), {}};
}

std::optional<ApiError> check_context_window(const ParsedPrompt& prompt,
                                             std::int64_t context_window) {
  const std::string window = std::to_string(context_window);
  const std::string input = std::to_string(prompt.input_tokens);
  if (prompt.api == ModelApi::anthropic) {
    if (prompt.input_tokens > context_window) {
      return invalid("prompt is too long: " + input + " tokens > " + window + " maximum");
    }
    if (prompt.input_tokens + prompt.max_tokens > context_window) {
      return invalid("input length and `max_tokens` exceed context limit: " + input + " + " +
                     std::to_string(prompt.max_tokens) + " > " + window +
                     ", decrease input length or `max_tokens` and try again");
    }
    return std::nullopt;
  }
  if (prompt.input_tokens > context_window) {
    return invalid("This model's maximum context length is " + window +
                       " tokens. However, your messages resulted in " + input +
                       " tokens. Please reduce the length of the messages.",
                   "messages", "context_length_exceeded");
  }
  if (prompt.max_tokens > 0 && prompt.input_tokens + prompt.max_tokens > context_window) {
    return invalid("This model's maximum context length is " + window +
                       " tokens. However, you requested " +
                       std::to_string(prompt.input_tokens + prompt.max_tokens) + " tokens (" +
                       input + " in the messages, " + std::to_string(prompt.max_tokens) +
                       " in the completion). Please reduce the length of the messages or "
                       "completion.",
                   "messages", "context_length_exceeded");
  }
  return std::nullopt;
}

}  // namespace loopr::test
