#include "policy/shell_words.hpp"

#include <algorithm>
#include <initializer_list>
#include <utility>

namespace loopr::policy {

namespace {

// One word as the shell reads it.
struct Word {
  std::string value;     // quotes removed; expansions kept as written
  std::string raw;       // as written
  bool expands = false;  // $name, ${...}, $(...), `...`, $'...', $((...))
  bool glob = false;     // an unquoted * ? [
  bool brace = false;    // an unquoted { inside a word: brace expansion ({curl,x})
  bool quoted = false;   // any quoting or backslash

  bool literal() const { return !expands && !glob && !brace; }
};

struct HereDoc {
  std::string delimiter;
  bool strip_tabs = false;  // <<-
  bool quoted = false;      // <<'EOF': the body is not expanded
};

bool is_blank(char c) {
  return c == ' ' || c == '\t';
}
bool is_meta(char c) {
  return is_blank(c) || c == '|' || c == '&' || c == ';' || c == '<' || c == '>' || c == '(' ||
         c == ')' || c == '\n';
}
bool is_digit(char c) {
  return c >= '0' && c <= '9';
}
bool is_name_start(char c) {
  return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || c == '_';
}
bool is_name_char(char c) {
  return is_name_start(c) || is_digit(c);
}

// NAME=... or NAME+=..., as written (a quoted name is a command, not an
// assignment).
bool is_assignment(std::string_view raw) {
  if (raw.empty() || !is_name_start(raw.front())) return false;
  std::size_t i = 1;
  while (i < raw.size() && is_name_char(raw[i]))
    ++i;
  if (i < raw.size() && raw[i] == '=') return true;
  return i + 1 < raw.size() && raw[i] == '+' && raw[i + 1] == '=';
}

template <class Words>
bool one_of(std::string_view word, const Words& set) {
  return std::find(std::begin(set), std::end(set), word) != std::end(set);
}
bool one_of(std::string_view word, std::initializer_list<std::string_view> set) {
  return one_of<std::initializer_list<std::string_view>>(word, set);
}

// The options of a command that runs another one (env, sudo, timeout...).
struct WrapperSyntax {
  std::string_view name;
  std::vector<std::string_view> flags;       // "-i", "--ignore-environment"
  std::vector<std::string_view> with_value;  // "-u X", "-uX", "--unset=X"
  // Options after which it runs no command ("command -v", "sudo -l").
  std::vector<std::string_view> not_running = {};
  bool assignments = false;    // NAME=value words before the command (env, sudo)
  bool numeric_short = false;  // "-10" (nice)
  bool duration = false;       // a duration before the command (timeout)
};

const WrapperSyntax kWrappers[] = {
    {"env",
     {"-i", "-", "--ignore-environment", "-0", "--null", "-v", "--debug"},
     {"-u", "--unset", "-C", "--chdir"},
     {},
     true},
    {"command", {"-p"}, {}, {"-v", "-V"}},
    {"exec", {"-c", "-l"}, {"-a"}},
    {"nice", {}, {"-n", "--adjustment"}, {}, false, true},
    {"nohup", {}, {}},
    {"builtin", {}, {}},
    {"timeout",
     {"--preserve-status", "--foreground", "-v", "--verbose"},
     {"-s", "--signal", "-k", "--kill-after"},
     {},
     false,
     false,
     true},
    {"sudo",
     {"-A",
      "-b",
      "-E",
      "-H",
      "-n",
      "-P",
      "-S",
      "-i",
      "-s",
      "-k",
      "--askpass",
      "--background",
      "--preserve-env",
      "--set-home",
      "--non-interactive",
      "--preserve-groups",
      "--stdin",
      "--login",
      "--shell",
      "--reset-timestamp"},
     {"-u",      "--user",       "-g",
      "--group", "-C",           "--close-from",
      "-D",      "--chdir",      "-h",
      "--host",  "-p",           "--prompt",
      "-r",      "--role",       "-t",
      "--type",  "-T",           "--command-timeout",
      "-U",      "--other-user", "--preserve-env"},
     {"-l", "--list", "-v", "--validate", "-V", "--version", "-e", "--edit", "-K",
      "--remove-timestamp"},
     true},
    {"doas", {"-n", "-s"}, {"-u", "-C"}},
    {"time",
     {"-p", "-v", "--verbose", "-a", "--append", "-q", "--quiet", "--portability"},
     {"-f", "--format", "-o", "--output"}},
    {"stdbuf", {}, {"-i", "--input", "-o", "--output", "-e", "--error"}},
    {"setsid", {"-c", "--ctty", "-f", "--fork", "-w", "--wait"}, {}},
    {"ionice", {"-t", "--ignore"}, {"-c", "--class", "-n", "--classdata"}},
    {"xargs",
     {"-0", "-r", "-t", "-p", "-x", "--null", "--no-run-if-empty", "--verbose", "--interactive",
      "--exit", "--open-tty", "-o"},
     {"-a", "--arg-file", "-d", "--delimiter", "-E", "-I", "-L", "--max-lines", "-n", "--max-args",
      "-P", "--max-procs", "-s", "--max-chars", "--process-slot-var"}},
};

const WrapperSyntax* wrapper_named(std::string_view name) {
  for (const WrapperSyntax& w : kWrappers)
    if (w.name == name) return &w;
  return nullptr;
}

bool is_shell(std::string_view name) {
  return one_of(name, {"sh", "bash", "dash", "zsh", "ksh", "mksh", "ash"});
}

// Whether `option` is a short option of `syntax` taking a value, written
// with it attached ("-uroot"), or a long one with "=" ("--user=root").
bool attached_value(const WrapperSyntax& syntax, std::string_view option) {
  for (std::string_view name : syntax.with_value) {
    if (name.starts_with("--")) {
      if (option.size() > name.size() && option.starts_with(name) && option[name.size()] == '=')
        return true;
    } else if (option.size() > name.size() && option.starts_with(name)) {
      return true;
    }
  }
  return false;
}

// A cluster of single-letter flags ("-iv").
bool flag_cluster(const WrapperSyntax& syntax, std::string_view option) {
  if (option.size() < 2 || option[0] != '-' || option[1] == '-') return false;
  return std::all_of(option.begin() + 1, option.end(), [&](char c) {
    const char flag[] = {'-', c};
    return one_of(std::string_view(flag, 2), syntax.flags);
  });
}

class Parser {
 public:
  Parser(std::string_view text, int depth, std::vector<std::string> wrappers, ShellParse& out)
      : text_(text), depth_(depth), wrappers_(std::move(wrappers)), out_(out) {}

