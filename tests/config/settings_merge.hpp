// Test helper: a loopr.toml text merged over the defaults, as the settings
// tests read it, with an environment that has HOME=/home/ada and nothing else.
#pragma once

#include <sstream>
#include <string>
#include <string_view>

#include "config/environment.hpp"
#include "config/settings.hpp"
#include "tests/config/config_error.hpp"

namespace loopr::config::test {

inline const EnvLookup kAdaEnv = fixed_env({{"HOME", "/home/ada"}});

// Settings::defaults() with `text` merged as "loopr.toml".
inline Settings merged_settings(std::string_view text) {
  Settings s = Settings::defaults();
  std::istringstream in{std::string(text)};
  s.merge_toml(in, "loopr.toml", kAdaEnv);
  return s;
}

// The ConfigError merging `text` throws.
inline std::string settings_error(std::string_view text) {
  return config_error([&] { merged_settings(text); });
}

}  // namespace loopr::config::test
