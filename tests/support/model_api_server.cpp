#include "tests/support/model_api_server.hpp"

#include <algorithm>
#include <exception>
#include <utility>

namespace loopr::test {
namespace {

using nlohmann::json;

// Any fixed instant: "created" of OpenAI answers, advanced per turn.
constexpr std::int64_t kCreatedBase = 1767225600;

std::string dump(const json& value) {
  return value.dump(-1, ' ', false, json::error_handler_t::replace);
}

// `text` in pieces of at most `max_bytes`, never splitting a UTF-8 sequence.
std::vector<std::string> pieces_of(const std::string& text, std::size_t max_bytes) {
  std::vector<std::string> out;
  std::size_t start = 0;
  max_bytes = std::max<std::size_t>(max_bytes, 4);
  while (start < text.size()) {
    std::size_t end = std::min(text.size(), start + max_bytes);
    while (end < text.size() && end > start &&
           (static_cast<unsigned char>(text[end]) & 0xC0) == 0x80) {
      --end;
    }
    out.push_back(text.substr(start, end - start));
    start = end;
  }
  return out;
}

std::string sse_event(const std::string& type, const json& data) {
  return "event: " + type + "\ndata: " + dump(data) + "\n\n";
}

std::string sse_data(const json& data) {
  return "data: " + dump(data) + "\n\n";
}

std::string stop_reason_of(const ModelReply& reply) {
  if (!reply.stop_reason.empty()) return reply.stop_reason;
  return reply.tool_calls.empty() ? "end_turn" : "tool_use";
}

std::string finish_reason_of(const std::string& stop_reason) {
  if (stop_reason == "tool_use") return "tool_calls";
  if (stop_reason == "max_tokens") return "length";
  if (stop_reason == "refusal") return "content_filter";
  return "stop";
}

std::int64_t output_tokens_of(const ModelReply& reply) {
  if (reply.output_tokens >= 0) return reply.output_tokens;
  std::int64_t tokens = count_tokens(reply.text);
  for (const auto& call : reply.tool_calls)
    tokens += count_tokens(call.name + dump(call.input));
  return std::max<std::int64_t>(tokens, 1);
}

json anthropic_usage(const ServedUsage& usage, std::int64_t output_tokens) {
  return {
      {"input_tokens", usage.input_tokens},
      {"cache_creation_input_tokens", usage.cache_write_tokens},
      {"cache_read_input_tokens", usage.cache_read_tokens},
      {"cache_creation",
       {{"ephemeral_5m_input_tokens", usage.cache_write_tokens}, {"ephemeral_1h_input_tokens", 0}}},
      {"output_tokens", output_tokens},
      {"service_tier", "standard"}};
}

json openai_usage(const ServedUsage& usage) {
  const std::int64_t prompt = usage.input_tokens + usage.cache_read_tokens;
  return {
      {"prompt_tokens", prompt},
      {"completion_tokens", usage.output_tokens},
      {"total_tokens", prompt + usage.output_tokens},
      {"prompt_tokens_details", {{"cached_tokens", usage.cache_read_tokens}, {"audio_tokens", 0}}},
      {"completion_tokens_details",
       {{"reasoning_tokens", 0},
        {"audio_tokens", 0},
        {"accepted_prediction_tokens", 0},
        {"rejected_prediction_tokens", 0}}}};
}

std::string path_without_query(const std::string& path) {
  return path.substr(0, path.find('?'));
}

}  // namespace

std::vector<const CallBlock*> ModelCall::last_tool_results() const {
  std::vector<const CallBlock*> out;
  if (messages.empty()) return out;
  for (const auto& block : messages.back().blocks)
    if (block.kind == CallBlock::Kind::tool_result) out.push_back(&block);
  return out;
}

ModelReply ModelReply::say(std::string text) {
  ModelReply reply;
  reply.text = std::move(text);
  return reply;
}

ModelReply ModelReply::call(std::string name, nlohmann::json input, std::string text) {
  ModelReply reply;
  reply.text = std::move(text);
  reply.tool_calls.push_back({std::move(name), std::move(input)});
  return reply;
}

ModelReply ModelReply::error(int status, std::string type, std::string message) {
  ModelReply reply;
  reply.error_status = status;
  reply.error_type = std::move(type);
  reply.error_message = std::move(message);
  return reply;
}

ServedUsage& ServedUsage::operator+=(const ServedUsage& other) {
  input_tokens += other.input_tokens;
  cache_read_tokens += other.cache_read_tokens;
  cache_write_tokens += other.cache_write_tokens;
  output_tokens += other.output_tokens;
  return *this;
}

ModelApiServer::ModelApiServer(ModelPolicy policy, ModelApiOptions options)
    : policy_(std::move(policy)),
      options_(options),
      anthropic_cache_(
          {options.min_cacheable_tokens, options.cache_lookback_blocks, options.cache_ttl}),
      openai_cache_(
          {options.min_cacheable_tokens, options.openai_cache_granularity, options.cache_ttl}),
      ids_(options.id_seed) {
  http_ = std::make_unique<ScriptedHttpServer>(
      [this](const RecordedRequest& request) { return answer(request); });
}

ModelApiServer::~ModelApiServer() {
  http_.reset();  // no answer() runs after this
}

std::string ModelApiServer::base_url() const {
  return http_->base_url();
}

CacheClock::time_point ModelApiServer::now() const {
  return CacheClock::now() + std::chrono::seconds(clock_offset_s_.load());
}

void ModelApiServer::advance_clock(std::chrono::seconds by) {
  clock_offset_s_ += by.count();
}

std::string ModelApiServer::new_id(std::string_view prefix, std::size_t length) {
  static constexpr char kAlphabet[] =
      "0123456789ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz";
  std::string id(prefix);
  for (std::size_t i = 0; i < length; ++i)
    id += kAlphabet[ids_() % (sizeof kAlphabet - 1)];
  return id;
}

void ModelApiServer::record(ServedRequest served) {
  served.answered = std::chrono::steady_clock::now();
  std::lock_guard lock(records_mutex_);
  records_.push_back(std::move(served));
}

std::vector<ServedRequest> ModelApiServer::requests() const {
  std::lock_guard lock(records_mutex_);
  return records_;
}

ServedUsage ModelApiServer::totals() const {
  std::lock_guard lock(records_mutex_);
  ServedUsage sum;
  for (const auto& served : records_)
    sum += served.usage;
  return sum;
}

std::int64_t ModelApiServer::largest_request_tokens() const {
  std::lock_guard lock(records_mutex_);
  std::int64_t largest = 0;
  for (const auto& served : records_)
    largest = std::max(largest, served.input_tokens);
  return largest;
}

ScriptedReply ModelApiServer::refuse(ServedRequest served, ModelApi api, const ApiError& error) {
  served.status = error.status;
  served.refused = true;
  served.error_type = error.type;
  served.error_message = error.message;
  json body = error_body(api, error);
  std::vector<std::pair<std::string, std::string>> headers;
  if (api == ModelApi::anthropic) {
    const std::string request_id = new_id("req_011", 21);
    body["request_id"] = request_id;
    headers.emplace_back("request-id", request_id);
    if (error.status == 429 || error.status == 529) headers.emplace_back("retry-after", "0");
  }
  record(std::move(served));
  return ScriptedReply::json(error.status, dump(body), std::move(headers));
}

ScriptedReply ModelApiServer::answer(const RecordedRequest& request) {
  std::lock_guard lock(answer_mutex_);
  ServedRequest served;
  served.received = std::chrono::steady_clock::now();
  served.path = request.path;
  served.body = request.body;
  const std::string path = path_without_query(request.path);
  const bool anthropic = path == "/v1/messages";
  const ModelApi api = anthropic ? ModelApi::anthropic : ModelApi::openai;
  served.api = api;
  if (request.method != "POST" || (!anthropic && path != "/v1/chat/completions")) {
    return refuse(std::move(served), api,
                  {404,
                   anthropic ? "not_found_error" : "invalid_request_error",
                   "Not Found: " + request.method + " " + request.path,
                   {},
                   {}});
  }
  PromptOrError parsed =
      anthropic ? parse_anthropic_request(request.body) : parse_openai_request(request.body);
  if (!parsed.prompt) return refuse(std::move(served), api, parsed.error);
  const ParsedPrompt& prompt = *parsed.prompt;
  served.stream = prompt.stream;
  served.input_tokens = prompt.input_tokens;
  served.max_tokens = prompt.max_tokens;
  served.breakpoints = prompt.breakpoints;
  if (prompt.max_tokens > options_.max_output_tokens) {
    return refuse(std::move(served), api,
                  {400, "invalid_request_error",
                   "max_tokens: " + std::to_string(prompt.max_tokens) + " > " +
                       std::to_string(options_.max_output_tokens) +
                       ", which is the maximum allowed number of output tokens for " + prompt.model,
                   "max_tokens", "invalid_value"});
  }
  if (auto error = check_context_window(prompt, options_.context_window)) {
    return refuse(std::move(served), api, *error);
  }

  ModelCall call;
  call.api = prompt.api;
  call.turn = turn_;
  call.model = prompt.model;
  call.system = prompt.system;
  call.messages = prompt.messages;
  call.tools = prompt.tools;
  call.max_tokens = prompt.max_tokens;
  call.stream = prompt.stream;
  call.input_tokens = prompt.input_tokens;
  call.body = json::parse(request.body, nullptr, false);
  ModelReply reply;
  try {
    reply = policy_(call);
  } catch (const std::exception& e) {
    reply =
        ModelReply::error(500, "api_error", std::string("the test's policy threw: ") + e.what());
  }
  if (reply.error_status > 0) {
    return refuse(std::move(served), api,
                  {reply.error_status, reply.error_type, reply.error_message, {}, {}});
  }
  ++turn_;

  ServedUsage usage;
  const CacheUse cache =
      anthropic ? anthropic_cache_.use(prompt, now()) : openai_cache_.use(prompt, now());
  usage.cache_read_tokens = cache.read_tokens;
  usage.cache_write_tokens = cache.write_tokens;
  usage.input_tokens = prompt.input_tokens - cache.read_tokens - cache.write_tokens;
  usage.output_tokens = output_tokens_of(reply);
  served.status = 200;
  served.usage = usage;
  for (const auto& tool_call : reply.tool_calls)
    served.tool_calls.push_back(tool_call.name);
  ScriptedReply out = encode(prompt, reply, usage);
  record(std::move(served));
  return out;
}

ScriptedReply ModelApiServer::encode(const ParsedPrompt& prompt, const ModelReply& reply,
                                     const ServedUsage& usage) {
  const std::string stop_reason = stop_reason_of(reply);
  const std::size_t piece = options_.stream_piece_bytes;
  if (prompt.api == ModelApi::anthropic) {
    const std::string message_id = new_id("msg_01", 22);
    std::vector<std::string> tool_ids;
    for (std::size_t i = 0; i < reply.tool_calls.size(); ++i)
      tool_ids.push_back(new_id("toolu_01", 22));
    if (!prompt.stream) {
      json content = json::array();
      if (!reply.text.empty()) content.push_back({{"type", "text"}, {"text", reply.text}});
      for (std::size_t i = 0; i < reply.tool_calls.size(); ++i) {
        content.push_back({{"type", "tool_use"},
                           {"id", tool_ids[i]},
                           {"name", reply.tool_calls[i].name},
                           {"input", reply.tool_calls[i].input}});
      }
      const json body = {
          {"id", message_id},         {"type", "message"},
          {"role", "assistant"},      {"model", prompt.model},
          {"content", content},       {"stop_reason", stop_reason},
          {"stop_sequence", nullptr}, {"usage", anthropic_usage(usage, usage.output_tokens)}};
      return ScriptedReply::json(200, dump(body), {{"request-id", new_id("req_011", 21)}});
    }
    std::vector<std::string> events;
    events.push_back(sse_event("message_start", {{"type", "message_start"},
                                                 {"message",
                                                  {{"id", message_id},
                                                   {"type", "message"},
                                                   {"role", "assistant"},
                                                   {"model", prompt.model},
                                                   {"content", json::array()},
                                                   {"stop_reason", nullptr},
                                                   {"stop_sequence", nullptr},
                                                   {"usage", anthropic_usage(usage, 1)}}}}));
    int index = 0;
    if (!reply.text.empty()) {
      events.push_back(
          sse_event("content_block_start", {{"type", "content_block_start"},
                                            {"index", index},
                                            {"content_block", {{"type", "text"}, {"text", ""}}}}));
      events.push_back(sse_event("ping", {{"type", "ping"}}));
      for (const auto& part : pieces_of(reply.text, piece)) {
        events.push_back(sse_event("content_block_delta",
                                   {{"type", "content_block_delta"},
                                    {"index", index},
                                    {"delta", {{"type", "text_delta"}, {"text", part}}}}));
      }
      events.push_back(
          sse_event("content_block_stop", {{"type", "content_block_stop"}, {"index", index}}));
      ++index;
    }
    for (std::size_t i = 0; i < reply.tool_calls.size(); ++i, ++index) {
      const auto& tool_call = reply.tool_calls[i];
      events.push_back(sse_event("content_block_start", {{"type", "content_block_start"},
                                                         {"index", index},
                                                         {"content_block",
                                                          {{"type", "tool_use"},
                                                           {"id", tool_ids[i]},
                                                           {"name", tool_call.name},
                                                           {"input", json::object()}}}}));
      std::vector<std::string> parts = pieces_of(dump(tool_call.input), piece);
      parts.insert(parts.begin(), std::string());  // the API's first delta is empty
      for (const auto& part : parts) {
        events.push_back(
            sse_event("content_block_delta",
                      {{"type", "content_block_delta"},
                       {"index", index},
                       {"delta", {{"type", "input_json_delta"}, {"partial_json", part}}}}));
      }
      events.push_back(
          sse_event("content_block_stop", {{"type", "content_block_stop"}, {"index", index}}));
    }
    events.push_back(sse_event(
        "message_delta", {{"type", "message_delta"},
                          {"delta", {{"stop_reason", stop_reason}, {"stop_sequence", nullptr}}},
                          {"usage", {{"output_tokens", usage.output_tokens}}}}));
    events.push_back(sse_event("message_stop", {{"type", "message_stop"}}));
    return ScriptedReply::sse(events);
  }

  const std::string completion_id = new_id("chatcmpl-", 29);
  const std::string fingerprint = "fp_" + new_id("", 10);
  const std::int64_t created = kCreatedBase + static_cast<std::int64_t>(turn_);
  const std::string finish_reason = finish_reason_of(stop_reason);
  std::vector<std::string> call_ids;
  for (std::size_t i = 0; i < reply.tool_calls.size(); ++i)
    call_ids.push_back(new_id("call_", 24));
  if (!prompt.stream) {
    json message = {{"role", "assistant"},
                    {"content", reply.text.empty() ? json() : json(reply.text)},
                    {"refusal", nullptr}};
    if (!reply.tool_calls.empty()) {
      json calls = json::array();
      for (std::size_t i = 0; i < reply.tool_calls.size(); ++i) {
        calls.push_back({{"id", call_ids[i]},
                         {"type", "function"},
                         {"function",
                          {{"name", reply.tool_calls[i].name},
                           {"arguments", dump(reply.tool_calls[i].input)}}}});
      }
      message["tool_calls"] = calls;
    }
    const json body = {{"id", completion_id},
                       {"object", "chat.completion"},
                       {"created", created},
                       {"model", prompt.model},
                       {"choices",
                        {{{"index", 0},
                          {"message", message},
                          {"logprobs", nullptr},
                          {"finish_reason", finish_reason}}}},
                       {"usage", openai_usage(usage)},
                       {"system_fingerprint", fingerprint}};
    return ScriptedReply::json(200, dump(body));
  }
  auto chunk = [&](json delta, json finish) {
    json data = {{"id", completion_id},
                 {"object", "chat.completion.chunk"},
                 {"created", created},
                 {"model", prompt.model},
                 {"system_fingerprint", fingerprint},
                 {"choices",
                  {{{"index", 0},
                    {"delta", std::move(delta)},
                    {"logprobs", nullptr},
                    {"finish_reason", std::move(finish)}}}}};
    if (prompt.include_usage) data["usage"] = nullptr;
    return sse_data(data);
  };
  std::vector<std::string> chunks;
  chunks.push_back(chunk({{"role", "assistant"}, {"content", ""}, {"refusal", nullptr}}, nullptr));
  for (const auto& part : pieces_of(reply.text, piece))
    chunks.push_back(chunk({{"content", part}}, nullptr));
  for (std::size_t i = 0; i < reply.tool_calls.size(); ++i) {
    chunks.push_back(
        chunk({{"tool_calls",
                {{{"index", i},
                  {"id", call_ids[i]},
                  {"type", "function"},
                  {"function", {{"name", reply.tool_calls[i].name}, {"arguments", ""}}}}}}},
              nullptr));
    for (const auto& part : pieces_of(dump(reply.tool_calls[i].input), piece)) {
      chunks.push_back(
          chunk({{"tool_calls", {{{"index", i}, {"function", {{"arguments", part}}}}}}}, nullptr));
    }
  }
  chunks.push_back(chunk(json::object(), finish_reason));
  if (prompt.include_usage) {
    chunks.push_back(sse_data({{"id", completion_id},
                               {"object", "chat.completion.chunk"},
                               {"created", created},
                               {"model", prompt.model},
                               {"system_fingerprint", fingerprint},
                               {"choices", json::array()},
                               {"usage", openai_usage(usage)}}));
  }
  chunks.push_back("data: [DONE]\n\n");
  return ScriptedReply::sse(chunks);
}

}  // namespace loopr::test
