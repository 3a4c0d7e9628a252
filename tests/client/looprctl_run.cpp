#include "tests/client/looprctl_run.hpp"

#include <string_view>

#include "tests/support/spawn_and_drain.hpp"
#include "tests/support/temp_tree.hpp"

extern char** environ;

namespace loopr::test {
namespace {

bool starts_with(std::string_view text, std::string_view prefix) {
  return text.substr(0, prefix.size()) == prefix;
}

std::vector<std::string> hermetic_environment(const CtlOptions& options) {
  std::vector<std::string> env;
  for (char** entry = environ; *entry != nullptr; ++entry) {
    const std::string_view variable(*entry);
    if (starts_with(variable, "LOOPR_") && !starts_with(variable, "LOOPR_BIN_DIR=")) continue;
    if (starts_with(variable, "XDG_")) continue;
    env.emplace_back(variable);
  }
  if (!options.config_dir.empty()) env.push_back("LOOPR_CONFIG_DIR=" + options.config_dir);
  if (!options.state_dir.empty()) env.push_back("LOOPR_STATE_DIR=" + options.state_dir);
  for (const auto& [name, value] : options.env)
    env.push_back(name + "=" + value);
  return env;
}

}  // namespace

CtlRun run_looprctl(const std::vector<std::string>& args, const CtlOptions& options) {
  SpawnOptions spawn;
  spawn.stdin_text = options.stdin_text;
  spawn.cwd = options.cwd;
  spawn.environment = hermetic_environment(options);
  SpawnedRun spawned =
      spawn_and_drain(options.binary.empty() ? bin_path("looprctl") : options.binary, args, spawn);
  return CtlRun{spawned.exit_code, std::move(spawned.out), std::move(spawned.err)};
}

}  // namespace loopr::test
