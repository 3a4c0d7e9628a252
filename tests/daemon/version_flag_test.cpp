// `looprd --version` and `looprctl --version` (issue 14: the package's checks
// run them) print project(loopr VERSION), the version looprd reports in its
// initialize result.
#include <gtest/gtest.h>
#include <stdio.h>
#include <sys/wait.h>

#include <string>

#include "tests/daemon/daemon_harness.hpp"

namespace loopr::test {
namespace {

// The whole stdout of `command` and its exit status.
std::pair<std::string, int> run(const std::string& command) {
  FILE* pipe = ::popen(command.c_str(), "r");
  if (pipe == nullptr) return {"", -1};
  std::string out;
  char buffer[256];
  std::size_t n;
  while ((n = ::fread(buffer, 1, sizeof buffer, pipe)) > 0)
    out.append(buffer, n);
  return {out, ::pclose(pipe)};
}

TEST(VersionFlag, LooprdAndLooprctlPrintTheVersionLooprdReports) {
  DaemonHarness daemon;
  daemon.start();
  RawConnection raw(daemon.socket_path());
  raw.send(request_line(1, "initialize", {{"client", "test"}, {"version", 1}}));
  auto reply = raw.receive();
  ASSERT_TRUE(reply);
  const std::string version = (*reply)["result"]["daemon_version"].get<std::string>();
  ASSERT_FALSE(version.empty());

  for (const std::string binary : {"looprd", "looprctl"}) {
    const auto [out, status] = run(bin_path(binary) + " --version");
    EXPECT_EQ(status, 0) << binary;
    EXPECT_EQ(out, binary + " " + version + "\n");
  }
}

}  // namespace
}  // namespace loopr::test
