// LooprctlFixture: a test that runs the real looprctl against a FakeDaemon
// (started on first use), with hermetic config and state folders in the
// test's own temporary tree.
#pragma once

#include <gtest/gtest.h>

#include <nlohmann/json.hpp>
#include <string>
#include <vector>

#include "tests/client/fake_daemon.hpp"
#include "tests/client/looprctl_run.hpp"
#include "tests/support/temp_tree.hpp"

namespace loopr::test {

class LooprctlFixture : public ::testing::Test {
 protected:
  // Config and state folders in the test's tree, for runs without ctl().
  CtlOptions hermetic() {
    CtlOptions options;
    options.config_dir = tree_.path("config");
    options.state_dir = tree_.path("state");
    return options;
  }

  // Runs looprctl --socket <fake> ARGS with hermetic config and state folders.
  CtlRun ctl(std::vector<std::string> args, CtlOptions options = {}) {
    start();
    args.insert(args.begin(), {"--socket", fake_.socket_path()});
    options.config_dir = tree_.path("config");
    options.state_dir = tree_.path("state");
    return run_looprctl(args, options);
  }

  void start() {
    if (!started_) {
      fake_.start();
      started_ = true;
    }
  }

  // Each command line is refused as a usage error (exit 2, a message on
  // stderr) before anything reaches the daemon.
  void expect_usage_errors(const std::vector<std::vector<std::string>>& command_lines) {
    for (const auto& args : command_lines) {
      const CtlRun run = ctl(args);
      std::string joined;
      for (const auto& arg : args)
        joined += arg + " ";
      EXPECT_EQ(run.exit_code, 2) << "looprctl " << joined << "\n" << run.err;
      EXPECT_FALSE(run.err.empty()) << joined;
    }
    EXPECT_TRUE(fake_.requests().empty());
  }

  // The params of the only request with `method`.
  nlohmann::json params_of(const std::string& method) {
    const auto requests = fake_.requests(method);
    EXPECT_EQ(requests.size(), 1u) << method;
    return requests.empty() ? nlohmann::json() : requests.front().params;
  }

  TempTree tree_;
  FakeDaemon fake_;
  bool started_ = false;
};

}  // namespace loopr::test
