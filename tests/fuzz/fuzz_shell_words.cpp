// libFuzzer target: arbitrary bytes as a command line for the approval
// rules' shell reader (policy/shell_words.hpp; SECURITY.md class 30). It must
// never crash, hang or recurse without bound; what it reports must hold
// together: a command that cannot be read makes the line uncertain, a
// readable one has words, and the counts stay within their caps. The rules
// are evaluated too, with a deny, an ask and an allow rule.
#include <cstddef>
#include <cstdint>
#include <cstdlib>
#include <string_view>
#include <vector>

#include "policy/command_rules.hpp"
#include "policy/shell_words.hpp"

namespace {

std::vector<loopr::policy::CommandRule> fuzz_rules() {
  using loopr::policy::CommandRule;
  using loopr::policy::Decision;
  std::vector<CommandRule> rules(3);
  rules[0].command = {"curl"};
  rules[0].decision = Decision::deny;
  rules[1].command = {"git", "push"};
  rules[1].decision = Decision::ask;
  rules[1].args_match = loopr::Regex::compile("--force|-f").value();
  rules[2].command = {"ls"};
  rules[2].decision = Decision::allow;
  return rules;
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  namespace policy = loopr::policy;
  const std::string_view line(reinterpret_cast<const char*>(data), size);
  const policy::ShellParse parse = policy::parse_shell_words(line);
  if (parse.commands.size() > policy::kMaxSimpleCommands) std::abort();
  for (const policy::SimpleCommand& command : parse.commands) {
    if (!command.uncertain.empty() && parse.uncertain.empty()) std::abort();
    if (command.uncertain.empty() && command.words.empty()) std::abort();
    if (command.written.empty()) std::abort();
  }
  static const std::vector<policy::CommandRule> rules = fuzz_rules();
  const policy::RuleVerdict verdict = policy::evaluate(line, rules);
  if (!verdict.uncertain.empty() && verdict.decision < policy::Decision::ask) std::abort();
  if (verdict.decision == policy::Decision::deny && !verdict.rule) std::abort();
  // The line's bytes may not be UTF-8 here (looprd's come from JSON, so they are).
  (void)verdict.to_json().dump(-1, ' ', false, nlohmann::json::error_handler_t::replace);
  return 0;
}
