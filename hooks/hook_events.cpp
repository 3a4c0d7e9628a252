#include "hooks/hook_events.hpp"

#include <algorithm>
#include <filesystem>

#include "common/ascii_text.hpp"
#include "common/utf8.hpp"

namespace loopr::hooks {
namespace {

using nlohmann::json;

// `text` trimmed of surrounding white space and cut to `max` bytes on a
// UTF-8 boundary, saying so.
std::string message_text(std::string_view text, std::size_t max) {
  text = trim_space(text);
  if (text.size() <= max) return to_lossy_utf8(text);
  return to_lossy_utf8(text.substr(0, utf8_safe_prefix(text, max))) +
         " [loopr: " + std::to_string(text.size() - max) + " bytes cut]";
}

// The longest string member anywhere in `value` (nullptr: none).
json* longest_string(json& value, std::size_t& longest) {
  json* found = nullptr;
  if (value.is_string()) {
    const std::size_t size = value.get_ref<const std::string&>().size();
    if (size > longest) {
      longest = size;
      found = &value;
    }
    return found;
  }
  if (value.is_structured()) {
    for (auto& member : value) {
      if (json* deeper = longest_string(member, longest)) found = deeper;
    }
  }
  return found;
}

}  // namespace

std::vector<const config::HookSettings*> hooks_for(const std::vector<config::HookSettings>& hooks,
                                                   std::string_view event, std::string_view tool) {
  std::vector<const config::HookSettings*> found;
  for (const config::HookSettings& hook : hooks) {
    if (hook.event != event) continue;
    if (!hook.tools.empty() &&
        std::find(hook.tools.begin(), hook.tools.end(), tool) == hook.tools.end()) {
      continue;
    }
    found.push_back(&hook);
  }
  return found;
}

std::string hook_input(std::string_view event, const json& data) {
  json input = json::object();
  input["event"] = std::string(event);
  if (data.is_object()) {
    for (auto it = data.begin(); it != data.end(); ++it) {
      if (it.key() != "event") input[it.key()] = *it;
    }
  }
  std::string text = input.dump(-1, ' ', false, json::error_handler_t::replace);
  // Cut the longest string by what is over (and a little more for the
  // marker), until it fits; a document of many short strings ends with its
  // strings emptied, which still fits long before the loop runs out.
  for (int round = 0; text.size() > kMaxHookInputBytes && round < 8; ++round) {
    std::size_t longest = 0;
    json* target = longest_string(input, longest);
    if (target == nullptr || longest == 0) break;
    const std::string& value = target->get_ref<const std::string&>();
    const std::size_t over = text.size() - kMaxHookInputBytes + 64;
    const std::size_t keep =
        over >= value.size() ? 0 : utf8_safe_prefix(value, value.size() - over);
    *target =
        value.substr(0, keep) + "[loopr: " + std::to_string(value.size() - keep) + " bytes cut]";
    text = input.dump(-1, ' ', false, json::error_handler_t::replace);
  }
  // Many short strings (a long listing) are not made small by cutting the
  // longest: the largest members go whole, each said, until it fits.
  while (text.size() > kMaxHookInputBytes) {
    std::string largest;
    std::size_t largest_size = 0;
    for (auto it = input.begin(); it != input.end(); ++it) {
      if (it.key() == "event") continue;
      const std::size_t size = it->dump(-1, ' ', false, json::error_handler_t::replace).size();
      if (size > largest_size) {
        largest_size = size;
        largest = it.key();
      }
    }
    if (largest.empty()) break;
    input[largest] = "[loopr: " + std::to_string(largest_size) + " bytes cut]";
    text = input.dump(-1, ' ', false, json::error_handler_t::replace);
  }
  return text;
}

HookVerdict judge(const config::HookSettings& hook, std::string_view event, const HookRun& run) {
  HookVerdict verdict;
  const std::string label = hook_label(hook);
  switch (run.ended) {
    case HookRun::Ended::not_started:
      verdict.failure = "could not start: " + run.why;
      return verdict;
    case HookRun::Ended::timed_out:
      verdict.failure = "did not finish within " + std::to_string(hook.timeout_s) +
                        " s (timeout_s) and was stopped";
      return verdict;
    case HookRun::Ended::signalled:
      verdict.failure = "was killed by signal " + std::to_string(run.exit_code);
      return verdict;
    case HookRun::Ended::exited:
      break;
  }
  if (run.exit_code == 0) {
    verdict.note = message_text(run.out, kMaxHookMessageBytes);
    return verdict;
  }
  if (run.exit_code == 2) {
    const std::string said = message_text(run.err, kMaxHookMessageBytes);
    if (event == "tool.before") {
      verdict.refuse = true;
      verdict.message = said.empty()
                            ? "the user's hook " + label + " refused this call (it gave no reason)"
                            : said;
    } else {
      verdict.note = said;
    }
    return verdict;
  }
  const std::string said = message_text(run.err, 300);
  verdict.failure =
      "exited with status " + std::to_string(run.exit_code) + (said.empty() ? "" : ": " + said);
  return verdict;
}

std::string hook_label(const config::HookSettings& hook) {
  std::string where = hook.origin.file.empty()
                          ? std::string("[[hooks]]")
                          : std::filesystem::path(hook.origin.file).filename().string() + ":" +
                                std::to_string(hook.origin.line);
  std::string command = hook.command.substr(0, utf8_safe_prefix(hook.command, 60));
  if (command.size() < hook.command.size()) command += "…";
  return where + " (" + command + ")";
}

}  // namespace loopr::hooks
