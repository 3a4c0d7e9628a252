#include "policy/command_rules.hpp"

#include <algorithm>

#include "common/utf8.hpp"

namespace loopr::policy {

namespace {

using nlohmann::json;

std::string quoted_words(const std::vector<std::string>& words) {
  return json(words).dump();
}

// Whether rule.command is a prefix of `words`; the first word also by base
// name when `by_base_name` and the rule names no path.
bool prefix_of(const std::vector<std::string>& prefix, const std::vector<std::string>& words,
               bool by_base_name) {
  if (words.size() < prefix.size()) return false;
  for (std::size_t k = 0; k < prefix.size(); ++k) {
    if (words[k] == prefix[k]) continue;
    if (k == 0 && by_base_name && prefix[0].find('/') == std::string::npos &&
        base_name(words[0]) == prefix[0]) {
      continue;
    }
    return false;
  }
  return true;
}

enum class Match { no, yes, gave_up };

// The rule's regexes over the words after its prefix.
Match arguments_agree(const CommandRule& rule, const std::vector<std::string>& words) {
  std::string rest;
  for (std::size_t k = rule.command.size(); k < words.size(); ++k)
    rest += (k == rule.command.size() ? "" : " ") + words[k];
  if (rule.args_match) {
    const RegexMatch found = rule.args_match->search(rest);
    if (found == RegexMatch::gave_up) return Match::gave_up;
    if (found == RegexMatch::no_match) return Match::no;
  }
  if (rule.args_not_match) {
    const RegexMatch found = rule.args_not_match->search(rest);
    if (found == RegexMatch::gave_up) return Match::gave_up;
    if (found == RegexMatch::match) return Match::no;
  }
  return Match::yes;
}

// `line_is_plain`: the line reads and writes no file by redirection and
// sets no variable for later commands (ShellParse), which exact rules need.
Match rule_matches(const CommandRule& rule, const SimpleCommand& command, bool line_is_plain) {
  if (rule.exact) {
    return line_is_plain && command.words == rule.command && command.fixed_words &&
                   command.wrappers.empty() && !command.sets_variables
               ? Match::yes
               : Match::no;
  }
  const bool tightens = rule.decision != Decision::allow;
  std::vector<const std::vector<std::string>*> forms = {&command.words};
  if (tightens) forms.push_back(&command.written);
  Match result = Match::no;
  for (const auto* words : forms) {
    if (words->empty() || !prefix_of(rule.command, *words, tightens)) continue;
    const Match agree = arguments_agree(rule, *words);
    if (agree == Match::yes) return Match::yes;
    if (agree == Match::gave_up) result = Match::gave_up;
  }
  if (tightens && rule.command.size() == 1 && !rule.args_match && !rule.args_not_match &&
      std::find(command.wrappers.begin(), command.wrappers.end(), rule.command[0]) !=
          command.wrappers.end()) {
    return Match::yes;
  }
  return result;
}

// "`npm test`" for messages: the command as written, cut when long.
std::string shown(const SimpleCommand& command) {
  std::string text = command.text();
  if (text.size() > 200) text = text.substr(0, utf8_safe_prefix(text, 200)) + "…";
  return "`" + text + "`";
}

}  // namespace

std::string_view to_string(Decision decision) {
  switch (decision) {
    case Decision::none:
      return "none";
    case Decision::allow:
      return "allow";
    case Decision::ask:
      return "ask";
    case Decision::deny:
      return "deny";
  }
  return "none";
}

std::string CommandRule::where() const {
  if (saved_id != 0) return "saved rule " + std::to_string(saved_id);
  return file + ":" + std::to_string(line);
}

std::string CommandRule::describe() const {
  std::string out = std::string(to_string(decision)) + " " + quoted_words(command);
  if (args_match) out += " args_match " + json(args_match->source()).dump();
  if (args_not_match) out += " args_not_match " + json(args_not_match->source()).dump();
  if (exact) out += " exactly";
  if (!tool.empty()) out += " (" + tool + ")";
  return out;
}

json CommandRule::to_json() const {
  json out = {{"decision", to_string(decision)},
              {"command", command},
              {"reason", reason},
              {"source", from_repository ? "repository"
                         : saved_id != 0 ? "saved"
                                         : "user"},
              {"file", file},
              {"line", line}};
  if (args_match) out["args_match"] = args_match->source();
  if (args_not_match) out["args_not_match"] = args_not_match->source();
  if (exact) out["exact"] = true;
  if (!tool.empty()) out["tool"] = tool;
  if (saved_id != 0) out["saved_id"] = saved_id;
  return out;
}

std::string RuleVerdict::explanation() const {
  if (decision == Decision::none) return "no approval rule decided";
  const CommandVerdict* decided = nullptr;
  for (const CommandVerdict& verdict : commands) {
    if (verdict.decision == decision && verdict.rule) {
      decided = &verdict;
      break;
    }
  }
  if (decided == nullptr || !rule) {
    return "the command cannot be read with confidence (" + uncertain +
           "), so it waits for approval";
  }
  const char* verb = decision == Decision::deny  ? "is denied by"
                     : decision == Decision::ask ? "waits for approval by"
                                                 : "is allowed by";
  std::string out = shown(decided->command) + " " + verb + " the approval rule at " +
                    rule->where() + " (" + rule->describe() + ")";
  if (!rule->reason.empty()) out += ": " + rule->reason;
  if (decision == Decision::allow && commands.size() > 1) out += " (every command is allowed)";
  return out;
}

json RuleVerdict::to_json() const {
  json list = json::array();
  for (const CommandVerdict& verdict : commands) {
    json item = {{"command", verdict.command.text()},
                 {"words", verdict.command.words},
                 {"wrappers", verdict.command.wrappers},
                 {"decision", to_string(verdict.decision)}};
    if (verdict.rule) item["rule"] = verdict.rule->to_json();
    if (!verdict.command.uncertain.empty()) item["uncertain"] = verdict.command.uncertain;
    list.push_back(std::move(item));
  }
  json out = {
      {"decision", to_string(decision)}, {"explanation", explanation()}, {"commands", list}};
  if (rule) out["rule"] = rule->to_json();
  if (!uncertain.empty()) out["uncertain"] = uncertain;
  return out;
}

RuleVerdict evaluate(std::string_view line, const std::vector<CommandRule>& rules) {
  RuleVerdict verdict;
  if (rules.empty()) return verdict;
  ShellParse parse = parse_shell_words(line);
  verdict.uncertain = std::move(parse.uncertain);
  const bool line_is_plain = parse.file_redirection.empty() && !parse.assigns_variables;
  bool all_allowed = !parse.commands.empty();
  for (SimpleCommand& command : parse.commands) {
    CommandVerdict judged;
    for (const CommandRule& rule : rules) {
      if (rule.decision <= judged.decision) continue;  // a stricter one matched already
      const Match match = rule_matches(rule, command, line_is_plain);
      if (match == Match::gave_up && command.uncertain.empty()) {
        command.uncertain = "the regular expression of the rule at " + rule.where() +
                            " gave up on this command (a PCRE2 limit)";
        if (verdict.uncertain.empty()) verdict.uncertain = command.uncertain;
      }
      if (match != Match::yes) continue;
      judged.decision = rule.decision;
      judged.rule = rule;
    }
    if (!command.uncertain.empty() && judged.decision < Decision::ask) {
      judged.decision = Decision::ask;
      judged.rule.reset();
    }
    if (judged.decision != Decision::allow) all_allowed = false;
    judged.command = std::move(command);
    verdict.commands.push_back(std::move(judged));
  }
  const auto first_with = [&](Decision decision) -> const CommandVerdict* {
    for (const CommandVerdict& c : verdict.commands)
      if (c.decision == decision && c.rule) return &c;
    return nullptr;
  };
  const bool any_ask =
      std::any_of(verdict.commands.begin(), verdict.commands.end(),
                  [](const CommandVerdict& c) { return c.decision == Decision::ask; });
  if (const CommandVerdict* denied = first_with(Decision::deny)) {
    verdict.decision = Decision::deny;
    verdict.rule = denied->rule;
  } else if (any_ask || !verdict.uncertain.empty()) {
    verdict.decision = Decision::ask;
    if (const CommandVerdict* asked = first_with(Decision::ask)) verdict.rule = asked->rule;
  } else if (all_allowed) {
    verdict.decision = Decision::allow;
    verdict.rule = verdict.commands.front().rule;
  }
  return verdict;
}

}  // namespace loopr::policy