  void run() {
    parse_list('\0');
    if (!pending_.empty()) uncertain("a here-document without its body");
  }

 private:
  bool at_end() const { return pos_ >= text_.size(); }
  char peek(std::size_t ahead = 0) const {
    return pos_ + ahead < text_.size() ? text_[pos_ + ahead] : '\0';
  }
  void stop() { pos_ = text_.size(); }
  void uncertain(std::string why) {
    if (out_.uncertain.empty()) out_.uncertain = std::move(why);
  }

  // Commands until the end of the text, or until `close` (')') closes the
  // subshell or substitution this list is in.
  void parse_list(char close) {
    std::vector<Word> words;
    while (true) {
      if (at_end()) {
        finish(words);
        if (close != '\0') uncertain("a ( or $( without its )");
        return;
      }
      const char c = peek();
      if (is_blank(c)) {
        ++pos_;
      } else if (c == '\\' && peek(1) == '\n') {
        pos_ += 2;
      } else if (c == '#') {
        while (!at_end() && peek() != '\n')
          ++pos_;
      } else if (c == '\n') {
        finish(words);
        ++pos_;
        read_here_doc_bodies();
      } else if (c == ')') {
        finish(words);
        ++pos_;
        if (close == ')') return;
        uncertain("a ) without its (");
      } else if (c == ';') {
        finish(words);
        ++pos_;
        if (peek() == ';' || peek() == '&') uncertain("case ... ;; is not read");
      } else if (c == '&' && peek(1) == '>') {
        read_redirection();
      } else if (c == '&' || c == '|') {
        finish(words);
        ++pos_;
        if (peek() == '&' || peek() == '|') ++pos_;
      } else if (c == '(') {
        if (!words.empty()) {
          uncertain("a ( after a command's words (a function definition or an array) is not read");
        }
        finish(words);
        ++pos_;
        if (peek() == '(') uncertain("arithmetic (( )) is not read");
        descend();
      } else if ((c == '<' || c == '>') && peek(1) == '(') {
        uncertain("process substitution " + std::string(1, c) + "( ) is not read");
        pos_ += 2;
        descend();
      } else if (c == '<' || c == '>') {
        read_redirection();
      } else {
        Word word = read_word();
        const bool fd_number =
            !word.raw.empty() && std::all_of(word.raw.begin(), word.raw.end(), is_digit);
        const bool fd_name = word.raw.size() > 2 && word.raw.front() == '{' &&
                             word.raw.back() == '}' && !word.expands;
        if ((fd_number || fd_name) && (peek() == '<' || peek() == '>')) {
          read_redirection();  // "2>&1", "{fd}>file"
        } else {
          words.push_back(std::move(word));
        }
      }
    }
  }

