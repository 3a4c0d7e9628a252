// Internal to config/: reading per-repository settings from toml11 values,
// for settings.cpp ([[repositories]] in loopr.toml) and
// repository_settings.cpp (a repository's .loopr/loopr.toml).
#pragma once

#include <toml.hpp>
#include <vector>

#include "config/environment.hpp"
#include "config/repository_settings.hpp"

namespace loopr::config::detail {

// The value of loopr.toml's `repositories` key: an array of tables, each
// with `path` and optional [commands] and [worktrees] tables.
std::vector<RepositoryEntry> read_repositories(const toml::value& v, const EnvLookup& env);

}  // namespace loopr::config::detail
