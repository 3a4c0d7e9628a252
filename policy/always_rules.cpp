#include "policy/always_rules.hpp"

#include <algorithm>

#include "common/json_text.hpp"
#include "policy/shell_words.hpp"

namespace loopr::policy {

using nlohmann::json;

Result<std::vector<CommandRule>> always_rules(std::string_view line, const std::string& tool) {
  const std::string once =
      "approve it once (looprctl approve ID), or write an [[approval.rules]] entry in your "
      "loopr.toml";
  ShellParse parse = parse_shell_words(line);
  if (!parse.uncertain.empty()) {
    return make_error(errc::invalid_arguments,
                      "loopr offers no rule for a command it cannot read with confidence (" +
                          parse.uncertain + ")",
                      once);
  }
  if (!parse.file_redirection.empty()) {
    return make_error(errc::invalid_arguments,
                      "loopr offers no rule for a command that redirects a file or a "
                      "here-document (" +
                          parse.file_redirection +
                          "): an exact rule names the command's words, not what it reads or "
                          "writes",
                      once);
  }
  if (parse.assigns_variables) {
    return make_error(errc::invalid_arguments,
                      "loopr offers no rule for a command line that sets variables "
                      "(VAR=…; cmd)",
                      once);
  }
  if (parse.commands.empty()) {
    return make_error(errc::invalid_arguments, "the command runs nothing to write a rule for",
                      once);
  }
  std::vector<CommandRule> rules;
  for (const SimpleCommand& command : parse.commands) {
    if (!command.wrappers.empty()) {
      return make_error(errc::invalid_arguments,
                        "loopr offers no rule for `" + command.text() + "`: it runs under " +
                            command.wrappers.front() +
                            ", and an exact rule names the command that runs alone",
                        once);
    }
    if (!command.fixed_words) {
      return make_error(errc::invalid_arguments,
                        "loopr offers no rule for `" + command.text() +
                            "`: a word in it is expanded ($x, $(…), `…`, a glob), so the "
                            "same words could run something else",
                        once);
    }
    if (command.sets_variables) {
      return make_error(errc::invalid_arguments,
                        "loopr offers no rule for a command that sets variables (`" +
                            command.text() + "` with VAR=…)",
                        once);
    }
    CommandRule rule;
    rule.command = command.words;
    rule.exact = true;
    rule.tool = tool;
    rule.decision = Decision::allow;
    rule.reason = "approved always with looprctl approve --always";
    const bool seen = std::any_of(rules.begin(), rules.end(), [&](const CommandRule& other) {
      return other.command == rule.command;
    });
    if (!seen) rules.push_back(std::move(rule));
  }
  return rules;
}

nlohmann::json saved_rule_json(const CommandRule& rule) {
  json out = {
      {"command", rule.command}, {"exact", true}, {"decision", "allow"}, {"reason", rule.reason}};
  if (!rule.tool.empty()) out["tool"] = rule.tool;
  return out;
}

Result<CommandRule> saved_rule_from_json(const json& stored, std::int64_t id) {
  const auto bad = [id](const std::string& what) {
    return make_error(errc::internal, "saved approval rule " + std::to_string(id) + " " + what,
                      "forget it with looprctl policy forget " + std::to_string(id));
  };
  if (!stored.is_object() || !stored.contains("command") || !stored["command"].is_array()) {
    return bad("has no command");
  }
  CommandRule rule;
  for (const json& word : stored["command"]) {
    if (!word.is_string()) return bad("has a command word that is not a string");
    rule.command.push_back(word.get<std::string>());
  }
  if (rule.command.empty()) return bad("has an empty command");
  const auto exact = stored.find("exact");
  if (text_member(stored, "decision") != "allow" || exact == stored.end() || !exact->is_boolean() ||
      !exact->get<bool>()) {
    return bad("is not an exact allow rule");
  }
  rule.decision = Decision::allow;
  rule.exact = true;
  rule.reason = text_member(stored, "reason");
  rule.tool = text_member(stored, "tool");
  rule.saved_id = id;
  rule.file = "saved rule";
  return rule;
}

}  // namespace loopr::policy
