#include "llm/scripted_provider.hpp"

#include <asio/post.hpp>
#include <asio/redirect_error.hpp>
#include <asio/steady_timer.hpp>
#include <asio/this_coro.hpp>
#include <asio/use_awaitable.hpp>
#include <cerrno>
#include <fstream>
#include <set>
#include <utility>

#include "proto/json_bounded.hpp"

namespace loopr::llm {

using nlohmann::json;

namespace {

constexpr std::int64_t kDefaultContextWindow = 200000;
constexpr std::int64_t kMaxDelayMs = 3'600'000;
constexpr std::size_t kStreamPieces = 4;

Error line_error(const std::string& path, std::uint32_t line, std::string what) {
  Error error = make_error(loopr::errc::invalid_arguments,
                           path + ":" + std::to_string(line) + ": " + std::move(what),
                           "each non-blank line of a scripted session is one JSON object: a model "
                           "turn (text, tool_calls, stop_reason, model, usage) with optional "
                           "loop, delay_ms and error");
  error.details = {{"file", path}, {"line", line}};
  return error;
}

Result<ScriptedProvider::Entry> parse_entry(const std::string& path, std::uint32_t line_number,
                                            const std::string& line) {
  auto parsed = proto::parse_json_bounded(line);
  if (!parsed) {
    return line_error(path, line_number, "not valid JSON (" + parsed.error().message + ")");
  }
  json value = std::move(parsed).value();
  if (!value.is_object()) return line_error(path, line_number, "not a JSON object");
  static const std::set<std::string> kKeys = {"text",  "tool_calls", "stop_reason", "model",
                                              "usage", "delay_ms",   "error",       "loop"};
  for (const auto& [key, member] : value.items()) {
    if (!kKeys.contains(key)) {
      return line_error(path, line_number, "unknown key \"" + key + "\"");
    }
  }
  ScriptedProvider::Entry entry;
  entry.line = line_number;
  if (auto it = value.find("loop"); it != value.end()) {
    if (!it->is_string() || it->get<std::string>().empty()) {
      return line_error(path, line_number, "\"loop\" must be a loop id such as \"p1-s1\"");
    }
    entry.loop = it->get<std::string>();
  }
  if (auto it = value.find("delay_ms"); it != value.end()) {
    if (!it->is_number_integer() || it->get<std::int64_t>() < 0 ||
        it->get<std::int64_t>() > kMaxDelayMs) {
      return line_error(
          path, line_number,
          "\"delay_ms\" must be a whole number from 0 to " + std::to_string(kMaxDelayMs));
    }
    entry.delay_ms = it->get<std::int64_t>();
  }
  if (auto it = value.find("error"); it != value.end()) {
    if (!it->is_object() || !it->contains("code") || !(*it)["code"].is_string() ||
        !it->contains("message") || !(*it)["message"].is_string()) {
      return line_error(path, line_number,
                        "\"error\" must be an object with string \"code\" and \"message\"");
    }
    std::string hint;
    if (it->contains("hint")) {
      if (!(*it)["hint"].is_string()) {
        return line_error(path, line_number, "\"error\".\"hint\" must be a string");
      }
      hint = (*it)["hint"].get<std::string>();
    }
    entry.error = make_error((*it)["code"].get<std::string>(), (*it)["message"].get<std::string>(),
                             std::move(hint));
    return entry;
  }
  auto turn = model_turn_from_json(value);
  if (!turn) return line_error(path, line_number, turn.error().message);
  entry.turn = std::move(*turn);
  entry.has_usage = value.contains("usage") && !value["usage"].is_null();
  return entry;
}

std::int64_t quarter_rounded_up(std::size_t bytes) {
  return static_cast<std::int64_t>((bytes + 3) / 4);
}

// Splits `text` into at most kStreamPieces pieces, never inside a UTF-8 character.
std::vector<std::string_view> pieces_of(std::string_view text) {
  std::vector<std::string_view> pieces;
  std::size_t step = std::max<std::size_t>(1, (text.size() + kStreamPieces - 1) / kStreamPieces);
  std::size_t start = 0;
  while (start < text.size()) {
    std::size_t end = std::min(text.size(), start + step);
    while (end < text.size() && (static_cast<unsigned char>(text[end]) & 0xC0) == 0x80)
      ++end;
    pieces.push_back(text.substr(start, end - start));
    start = end;
  }
  return pieces;
}

Error cancelled_error() {
  return make_error(errc::cancelled, "the scripted model call was cancelled");
}

}  // namespace

Usage estimate_usage(const ModelRequest& request, const ModelTurn& turn) {
  json messages = json::array();
  for (const auto& message : request.messages)
    messages.push_back(to_json(message));
  json tools = json::array();
  for (const auto& tool : request.tools) {
    tools.push_back({{"name", tool.name},
                     {"description", tool.description},
                     {"input_schema", tool.input_schema}});
  }
  json whole = {{"system", request.system}, {"messages", std::move(messages)}, {"tools", tools}};
  std::string text = whole.dump(-1, ' ', false, json::error_handler_t::replace);
  std::size_t output = turn.text.size();
  for (const auto& call : turn.tool_calls)
    output += call.arguments.size();
  Usage usage;
  usage.input_tokens = quarter_rounded_up(text.size());
  usage.output_tokens = quarter_rounded_up(output);
  return usage;
}

Result<std::unique_ptr<ScriptedProvider>> ScriptedProvider::open(const std::string& path,
                                                                 ScriptedOptions options) {
  std::ifstream in(path, std::ios::binary);
  if (!in) {
    int err = errno;
    Error error = errno_error(err, "cannot read the scripted session", path);
    error.hint = "set script for the scripted provider to a readable JSON Lines file";
    return error;
  }
  std::vector<Entry> entries;
  std::string line;
  std::uint32_t line_number = 0;
  while (std::getline(in, line)) {
    ++line_number;
    if (!line.empty() && line.back() == '\r') line.pop_back();
    if (line.find_first_not_of(" \t") == std::string::npos) continue;
    auto entry = parse_entry(path, line_number, line);
    if (!entry) return std::move(entry).error();
    entries.push_back(std::move(*entry));
  }
  if (in.bad()) return errno_error(EIO, "cannot read the scripted session", path);
  return std::unique_ptr<ScriptedProvider>(new ScriptedProvider(path, options, std::move(entries)));
}

ScriptedProvider::ScriptedProvider(std::string path, ScriptedOptions options,
                                   std::vector<Entry> entries)
    : path_(std::move(path)),
      stream_(options.stream),
      context_window_(options.context_window > 0 ? options.context_window : kDefaultContextWindow),
      model_(options.model.empty() ? std::string("scripted") : options.model),
      entries_(std::move(entries)) {
  for (std::size_t i = 0; i < entries_.size(); ++i) {
    if (entries_[i].loop.empty()) {
      shared_.push_back(i);
    } else {
      by_loop_[entries_[i].loop].push_back(i);
    }
  }
}

asio::awaitable<Result<ModelTurn>> ScriptedProvider::complete(const ModelRequest& request,
                                                              const TurnCallbacks& callbacks) {
  if (callbacks.cancel != nullptr && callbacks.cancel->cancelled()) co_return cancelled_error();
  // The loop's own lines when it has any; otherwise the lines without "loop".
  auto own = by_loop_.find(request.conversation);
  const std::vector<std::size_t>& lines = own != by_loop_.end() ? own->second : shared_;
  if (request.sequence >= lines.size()) {
    const std::string whose =
        own != by_loop_.end() ? " for loop " + request.conversation : std::string();
    co_return make_error(errc::provider_request,
                         "the scripted session " + path_ + " has " + std::to_string(lines.size()) +
                             " turns" + whose + "; turn " + std::to_string(request.sequence + 1) +
                             " was asked for",
                         "record a longer session, or give the loop a budget of at most " +
                             std::to_string(lines.size()) + " model calls");
  }
  const Entry& entry = entries_[lines[request.sequence]];
  if (entry.delay_ms > 0) {
    asio::steady_timer timer(co_await asio::this_coro::executor,
                             std::chrono::milliseconds(entry.delay_ms));
    CancelHook hook(callbacks.cancel, [&timer] { timer.cancel(); });
    std::error_code ignored;
    co_await timer.async_wait(asio::redirect_error(asio::use_awaitable, ignored));
    if (callbacks.cancel != nullptr && callbacks.cancel->cancelled()) co_return cancelled_error();
  } else {
    // An instant answer still gives the io thread back once, as a network
    // answer would: a loop replaying a session must not keep other clients
    // and loops waiting for its whole iteration.
    co_await asio::post(co_await asio::this_coro::executor, asio::use_awaitable);
    if (callbacks.cancel != nullptr && callbacks.cancel->cancelled()) co_return cancelled_error();
  }
  if (entry.error) co_return *entry.error;
  ModelTurn turn = entry.turn;
  if (turn.model.empty()) turn.model = model_;
  if (!entry.has_usage) turn.usage = estimate_usage(request, turn);
  if (callbacks.on_text && !turn.text.empty()) {
    if (stream_) {
      for (std::string_view piece : pieces_of(turn.text))
        callbacks.on_text(piece);
    } else {
      callbacks.on_text(turn.text);
    }
  }
  co_return turn;
}

}  // namespace loopr::llm
