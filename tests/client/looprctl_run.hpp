// Runs the real looprctl binary (build/bin, $LOOPR_BIN_DIR) as a subprocess
// for CLI-level tests, hermetically: LOOPR_* and XDG_* variables of the test
// environment are removed, and LOOPR_CONFIG_DIR / LOOPR_STATE_DIR point into
// the caller's temporary folders.
#pragma once

#include <map>
#include <string>
#include <vector>

namespace loopr::test {

struct CtlRun {
  int exit_code = -1;  // 128 + signal when killed
  std::string out;
  std::string err;
};

struct CtlOptions {
  std::string binary;                      // empty: bin_path("looprctl")
  std::string stdin_text;                  // fed on stdin, then closed
  std::string cwd;                         // empty: the test's own
  std::string config_dir;                  // LOOPR_CONFIG_DIR; empty: unset
  std::string state_dir;                   // LOOPR_STATE_DIR; empty: unset
  std::map<std::string, std::string> env;  // more variables
};

CtlRun run_looprctl(const std::vector<std::string>& args, const CtlOptions& options = {});

}  // namespace loopr::test