  // A nested list up to its ')' (a subshell, $( )).
  void descend() {
    if (depth_ >= kMaxDepth) {
      uncertain("nested more than " + std::to_string(kMaxDepth) + " levels deep");
      stop();
      return;
    }
    ++depth_;
    parse_list(')');
    --depth_;
  }

  // Another command line: a backtick substitution's, or sh -c's string.
  void nested(std::string_view text, std::vector<std::string> wrappers) {
    if (depth_ >= kMaxDepth) {
      uncertain("nested more than " + std::to_string(kMaxDepth) + " levels deep");
      stop();
      return;
    }
    Parser(text, depth_ + 1, std::move(wrappers), out_).run();
  }

  Word read_word() {
    Word w;
    const std::size_t start = pos_;
    bool open_brace = false;
    while (!at_end() && !is_meta(peek())) {
      const char c = peek();
      if (c == '\\') {
        if (pos_ + 1 >= text_.size()) {
          uncertain("a backslash at the end of the command");
          ++pos_;
          break;
        }
        if (peek(1) != '\n') w.value += peek(1);
        w.quoted = true;
        pos_ += 2;
      } else if (c == '\'') {
        read_single_quoted(w);
      } else if (c == '"') {
        read_double_quoted(w);
      } else if (c == '`') {
        read_backtick(w);
      } else if (c == '$') {
        read_dollar(w);
      } else {
        if (c == '*' || c == '?' || c == '[') w.glob = true;
        if (c == '{') open_brace = true;
        w.value += c;
        ++pos_;
      }
    }
    w.raw = std::string(text_.substr(start, pos_ - start));
    w.brace = open_brace && w.raw != "{";
    return w;
  }

  void read_single_quoted(Word& w) {
    w.quoted = true;
    const std::size_t end = text_.find('\'', pos_ + 1);
    if (end == std::string_view::npos) {
      uncertain("a ' without its end");
      w.value += text_.substr(pos_ + 1);
      stop();
      return;
    }
    w.value += text_.substr(pos_ + 1, end - pos_ - 1);
    pos_ = end + 1;
  }

  void read_double_quoted(Word& w) {
    w.quoted = true;
    ++pos_;
    while (true) {
      if (at_end()) {
        uncertain("a \" without its end");
        return;
      }
      const char c = peek();
      if (c == '"') {
        ++pos_;
        return;
      }
      if (c == '\\') {
        const char next = peek(1);
        if (next == '$' || next == '`' || next == '"' || next == '\\') {
          w.value += next;
          pos_ += 2;
        } else if (next == '\n') {
          pos_ += 2;
        } else {
          w.value += c;
          ++pos_;
        }
      } else if (c == '$') {
        read_dollar(w);
      } else if (c == '`') {
        read_backtick(w);
      } else {
        w.value += c;
        ++pos_;
      }
    }
  }

