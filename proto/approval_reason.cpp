#include "proto/approval_reason.hpp"

#include "common/utf8.hpp"

namespace loopr::proto {
namespace {

using nlohmann::json;

// Each part of the sentence is cut here: a rule's text may come from a
// repository's file, and must not fill (or end) the prompt a person reads.
constexpr std::size_t kPartBytes = 300;

// `text` on one line, control characters made spaces, cut at kPartBytes.
std::string one_line(std::string text) {
  for (char& c : text) {
    if (static_cast<unsigned char>(c) < 0x20 || c == 0x7f) c = ' ';
  }
  if (text.size() > kPartBytes) text = text.substr(0, utf8_safe_prefix(text, kPartBytes)) + "...";
  return text;
}

// A member as text: a string as it is, a number or other value as JSON, "-"
// when missing; on one line and cut.
std::string member_text(const json& object, const char* key) {
  const auto it = object.find(key);
  if (it == object.end() || it->is_null()) return "-";
  if (it->is_string()) return one_line(it->get<std::string>());
  return one_line(it->dump(-1, ' ', false, json::error_handler_t::replace));
}

}  // namespace

std::string approval_reason(const json& approval) {
  if (!approval.is_object()) return "waits for approval";
  const auto rule = approval.find("rule");
  if (rule != approval.end() && rule->is_object()) {
    const json command = rule->value("command", json::array());
    const bool repositorys = rule->value("source", json()) == "repository";
    std::string line =
        std::string(repositorys ? "waits by the repository's rule at " : "waits by the rule at ") +
        member_text(*rule, "file") + ":" + member_text(*rule, "line") + " (" +
        member_text(*rule, "decision") + " " +
        one_line(command.dump(-1, ' ', false, json::error_handler_t::replace)) + ")";
    const std::string reason = member_text(*rule, "reason");
    if (!reason.empty() && reason != "-") line += ": " + reason;
    return line;
  }
  const auto uncertain = approval.find("uncertain");
  if (uncertain != approval.end() && uncertain->is_string()) {
    return "waits: the approval rules cannot read its command (" +
           one_line(uncertain->get<std::string>()) + ")";
  }
  return "waits by the approval policy for " + member_text(approval, "tool");
}

}  // namespace loopr::proto
