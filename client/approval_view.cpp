#include "client/approval_view.hpp"

#include "client/loop_view.hpp"
#include "client/text_format.hpp"

namespace loopr::client {

using nlohmann::json;

std::string why_it_waits(const json& approval) {
  const auto rule = approval.find("rule");
  if (rule != approval.end() && rule->is_object()) {
    std::string line = "waits by the rule at " + cell(*rule, "file") + ":" + cell(*rule, "line") +
                       " (" + cell(*rule, "decision") + " " +
                       printable(rule->value("command", json::array()).dump()) + ")";
    const std::string reason = cell(*rule, "reason");
    if (!reason.empty() && reason != "-") line += ": " + reason;
    return line;
  }
  const auto uncertain = approval.find("uncertain");
  if (uncertain != approval.end() && uncertain->is_string()) {
    return "waits: the approval rules cannot read its command (" +
           printable(uncertain->get<std::string>()) + ")";
  }
  return "waits by the approval policy for " + cell(approval, "tool");
}

std::string waiting_for_approval_line(const json& approval) {
  const std::string id = string_of(approval, "id");
  return "waiting for your approval: " + printable(string_of(approval, "tool")) + " (" +
         printable(id) + ") \xe2\x80\x94 looprctl approve " + shell_word(id) +
         ", or looprctl deny " + shell_word(id);
}

}  // namespace loopr::client