  // From `pos_` to the bracket closing the `depth` open ones; whether a
  // command substitution is inside. False when it never closes.
  bool skip_to_close(char open, char close, int depth, bool& holds_command) {
    while (!at_end() && depth > 0) {
      const char c = peek();
      if (c == '\\') {
        pos_ += 2;
        continue;
      }
      if (c == open) ++depth;
      if (c == close) --depth;
      if (c == '`' || (c == '$' && peek(1) == '(')) holds_command = true;
      ++pos_;
    }
    if (pos_ > text_.size()) pos_ = text_.size();
    return depth == 0;
  }

  void read_dollar(Word& w) {
    const std::size_t start = pos_;
    const char next = peek(1);
    bool holds_command = false;
    if (next == '(' && peek(2) == '(') {
      w.expands = true;
      pos_ += 3;
      if (!skip_to_close('(', ')', 2, holds_command)) uncertain("a $(( without its ))");
      if (holds_command) uncertain("arithmetic $(( )) holding a command is not read");
    } else if (next == '(') {
      w.expands = true;
      pos_ += 2;
      descend();
    } else if (next == '{') {
      w.expands = true;
      pos_ += 2;
      if (!skip_to_close('{', '}', 1, holds_command)) uncertain("a ${ without its }");
      if (holds_command) uncertain("a parameter expansion holding a command is not read");
    } else if (next == '\'') {
      w.expands = true;  // $'\x63url': not a fixed word
      pos_ += 2;
      while (!at_end() && peek() != '\'')
        pos_ += peek() == '\\' ? 2u : 1u;
      if (at_end()) {
        uncertain("a $' without its end");
        stop();
      } else {
        ++pos_;
      }
    } else if (next == '"') {
      ++pos_;
      read_double_quoted(w);
      return;
    } else if (is_name_start(next)) {
      w.expands = true;
      ++pos_;
      while (is_name_char(peek()))
        ++pos_;
    } else if (next != '\0' && (is_digit(next) ||
                                std::string_view("@*#?$!-").find(next) != std::string_view::npos)) {
      w.expands = true;
      pos_ += 2;
    } else {
      w.value += '$';
      ++pos_;
      return;
    }
    w.value += text_.substr(start, pos_ - start);
  }

  void read_backtick(Word& w) {
    const std::size_t start = pos_;
    w.expands = true;
    ++pos_;
    std::string inner;
    bool closed = false;
    while (!at_end()) {
      const char c = peek();
      const char next = peek(1);
      if (c == '\\' && (next == '`' || next == '\\' || next == '$')) {
        inner += next;
        pos_ += 2;
      } else if (c == '`') {
        ++pos_;
        closed = true;
        break;
      } else {
        inner += c;
        ++pos_;
      }
    }
    if (!closed) uncertain("a ` without its end");
    w.value += text_.substr(start, pos_ - start);
    nested(inner, wrappers_);
  }

  // At < > or &>: the operator and its target word, which is not one of
  // the command's words. A here-document's body is read at the next newline.
  void read_redirection() {
    const std::size_t op_start = pos_;
    bool here_doc = false;
    bool strip_tabs = false;
    if (peek() == '&') {  // &> &>>
      pos_ += 2;
      if (peek() == '>') ++pos_;
    } else if (peek() == '<') {
      ++pos_;
      if (peek() == '<' && peek(1) == '<') {
        pos_ += 2;  // here-string <<<
      } else if (peek() == '<') {
        ++pos_;
        here_doc = true;
        if (peek() == '-') {
          strip_tabs = true;
          ++pos_;
        }
      } else if (peek() == '&' || peek() == '>') {
        ++pos_;
      }
    } else {
      ++pos_;
      if (peek() == '>' || peek() == '|' || peek() == '&') ++pos_;
    }
    while (is_blank(peek()))
      ++pos_;
    if (at_end() || is_meta(peek())) {
      uncertain("a redirection without its target");
      return;
    }
    const std::size_t target_start = pos_;
    Word target = read_word();
    if (here_doc) pending_.push_back({target.value, strip_tabs, target.quoted});
    // What the rules saved by approve --always must know (ShellParse).
    const std::string op(text_.substr(op_start, target_start - op_start));
    const bool duplicates =
        target.literal() && !target.value.empty() &&
        (target.value == "-" || std::all_of(target.value.begin(), target.value.end(), is_digit)) &&
        op.find('&') != std::string::npos;
    if (out_.file_redirection.empty() && !duplicates &&
        !(target.literal() && target.value == "/dev/null" && !here_doc &&
          op.find("<<") == std::string::npos)) {
      std::string shown = op;
      while (!shown.empty() && is_blank(shown.back()))
        shown.pop_back();
      out_.file_redirection = shown + " " + target.value;
    }
  }

