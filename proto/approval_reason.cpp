#include "proto/approval_reason.hpp"

namespace loopr::proto {
namespace {

using nlohmann::json;

// A member as text: a string as it is, a number or other value as JSON, "-"
// when missing.
std::string member_text(const json& object, const char* key) {
  const auto it = object.find(key);
  if (it == object.end() || it->is_null()) return "-";
  if (it->is_string()) return it->get<std::string>();
  return it->dump(-1, ' ', false, json::error_handler_t::replace);
}

}  // namespace

std::string approval_reason(const json& approval) {
  if (!approval.is_object()) return "waits for approval";
  const auto rule = approval.find("rule");
  if (rule != approval.end() && rule->is_object()) {
    const json command = rule->value("command", json::array());
    std::string line = "waits by the rule at " + member_text(*rule, "file") + ":" +
                       member_text(*rule, "line") + " (" + member_text(*rule, "decision") + " " +
                       command.dump(-1, ' ', false, json::error_handler_t::replace) + ")";
    const std::string reason = member_text(*rule, "reason");
    if (!reason.empty() && reason != "-") line += ": " + reason;
    return line;
  }
  const auto uncertain = approval.find("uncertain");
  if (uncertain != approval.end() && uncertain->is_string()) {
    return "waits: the approval rules cannot read its command (" + uncertain->get<std::string>() +
           ")";
  }
  return "waits by the approval policy for " + member_text(approval, "tool");
}

}  // namespace loopr::proto
