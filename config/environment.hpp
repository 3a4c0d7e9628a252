// The process environment as a parameter, so that path resolution and settings
// loading are hermetic in tests.
#pragma once

#include <functional>
#include <map>
#include <optional>
#include <string>
#include <string_view>

namespace loopr::config {

// Returns the variable's value, or nullopt when it is not set.
using EnvLookup = std::function<std::optional<std::string>(std::string_view name)>;

// Reads the real environment (getenv) at each call.
EnvLookup process_env();
// A fixed environment; the map is copied into the lookup.
EnvLookup fixed_env(std::map<std::string, std::string> variables);

// `path` with a leading "~" or "~/" replaced by $HOME from `env`; other paths
// unchanged. nullopt when it starts with "~" and HOME is unset or empty.
std::optional<std::string> expand_home(std::string_view path, const EnvLookup& env);

}  // namespace loopr::config
