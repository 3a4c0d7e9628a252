// Internal to config/: reading per-repository settings from toml11 values,
// for settings.cpp ([[repositories]] in loopr.toml) and
// repository_settings.cpp (a repository's .loopr/loopr.toml).
#pragma once

#include <string>
#include <toml.hpp>
#include <vector>

#include "config/environment.hpp"
#include "config/repository_settings.hpp"

namespace loopr::config::detail {

// One [worktrees] include pattern (at `key`): it must name files of the
// checkout, relative to its top — not empty, not absolute or "~", no ".."
// component, no NUL. Throws ConfigError naming the key otherwise.
void check_include_pattern(const toml::value& at, const std::string& key,
                           const std::string& pattern);

// The value of a `protected_paths` key (at `key`): at most
// kMaxProtectedPatterns patterns, each an include pattern (above) that
// compiles as a GlobPattern. Throws ConfigError naming the key otherwise.
std::vector<std::string> read_protected_paths(const toml::value& v, const std::string& key);

// The value of an `approval.rules` key (at `key`): an array of tables, each
// with command (a non-empty list of words), decision, and optional
// args_match, args_not_match (compiled here; PCRE2's message on a bad one)
// and reason. A repository's file (`repository_file`) may not allow.
std::vector<policy::CommandRule> read_command_rules(const toml::value& v, const std::string& key,
                                                    bool repository_file);

// The value of loopr.toml's `repositories` key: an array of tables, each
// with `path` and optional [commands] and [worktrees] tables.
std::vector<RepositoryEntry> read_repositories(const toml::value& v, const EnvLookup& env);

}  // namespace loopr::config::detail
