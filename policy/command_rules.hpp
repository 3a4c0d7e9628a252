// Per-command approval rules (issue 27): [[approval.rules]] in loopr.toml and
// in a trusted repository's .loopr/loopr.toml, judged against each simple
// command of a command line (policy/shell_words.hpp) before the approval
// policy of the tool (run_command, run_command_isolated) or its lane.
//
// A rule matches a simple command when its `command` words are a prefix of
// the command's words (the first one also by base name, "/usr/bin/curl" is
// "curl") and its regexes, searched in the rest of the words joined by
// spaces, agree: args_match must match, args_not_match must not. Rules that
// tighten (ask, deny) also match the command as written with its wrappers
// ("sudo rm" for ["sudo"] or ["sudo", "rm"]) and a rule naming one word
// matches every command run under that wrapper (["bash"] for bash -c "...");
// an allow rule matches only the command that runs, named exactly.
//
// The decision of a line: deny if any simple command is denied; else ask if
// any is asked, or the line (or a command in it) cannot be read with
// confidence; else allow if every simple command is allowed; else none: no
// rule decided, the tool's or lane's policy applies. Among the rules that
// match one command the strictest wins, then the first written.
//
// Immutable after loading; evaluate() is thread-safe.
#pragma once

#include <cstdint>
#include <nlohmann/json.hpp>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "common/regex.hpp"
#include "policy/shell_words.hpp"

namespace loopr::policy {

// Ordered by strictness.
enum class Decision { none, allow, ask, deny };
// "none", "allow", "ask", "deny"
std::string_view to_string(Decision decision);

struct CommandRule {
  std::vector<std::string> command;  // the prefix, as words; never empty
  std::optional<Regex> args_match;
  std::optional<Regex> args_not_match;
  Decision decision = Decision::ask;  // allow, ask or deny
  std::string reason;                 // told to the model on deny, to the person on ask
  // Matches only a command whose words are `command`, all of them and no
  // more, each a fixed word (no $x, $(…), glob), run under no wrapper and
  // setting no variable, in a line that redirects no file and sets no
  // variable for later commands (no base-name match, no regexes): the rules
  // `looprctl approve --always` saves.
  bool exact = false;
  // The one tool whose calls the rule judges (a saved rule: the tool that
  // was approved); empty: every tool that runs a command.
  std::string tool;
  bool from_repository = false;  // a repository's .loopr/loopr.toml (never allow)
  // A rule saved by `looprctl approve --always` (its id in the store); 0: written in a file.
  std::int64_t saved_id = 0;
  std::string file;  // where it was written
  std::uint32_t line = 0;

  // "FILE:LINE"
  std::string where() const;
  // deny ["git", "push"] args_match "--force"
  std::string describe() const;
  // {decision, command, args_match?, args_not_match?, exact?, tool?, reason,
  // source (user|repository|saved), file, line, saved_id?}
  nlohmann::json to_json() const;
};

struct CommandVerdict {
  SimpleCommand command;
  Decision decision = Decision::none;
  std::optional<CommandRule> rule;  // the rule that matched it
};

struct RuleVerdict {
  Decision decision = Decision::none;
  // The rule that decided: the first command's with the line's decision.
  // None for none, and for an ask that only the uncertain reading made.
  std::optional<CommandRule> rule;
  std::string uncertain;  // why the line cannot be read with confidence; empty when it can
  std::vector<CommandVerdict> commands;

  // One sentence saying what decided, for the model and the person:
  // "`curl x` is denied by the approval rule at FILE:LINE (deny [\"curl\"]): REASON".
  std::string explanation() const;
  // {decision, rule?, uncertain?, explanation, commands: [{command, words, wrappers,
  // decision, rule?, uncertain?}]}
  nlohmann::json to_json() const;
};

// Judges `line` by `rules` (the user's first, then the repository's). No
// rules: none, and the line is not read at all.
RuleVerdict evaluate(std::string_view line, const std::vector<CommandRule>& rules);

}  // namespace loopr::policy
