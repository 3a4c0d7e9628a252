// Per-repository settings (issue 25): how one repository is built, tested
// and validated, and what a new loop worktree of it needs. Two places set
// them, both read as strictly as loopr.toml (an unknown key is an error
// naming it):
//   - the user's own loopr.toml, one [[repositories]] entry per repository:
//       [[repositories]]
//       path = "~/src/app"
//       [repositories.commands]    build, test, validate, lint, lint_files
//       [repositories.worktrees]   include, setup
//   - the repository's own .loopr/loopr.toml, with only [commands] (the same
//     keys), [worktrees] include/setup, [validation] protected_paths (added
//     to the user's) and [[approval.rules]] whose decision is ask or deny
//     (policy/command_rules.hpp; an allow is refused). Anything
//     else — [sandbox], [lanes], [egress], the rest of [approval],
//     [providers], budgets... — is refused as not allowed there: a
//     repository can never loosen the user's policy. The file is honoured
//     only once the user trusts it (repos/).
// Each key is optional: one a repository leaves unset falls back (repos/
// resolve(): user config > trusted repository file > daemon-wide).
#pragma once

#include <cstddef>
#include <cstdint>
#include <iosfwd>
#include <optional>
#include <string>
#include <vector>

#include "config/environment.hpp"
#include "policy/command_rules.hpp"

namespace loopr::config {

// What one place sets for a repository; nullopt: not set there.
struct RepoSettings {
  std::optional<std::string> build;
  std::optional<std::string> test;
  std::optional<std::string> validate;
  std::optional<std::string> lint;
  std::optional<std::vector<std::string>> lint_files;
  std::optional<std::vector<std::string>> include;  // [worktrees] include
  std::optional<std::string> setup;                 // [worktrees] setup
  // [[approval.rules]] of a repository's file (ask and deny only); they add
  // to the user's rules, never replace them. Always empty in [[repositories]].
  std::vector<policy::CommandRule> rules;
  // [validation] protected_paths of a repository's file; they add to the
  // user's, never replace them. Always empty in [[repositories]].
  std::vector<std::string> protected_paths;

  bool empty() const;
};

// One [[repositories]] entry of the user's loopr.toml.
struct RepositoryEntry {
  std::string path;  // absolute, "~" expanded, lexically normal (not resolved)
  RepoSettings settings;
  std::string file;  // where it was written, for messages
  std::uint32_t line = 0;
};

// The keys a repository may set, as written in either place ("commands.test",
// "worktrees.include", ...), in a fixed order.
inline constexpr const char* kRepoSettingKeys[] = {
    "commands.build",      "commands.test",     "commands.validate", "commands.lint",
    "commands.lint_files", "worktrees.include", "worktrees.setup"};

// Most patterns [validation] protected_paths takes from one place.
inline constexpr std::size_t kMaxProtectedPatterns = 256;

// Most bytes of a repository's .loopr/loopr.toml loopr reads.
inline constexpr std::size_t kMaxRepoFileBytes = 64 * 1024;

// Parses a repository's .loopr/loopr.toml (its bytes, read safely by the
// caller; `name` is how errors name it). Throws loopr::ConfigError
// "NAME:LINE: KEY: what is wrong" for bad syntax, an unknown key, a wrong
// type, an include pattern that reaches outside the checkout, or a table or
// key a repository may not set.
RepoSettings parse_repository_file(std::istream& in, const std::string& name);

}  // namespace loopr::config
