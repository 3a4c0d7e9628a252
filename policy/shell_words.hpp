// A command line as POSIX sh would run it, split into its simple commands,
// for the approval rules (policy/command_rules.hpp; issue 27).
//
// Hand-written because Debian 12 packages no C or C++ shell parser:
// tree-sitter-bash is not in bookworm, and bash's own parser is not a
// library. It is deliberately small and conservative — it is not a shell:
// what it cannot read with confidence it reports as uncertain (a reason),
// and the rules turn an uncertain command line into `ask`. It is fuzzed
// (tests/fuzz/fuzz_shell_words.cpp).
//
// What it reads:
//   - quoting: '...', "...", backslash, line continuation;
//   - lists and pipelines: | |& && || ; & and newlines; comments;
//   - subshells ( ... ) and groups { ...; }; if/while/until/for bodies
//     (the keywords are skipped, the commands inside are checked);
//   - command substitution $( ... ) and `...`, anywhere in a word (in
//     double quotes too): the commands inside are simple commands as well;
//   - redirections (>file, 2>&1, <in, &>, >>, <<<word) and here-documents
//     (<<EOF, <<-EOF, <<'EOF'), whose words are not part of the command;
//   - leading assignments (VAR=x cmd);
//   - wrappers, seen through to the command they run: env [-i] [-u N]
//     [VAR=x ...], command [-p], exec, nice [-n N], nohup, timeout [opts] N,
//     sudo [opts], doas, builtin, time, stdbuf, setsid, ionice, xargs, and
//     sh/bash/dash/zsh/ksh -c "..." (the string parsed again as a command
//     line). Not seen through: find -exec, su -c, watch, interpreters'
//     own -c/-e (python, perl), scripts — rules name those programs.
// Uncertain: unbalanced quotes or parentheses; eval; a variable, command
// substitution, glob, brace expansion or $'...' as the command name; a
// parameter expansion or arithmetic holding a command; process substitution
// <( ) >( ); case, [[ ]], (( )), function definitions, coproc; a here-
// document without its end, or whose unquoted body substitutes a command;
// a wrapper option it does not know; nesting deeper than kMaxDepth.
//
// Thread-safe (no state beyond the call); input of any bytes is fine.
#pragma once

#include <cstddef>
#include <string>
#include <string_view>
#include <vector>

namespace loopr::policy {

// Nesting (subshells, substitutions, sh -c) beyond this is uncertain.
inline constexpr int kMaxDepth = 16;
// Simple commands beyond this many make the line uncertain.
inline constexpr std::size_t kMaxSimpleCommands = 1000;

// The last component of a program's path: "/usr/bin/rm" → "rm", "rm" → "rm".
inline std::string_view base_name(std::string_view path) {
  const auto slash = path.rfind('/');
  return slash == std::string_view::npos ? path : path.substr(slash + 1);
}

struct SimpleCommand {
  // The command that runs and its arguments, wrappers and assignments taken
  // off, quotes removed. A word with an expansion keeps its text as written
  // ("$HOME/x"). Empty when the command name could not be read.
  std::vector<std::string> words;
  // As written, from its first word after the assignments (wrappers
  // included): "sudo -u x rm -r d".
  std::vector<std::string> written;
  // The wrappers it runs under, outermost first, by name ("sudo", "env",
  // "bash" for bash -c "...").
  std::vector<std::string> wrappers;
  std::string uncertain;  // why this command cannot be judged; empty when it can
  // It sets variables for the command (VAR=x cmd), which `written` leaves out.
  bool sets_variables = false;
  // Every word is a fixed word: no expansion ($x, $(…), `…`), glob or brace.
  bool fixed_words = true;

  // written, joined with spaces (for messages).
  std::string text() const;
};

struct ShellParse {
  std::vector<SimpleCommand> commands;  // in the order they appear
  // Why the whole line cannot be read with confidence (the first reason);
  // empty when it can. Set too when one of the commands is uncertain.
  std::string uncertain;
  // The first redirection that reads or writes a file or a here-document
  // ("> out.txt", "<<EOF", "<<< text"), as written; empty when there is none
  // (duplicating a descriptor, 2>&1, and /dev/null do not count).
  std::string file_redirection;
  // A statement of assignments alone (`PATH=./bin:$PATH; npm test`): the
  // variables reach every later command of the line.
  bool assigns_variables = false;
};

ShellParse parse_shell_words(std::string_view line);

}  // namespace loopr::policy