  void read_here_doc_bodies() {
    for (const HereDoc& doc : pending_) {
      bool ended = false;
      while (!at_end()) {
        const std::size_t eol = text_.find('\n', pos_);
        std::string_view line =
            text_.substr(pos_, eol == std::string_view::npos ? eol : eol - pos_);
        pos_ = eol == std::string_view::npos ? text_.size() : eol + 1;
        const std::string_view body_line = line;
        if (doc.strip_tabs) {
          while (!line.empty() && line.front() == '\t')
            line.remove_prefix(1);
        }
        if (line == doc.delimiter) {
          ended = true;
          break;
        }
        if (!doc.quoted && (body_line.find("$(") != std::string_view::npos ||
                            body_line.find('`') != std::string_view::npos)) {
          uncertain("a here-document's body substitutes a command");
        }
      }
      if (!ended) uncertain("a here-document without its end line " + doc.delimiter);
    }
    pending_.clear();
  }

  // One simple command's words are complete.
  void finish(std::vector<Word>& words) {
    std::vector<Word> ws = std::move(words);
    words.clear();
    std::size_t i = 0;
    auto skip_assignments = [&] {
      while (i < ws.size() && is_assignment(ws[i].raw))
        ++i;
    };
    skip_assignments();
    if (i > 0 && i >= ws.size()) out_.assigns_variables = true;  // VAR=x alone
    // Reserved words, only where a command name would be.
    while (i < ws.size() && ws[i].literal() && !ws[i].quoted) {
      const std::string& word = ws[i].value;
      if (one_of(word, {"if", "then", "else", "elif", "while", "until", "do", "!", "{", "}", "fi",
                        "done"})) {
        ++i;
        skip_assignments();
      } else if (word == "time") {
        ++i;
        if (i < ws.size() && ws[i].value == "-p") ++i;
      } else if (word == "for" || word == "select") {
        return;  // a variable and its list; the body follows `do`
      } else if (one_of(word, {"case", "esac", "[[", "]]", "((", "function", "coproc"})) {
        uncertain(word + " is not read");
        return;
      } else {
        break;
      }
    }
    if (i >= ws.size()) return;
    SimpleCommand command;
    command.wrappers = wrappers_;
    command.sets_variables = std::any_of(ws.begin(), ws.begin() + static_cast<std::ptrdiff_t>(i),
                                         [](const Word& word) { return is_assignment(word.raw); });
    for (std::size_t j = i; j < ws.size(); ++j)
      command.written.push_back(ws[j].value);
    unwrap(ws, i, std::move(command));
  }

  // From the command name at ws[i]: through wrappers to what runs.
  void unwrap(const std::vector<Word>& ws, std::size_t i, SimpleCommand command) {
    for (int hops = 0; i < ws.size(); ++hops) {
      const Word& name = ws[i];
      if (hops > kMaxDepth) {
        command.uncertain = "wrappers nested more than " + std::to_string(kMaxDepth) + " deep";
        break;
      }
      if (!name.literal() && !(name.raw == "[" && !name.expands)) {
        command.uncertain = "the command name " + name.raw + " is not a fixed word";
        break;
      }
      const std::string_view base = base_name(name.value);
      if (base == "eval") {
        command.uncertain = "eval runs a string as a command";
        break;
      }
      if (is_shell(base)) {
        if (shell_string(ws, i, command)) return;
        if (!command.uncertain.empty()) break;
      }
      if (const WrapperSyntax* syntax = wrapper_named(base)) {
        const std::size_t wrapped = skip_wrapper_options(*syntax, ws, i + 1, command.uncertain);
        if (!command.uncertain.empty()) break;
        if (wrapped < ws.size()) {
          command.wrappers.emplace_back(base);
          i = wrapped;
          continue;
        }
      }
      for (std::size_t j = i; j < ws.size(); ++j) {
        command.words.push_back(ws[j].value);
        if (!ws[j].literal()) command.fixed_words = false;
      }
      break;
    }
    push(std::move(command));
  }

