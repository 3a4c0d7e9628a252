#include "config/repository_settings.hpp"

#include <algorithm>
#include <filesystem>
#include <istream>
#include <string_view>

#include "common/error.hpp"
#include "common/glob_pattern.hpp"
#include "config/repository_reader.hpp"
#include "config/toml_reader.hpp"

namespace loopr::config {

namespace {

using detail::fail;
namespace fs = std::filesystem;

// The user's own tables of loopr.toml: a repository's file may set none of
// them (it could loosen the sandbox, the lanes, egress or approvals, or spend
// the user's money).
constexpr std::string_view kUserOnlyTables[] = {
    "daemon",    "sandbox", "lanes",   "web_fetch",    "egress",      "web_search", "loops",
    "providers", "llm",     "prices",  "budgets",      "loop_health", "scheduler",  "merges",
    "memory",    "oracle",  "context", "repositories", "hooks",       "rules",      "cluster"};

constexpr const char* kRepoFileAllows =
    "a repository's .loopr/loopr.toml may set only [commands] (build, test, validate, lint, "
    "lint_files), [worktrees] (include, setup), [validation] protected_paths (added to yours) "
    "and [[approval.rules]] that ask or deny";

// [commands] of either place; `prefix` is how keys are named in errors
// ("commands", "repositories[0].commands").
void read_commands(const toml::value& table, const std::string& prefix, RepoSettings& out) {
  detail::require_table(table, prefix);
  detail::refuse_unknown_keys(table, prefix, {"build", "test", "validate", "lint", "lint_files"});
  for (const auto& entry : detail::entries(table)) {
    const std::string key = prefix + "." + entry.key;
    if (entry.key == "lint_files") {
      out.lint_files = detail::read_string_list(*entry.value, key);
      continue;
    }
    std::string command = detail::read_string(*entry.value, key);
    if (entry.key == "build") out.build = std::move(command);
    if (entry.key == "test") out.test = std::move(command);
    if (entry.key == "validate") out.validate = std::move(command);
    if (entry.key == "lint") out.lint = std::move(command);
  }
}

// [worktrees] include/setup of either place. In a repository's file the
// other [worktrees] keys (folder, keep_finished_s, copy_limit_mb) are the
// user's.
void read_worktrees(const toml::value& table, const std::string& prefix, bool repository_file,
                    RepoSettings& out) {
  detail::require_table(table, prefix);
  for (const auto& entry : detail::entries(table)) {
    const std::string key = prefix + "." + entry.key;
    const toml::value& v = *entry.value;
    if (entry.key == "include") {
      std::vector<std::string> patterns = detail::read_string_list(v, key);
      for (std::size_t i = 0; i < patterns.size(); ++i) {
        detail::check_include_pattern(v.as_array()[i], key + "[" + std::to_string(i) + "]",
                                      patterns[i]);
      }
      out.include = std::move(patterns);
    } else if (entry.key == "setup") {
      out.setup = detail::read_string(v, key);
    } else if (repository_file && (entry.key == "folder" || entry.key == "keep_finished_s" ||
                                   entry.key == "copy_limit_mb")) {
      fail(v, key,
           "is not allowed in a repository's .loopr/loopr.toml: where worktrees go, how long "
           "they are kept and how much they may take is yours to set in your own loopr.toml; " +
               std::string(kRepoFileAllows));
    } else {
      fail(v, key, "unknown key; known keys are: include, setup");
    }
  }
}

}  // namespace

bool RepoSettings::empty() const {
  return !build && !test && !validate && !lint && !lint_files && !include && !setup &&
         rules.empty() && protected_paths.empty();
}

RepoSettings parse_repository_file(std::istream& in, const std::string& name) {
  const toml::value document = detail::parse_document(in, name);
  RepoSettings out;
  for (const auto& entry : detail::entries(document)) {
    const toml::value& v = *entry.value;
    if (entry.key == "commands") {
      read_commands(v, "commands", out);
    } else if (entry.key == "worktrees") {
      read_worktrees(v, "worktrees", true, out);
    } else if (entry.key == "validation") {
      detail::require_table(v, "validation");
      detail::refuse_unknown_keys(v, "validation", {"protected_paths"});
      for (const auto& field : detail::entries(v)) {
        out.protected_paths =
            detail::read_protected_paths(*field.value, "validation.protected_paths");
      }
    } else if (entry.key == "approval") {
      detail::require_table(v, "approval");
      for (const auto& field : detail::entries(v)) {
        if (field.key != "rules") {
          fail(v, "approval",
               "is not allowed in a repository's .loopr/loopr.toml (it sets approval." + field.key +
                   "): the approval policy is yours to set in your own loopr.toml, and a "
                   "repository can never loosen it; " +
                   kRepoFileAllows);
        }
        out.rules = detail::read_command_rules(*field.value, "approval.rules", true);
      }
    } else if (std::find(std::begin(kUserOnlyTables), std::end(kUserOnlyTables), entry.key) !=
               std::end(kUserOnlyTables)) {
      fail(v, entry.key,
           "is not allowed in a repository's .loopr/loopr.toml: [" + entry.key +
               "] is yours to set in your own loopr.toml, and a repository can never loosen the "
               "sandbox, lanes, egress or approval policy; " +
               kRepoFileAllows);
    } else {
      fail(v, entry.key, std::string("unknown key; ") + kRepoFileAllows);
    }
  }
  return out;
}

namespace detail {

// An include pattern names files of the checkout: relative, within it.
void check_include_pattern(const toml::value& at, const std::string& key,
                           const std::string& pattern) {
  if (pattern.empty()) fail(at, key, "must not be empty");
  if (pattern.find('\0') != std::string::npos) fail(at, key, "must not hold a NUL byte");
  if (pattern.front() == '/' || pattern.front() == '~') {
    fail(at, key,
         "\"" + pattern +
             "\" is not relative: include patterns name files of the repository's checkout, "
             "relative to its top (\"node_modules\", \"build/\", \".env\")");
  }
  for (const auto& part : fs::path(pattern)) {
    if (part == "..") {
      fail(at, key,
           "\"" + pattern + "\" reaches outside the checkout with \"..\"; name files inside it");
    }
    // "." (or "./x") would name the checkout itself, its .git included, and
    // dodge the tracked-file check, which compares git's "x" with "./x".
    if (part == ".") {
      fail(at, key,
           "\"" + pattern + "\" has a \".\" part; write the path without it (\"x\", not \"./x\")");
    }
    if (part == ".git") {
      fail(at, key, "\"" + pattern + "\" names git's own folder, which is never copied");
    }
  }
}

std::vector<std::string> read_protected_paths(const toml::value& v, const std::string& key) {
  std::vector<std::string> patterns = read_string_list(v, key);
  if (patterns.size() > kMaxProtectedPatterns) {
    fail(v, key,
         "has " + std::to_string(patterns.size()) + " patterns; at most " +
             std::to_string(kMaxProtectedPatterns) + " (protect a folder rather than its files)");
  }
  for (std::size_t i = 0; i < patterns.size(); ++i) {
    const toml::value& at = v.as_array()[i];
    const std::string at_key = key + "[" + std::to_string(i) + "]";
    check_include_pattern(at, at_key, patterns[i]);
    if (patterns[i].back() == '/') patterns[i].pop_back();  // a folder: "tests/" is "tests"
    if (patterns[i].empty() || patterns[i].back() == '/') {
      fail(at, at_key, "names no file; write the folder's name (\"tests\", \"tests/**\")");
    }
    auto compiled = GlobPattern::compile(patterns[i], /*alternation=*/true);
    if (!compiled) fail(at, at_key, compiled.error().message);
  }
  return patterns;
}

std::vector<policy::CommandRule> read_command_rules(const toml::value& v, const std::string& key,
                                                    bool repository_file) {
  if (!v.is_array()) {
    fail(v, key,
         "must be an array of tables, written [[approval.rules]] with command = [\"git\", "
         "\"push\"] and decision = \"ask\", got " +
             describe(v));
  }
  std::vector<policy::CommandRule> rules;
  const auto& items = v.as_array();
  for (std::size_t i = 0; i < items.size(); ++i) {
    const toml::value& table = items[i];
    const std::string prefix = key + "[" + std::to_string(i) + "]";
    require_table(table, prefix);
    refuse_unknown_keys(table, prefix,
                        {"command", "args_match", "args_not_match", "decision", "reason", "exact"});
    policy::CommandRule rule;
    rule.from_repository = repository_file;
    rule.file = table.location().file_name();
    rule.line = line_of(table);
    bool has_decision = false;
    for (const auto& field : entries(table)) {
      const std::string field_key = prefix + "." + field.key;
      const toml::value& value = *field.value;
      if (field.key == "command") {
        rule.command = read_string_list(value, field_key);
        if (rule.command.empty()) {
          fail(value, field_key,
               "must name the command as a list of words, e.g. [\"git\", \"push\"]; an empty "
               "list would match every command");
        }
        for (const std::string& word : rule.command) {
          if (word.empty()) fail(value, field_key, "must not hold an empty word");
        }
      } else if (field.key == "args_match" || field.key == "args_not_match") {
        auto regex = Regex::compile(read_string(value, field_key));
        if (!regex) {
          fail(value, field_key, "is not a valid regular expression: " + regex.error().message);
        }
        (field.key == "args_match" ? rule.args_match : rule.args_not_match) = std::move(*regex);
      } else if (field.key == "decision") {
        const std::string decision = read_choice(value, field_key, {"allow", "ask", "deny"});
        if (repository_file && decision == "allow") {
          fail(value, field_key,
               "\"allow\" is not allowed in a repository's .loopr/loopr.toml: a repository may "
               "add rules that ask or deny, never loosen your approval policy; write allow rules "
               "in your own loopr.toml");
        }
        rule.decision = decision == "allow" ? policy::Decision::allow
                        : decision == "ask" ? policy::Decision::ask
                                            : policy::Decision::deny;
        has_decision = true;
      } else if (field.key == "reason") {
        rule.reason = read_string(value, field_key);
      } else if (field.key == "exact") {
        rule.exact = read_bool(value, field_key);
      }
    }
    if (rule.exact && (rule.args_match || rule.args_not_match)) {
      fail(table, prefix,
           "exact = true matches the command's words exactly; it takes no args_match or "
           "args_not_match");
    }
    if (rule.command.empty()) {
      fail(table, prefix, "needs command, the command's first words, e.g. [\"git\", \"push\"]");
    }
    if (!has_decision) fail(table, prefix, "needs decision: \"allow\", \"ask\" or \"deny\"");
    rules.push_back(std::move(rule));
  }
  return rules;
}

std::vector<RepositoryEntry> read_repositories(const toml::value& v, const EnvLookup& env) {
  if (!v.is_array()) {
    fail(v, "repositories",
         "must be an array of tables, written [[repositories]] with path = \"/abs/dir\", got " +
             describe(v));
  }
  std::vector<RepositoryEntry> out;
  const auto& items = v.as_array();
  for (std::size_t i = 0; i < items.size(); ++i) {
    const toml::value& table = items[i];
    const std::string prefix = "repositories[" + std::to_string(i) + "]";
    require_table(table, prefix);
    refuse_unknown_keys(table, prefix, {"path", "commands", "worktrees"});
    RepositoryEntry entry;
    entry.file = table.location().file_name();
    entry.line = line_of(table);
    bool has_path = false;
    for (const auto& field : entries(table)) {
      const std::string key = prefix + "." + field.key;
      const toml::value& value = *field.value;
      if (field.key == "path") {
        const std::string text = read_string(value, key);
        std::string path = text;
        if (text == "~" || text.starts_with("~/")) {
          auto expanded = expand_home(text, env);
          if (!expanded)
            fail(value, key, "starts with ~ but HOME is not set; write an absolute path");
          path = *expanded;
        }
        if (path.empty() || !fs::path(path).is_absolute()) {
          fail(value, key,
               "must be the repository's folder, an absolute path or one starting with ~/, got "
               "\"" +
                   text + "\"");
        }
        path = fs::path(path).lexically_normal().string();
        if (path.size() > 1 && path.back() == '/') path.pop_back();
        for (const RepositoryEntry& earlier : out) {
          if (earlier.path == path) {
            fail(value, key,
                 "\"" + path + "\" has an entry already (line " + std::to_string(earlier.line) +
                     "); put its settings in one [[repositories]] entry");
          }
        }
        entry.path = std::move(path);
        has_path = true;
      } else if (field.key == "commands") {
        read_commands(value, key, entry.settings);
      } else if (field.key == "worktrees") {
        read_worktrees(value, key, false, entry.settings);
      }
    }
    if (!has_path) fail(table, prefix, "needs path, the repository's folder");
    out.push_back(std::move(entry));
  }
  return out;
}

}  // namespace detail

}  // namespace loopr::config
