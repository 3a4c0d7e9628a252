// policy/shell_words: real command lines → the simple commands sh would run,
// and what cannot be read with confidence.
#include "policy/shell_words.hpp"

#include <gtest/gtest.h>

#include <string>
#include <vector>

namespace loopr::policy {
namespace {

using Words = std::vector<std::string>;

// Each simple command's words (what runs), in order.
std::vector<Words> commands_of(const std::string& line) {
  std::vector<Words> out;
  for (const SimpleCommand& c : parse_shell_words(line).commands)
    out.push_back(c.words);
  return out;
}

struct Case {
  const char* line;
  std::vector<Words> commands;
};

class CertainLines : public ::testing::TestWithParam<Case> {};

TEST_P(CertainLines, SplitIntoSimpleCommands) {
  const Case& c = GetParam();
  const ShellParse parse = parse_shell_words(c.line);
  EXPECT_EQ(parse.uncertain, "") << c.line;
  EXPECT_EQ(commands_of(c.line), c.commands) << c.line;
}

INSTANTIATE_TEST_SUITE_P(
    Table, CertainLines,
    ::testing::Values(
        Case{"npm test", {{"npm", "test"}}},
        Case{"npm test && curl evil.example", {{"npm", "test"}, {"curl", "evil.example"}}},
        Case{"make || echo failed; ls -la & wait",
             {{"make"}, {"echo", "failed"}, {"ls", "-la"}, {"wait"}}},
        Case{"cat log | grep -v x |& tee out",
             {{"cat", "log"}, {"grep", "-v", "x"}, {"tee", "out"}}},
        Case{"git add -A\ngit commit -m 'a b'",
             {{"git", "add", "-A"}, {"git", "commit", "-m", "a b"}}},
        Case{"(cd sub && make) > out.txt", {{"cd", "sub"}, {"make"}}},
        Case{"{ echo a; rm -f x; }", {{"echo", "a"}, {"rm", "-f", "x"}}},
        Case{"echo \"a $(curl -s x) b\"", {{"curl", "-s", "x"}, {"echo", "a $(curl -s x) b"}}},
        Case{"echo `whoami`", {{"whoami"}, {"echo", "`whoami`"}}},
        Case{"x=$(git rev-parse HEAD) make", {{"git", "rev-parse", "HEAD"}, {"make"}}},
        Case{"FOO=1 BAR='x y' npm test", {{"npm", "test"}}},
        Case{"env -i PATH=/bin FOO=1 curl x", {{"curl", "x"}}},
        Case{"env -u HOME -- rm -rf d", {{"rm", "-rf", "d"}}},
        Case{"sh -c 'npm test && curl evil'", {{"npm", "test"}, {"curl", "evil"}}},
        Case{"bash -ec \"git push --force\"", {{"git", "push", "--force"}}},
        Case{"sudo -u root rm -rf /", {{"rm", "-rf", "/"}}},
        Case{"timeout -s KILL 30 nice -n 5 nohup make", {{"make"}}},
        Case{"command -p exec git status", {{"git", "status"}}},
        Case{"command -v git", {{"command", "-v", "git"}}},
        Case{"setsid -w ionice -c 3 xargs -0 -n 1 rm", {{"rm"}}},
        Case{"ls > /dev/null 2>&1 < in.txt", {{"ls"}}},
        Case{"make &> log; make 2>> log", {{"make"}, {"make"}}},
        Case{"cat <<EOF > f\nrm -rf /\n$HOME\nEOF\necho done", {{"cat"}, {"echo", "done"}}},
        Case{"cat <<'EOF'\n$(curl x)\nEOF", {{"cat"}}},
        Case{"cat <<-END\n\tbody\n\tEND\nls", {{"cat"}, {"ls"}}},
        Case{"grep x <<< \"$(id)\"", {{"id"}, {"grep", "x"}}},
        Case{"'cu'rl \\\n  x", {{"curl", "x"}}},
        Case{"/usr/bin/curl x # a comment; rm -rf /", {{"/usr/bin/curl", "x"}}},
        Case{"if test -f x; then rm x; else touch x; fi",
             {{"test", "-f", "x"}, {"rm", "x"}, {"touch", "x"}}},
        Case{"for f in *.txt; do wc -l \"$f\"; done", {{"wc", "-l", "$f"}}},
        Case{"while read l; do echo $l; done < f", {{"read", "l"}, {"echo", "$l"}}},
        Case{"[ -f x ] && ! grep -q y x", {{"[", "-f", "x", "]"}, {"grep", "-q", "y", "x"}}},
        Case{"find . -name '*.o' | xargs rm -f", {{"find", ".", "-name", "*.o"}, {"rm", "-f"}}},
        Case{"echo $((1 + 2)) ${HOME:-/root}", {{"echo", "$((1 + 2))", "${HOME:-/root}"}}},
        Case{"", {}}, Case{"X=1", {}}));

class UncertainLines : public ::testing::TestWithParam<const char*> {};

TEST_P(UncertainLines, AreReportedUncertain) {
  EXPECT_NE(parse_shell_words(GetParam()).uncertain, "") << GetParam();
}

INSTANTIATE_TEST_SUITE_P(
    Table, UncertainLines,
    ::testing::Values("echo 'unbalanced", "echo \"unbalanced", "(ls", "ls)", "eval \"$CMD\"",
                      "$CMD -rf /", "\"$(echo curl)\" x", "cu* x", "{curl,evil}", "$'\\x63url' x",
                      "diff <(ls a) <(ls b)", "echo ${x:-$(curl y)}", "case $x in a) ls;; esac",
                      "[[ -f x ]] && ls", "f() { ls; }", "cat <<EOF\nbody",
                      "cat <<EOF\n$(curl x)\nEOF", "env -S 'curl x'", "sh -c \"$X\"", "bash -c",
                      "echo x \\", "sudo --bogus rm x", "ls `echo", "ls >", "$((1 + $(id -u)))"));

TEST(ShellWords, UncertainLinesKeepTheCommandsTheyCouldRead) {
  const ShellParse parse = parse_shell_words("curl evil; eval x");
  ASSERT_EQ(parse.commands.size(), 2u);
  EXPECT_EQ(parse.commands[0].words, (Words{"curl", "evil"}));
  EXPECT_EQ(parse.commands[1].uncertain, "eval runs a string as a command");
  EXPECT_EQ(parse.uncertain, "eval runs a string as a command");
}

TEST(ShellWords, WrappersAndWrittenWordsAreKept) {
  const ShellParse parse = parse_shell_words("sudo env X=1 rm -r d");
  ASSERT_EQ(parse.commands.size(), 1u);
  EXPECT_EQ(parse.commands[0].words, (Words{"rm", "-r", "d"}));
  EXPECT_EQ(parse.commands[0].wrappers, (Words{"sudo", "env"}));
  EXPECT_EQ(parse.commands[0].text(), "sudo env X=1 rm -r d");

  const ShellParse shell = parse_shell_words("bash -c 'ls; git push'");
  ASSERT_EQ(shell.commands.size(), 2u);
  EXPECT_EQ(shell.commands[1].wrappers, (Words{"bash"}));
}

TEST(ShellWords, DeepNestingIsUncertainNotACrash) {
  std::string line;
  for (int i = 0; i < 200; ++i)
    line += "$(";
  line += "ls";
  for (int i = 0; i < 200; ++i)
    line += ")";
  EXPECT_NE(parse_shell_words(line).uncertain, "");
  EXPECT_NE(parse_shell_words(std::string(5000, '(')).uncertain, "");
}

}  // namespace
}  // namespace loopr::policy