  // The index of the command a wrapper runs (ws.size() when it runs none);
  // `why` set for an option it does not know.
  static std::size_t skip_wrapper_options(const WrapperSyntax& syntax, const std::vector<Word>& ws,
                                          std::size_t j, std::string& why) {
    while (j < ws.size()) {
      const Word& word = ws[j];
      const std::string& v = word.value;
      if (syntax.assignments && is_assignment(word.raw)) {
        ++j;
        continue;
      }
      if (!word.literal()) break;
      if (v == "--") {
        ++j;
        break;
      }
      if (one_of(v, syntax.not_running)) return ws.size();
      if (one_of(v, syntax.flags) || flag_cluster(syntax, v) || attached_value(syntax, v)) {
        ++j;
        continue;
      }
      if (one_of(v, syntax.with_value)) {
        j += 2;
        continue;
      }
      if (v.size() < 2 || v[0] != '-') break;
      if (syntax.numeric_short && std::all_of(v.begin() + 1, v.end(), is_digit)) {
        ++j;
        continue;
      }
      why = "option " + v + " of " + std::string(syntax.name) + " is not known";
      return ws.size();
    }
    if (syntax.duration && j < ws.size()) ++j;
    return std::min(j, ws.size());
  }

  // sh -c "STRING": its string parsed as a command line, under the shell as
  // a wrapper. True when it was (nothing more to push); false for a shell
  // that runs a script or reads stdin, or with `command.uncertain` set.
  bool shell_string(const std::vector<Word>& ws, std::size_t i, SimpleCommand& command) {
    const std::string shell(base_name(ws[i].value));
    bool dash_c = false;
    std::size_t j = i + 1;
    while (j < ws.size() && ws[j].literal()) {
      const std::string& v = ws[j].value;
      if (v == "--" || v == "-") {
        ++j;
        break;
      }
      if (v.size() < 2 || (v[0] != '-' && v[0] != '+')) break;
      if (v == "--rcfile" || v == "--init-file" || v == "-o" || v == "+o" || v == "-O" ||
          v == "+O") {
        j += 2;
        continue;
      }
      if (v[1] != '-' && v.find('c', 1) != std::string::npos) dash_c = true;
      ++j;
    }
    if (!dash_c) return false;
    if (j >= ws.size()) {
      command.uncertain = shell + " -c without its command string";
      return false;
    }
    if (!ws[j].literal()) {
      command.uncertain = "the command string of " + shell + " -c is not a fixed word";
      return false;
    }
    std::vector<std::string> wrappers = command.wrappers;
    wrappers.push_back(shell);
    nested(ws[j].value, std::move(wrappers));
    return true;
  }

  void push(SimpleCommand command) {
    if (out_.commands.size() >= kMaxSimpleCommands) {
      uncertain("more than " + std::to_string(kMaxSimpleCommands) + " simple commands");
      stop();
      return;
    }
    if (!command.uncertain.empty()) uncertain(command.uncertain);
    out_.commands.push_back(std::move(command));
  }

  std::string_view text_;
  std::size_t pos_ = 0;
  int depth_;
  std::vector<std::string> wrappers_;  // of every command of this text (sh -c's)
  std::vector<HereDoc> pending_;       // here-documents whose bodies follow the next newline
  ShellParse& out_;
};

}  // namespace

std::string SimpleCommand::text() const {
  std::string out;
  for (const std::string& word : written)
    out += (out.empty() ? "" : " ") + word;
  return out;
}

ShellParse parse_shell_words(std::string_view line) {
  ShellParse out;
  Parser(line, 0, {}, out).run();
  return out;
}

}  // namespace loopr::policy
