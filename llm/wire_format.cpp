#include "llm/wire_format.hpp"

#include "llm/provider.hpp"

namespace loopr::llm::wire {

std::optional<std::int64_t> number_after(std::string_view text, std::string_view marker) {
  std::size_t at = text.find(marker);
  if (at == std::string_view::npos) return std::nullopt;
  at += marker.size();
  while (at < text.size() && text[at] == ' ')
    ++at;
  std::int64_t value = 0;
  std::size_t digits = 0;
  // 18 digits always fit an int64_t; no token count comes near.
  for (; at < text.size() && text[at] >= '0' && text[at] <= '9' && digits < 18; ++at, ++digits) {
    value = value * 10 + (text[at] - '0');
  }
  if (digits == 0) return std::nullopt;
  return value;
}

Error context_overflow_error(std::string_view wire, std::string_view words,
                             std::int64_t prompt_tokens, std::int64_t context_window, long status) {
  std::string message(wire);
  message += ": the request does not fit the model's context window (context overflow";
  if (prompt_tokens > 0 && context_window > 0) {
    message += ": " + std::to_string(prompt_tokens) + " input tokens, window " +
               std::to_string(context_window);
  }
  message += ")";
  std::string said = status > 0 ? "HTTP " + std::to_string(status) : std::string();
  if (!words.empty()) said += (said.empty() ? "" : " ") + std::string(words);
  if (!said.empty()) message += " — " + said;
  std::string hint =
      "retrying the same request cannot help: shrink the conversation (drop or shorten old "
      "tool results, or hand off to a fresh context) or lower max_tokens";
  if (context_window > 0) {
    hint += "; if this provider's context_window in loopr.toml is above the model's " +
            std::to_string(context_window) + ", lower it";
  }
  Error error = make_error(errc::context_overflow, std::move(message), std::move(hint));
  error.details = nlohmann::json::object();
  if (prompt_tokens > 0) error.details["prompt_tokens"] = prompt_tokens;
  if (context_window > 0) error.details["context_window"] = context_window;
  if (status > 0) error.details["status"] = status;
  return error;
}

}  // namespace loopr::llm::wire
