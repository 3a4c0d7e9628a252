// loopr-tool's command tools on their own, outside any runner: run_command's
// stop-on-TERM with partial output, streaming to stderr, the sandbox notes,
// and build / test / validate, whose command the daemon injects.
#include <fcntl.h>
#include <gtest/gtest.h>
#include <signal.h>
#include <spawn.h>
#include <stdlib.h>
#include <sys/wait.h>
#include <unistd.h>

#include <chrono>
#include <map>
#include <optional>
#include <thread>

#include "tests/runner/process_scan.hpp"
#include "tests/support/temp_tree.hpp"

extern char** environ;

namespace loopr::test {
namespace {

using nlohmann::json;

// Sets environment variables for the loopr-tool runs of one test (the tests
// are single-threaded), restoring the previous values at the end.
class ScopedEnv {
 public:
  ScopedEnv(std::initializer_list<std::pair<std::string, std::string>> values) {
    for (const auto& [name, value] : values) {
      const char* old = std::getenv(name.c_str());
      saved_[name] = old ? std::optional<std::string>(old) : std::nullopt;
      ::setenv(name.c_str(), value.c_str(), 1);
    }
  }
  ScopedEnv(const ScopedEnv&) = delete;
  ScopedEnv& operator=(const ScopedEnv&) = delete;
  ~ScopedEnv() {
    for (const auto& [name, value] : saved_) {
      if (value) {
        ::setenv(name.c_str(), value->c_str(), 1);
      } else {
        ::unsetenv(name.c_str());
      }
    }
  }

 private:
  std::map<std::string, std::optional<std::string>> saved_;
};

TEST(CommandTools, ConfiguredCommandsRunAtTheWorktreeTopAndReportTheExitCode) {
  TempTree tree;
  tree.mkdir("src");
  for (const char* tool : {"build", "test", "validate"}) {
    const auto run = run_loopr_tool(tool, tree.root(), json{{"command", "pwd; ls; exit 4"}});
    ASSERT_EQ(run.exit_code, 0) << tool << ": " << run.stdout_text;
    EXPECT_EQ(run.output["exit_code"], 4) << tool;
    EXPECT_EQ(run.output["stdout"], tree.root() + "\nsrc\n") << tool;
    EXPECT_EQ(run.output["timed_out"], false) << tool;
    EXPECT_EQ(run.output["command"], "pwd; ls; exit 4") << tool;
  }
}

TEST(CommandTools, AConfiguredCommandThatIsMissingSaysWhereToConfigureIt) {
  TempTree tree;
  const auto run = run_loopr_tool("test", tree.root(), json::object());
  EXPECT_EQ(run.exit_code, 1);
  EXPECT_EQ(run.output["error"]["code"], "invalid_arguments");
  EXPECT_EQ(run.output["error"]["message"], "test: no test command is configured");
  EXPECT_NE(run.output["error"]["hint"].get<std::string>().find("[commands] test"),
            std::string::npos);
  const auto empty = run_loopr_tool("validate", tree.root(), json{{"command", ""}});
  EXPECT_EQ(empty.exit_code, 1);
  EXPECT_EQ(empty.output["error"]["message"], "validate: the configured validate command is empty");
}

TEST(CommandTools, ConfiguredCommandsTakeNothingButTheCommand) {
  TempTree tree;
  tree.mkdir("sub");
  for (const json& args :
       {json{{"command", "true"}, {"cwd", "sub"}}, json{{"command", "true"}, {"timeout_ms", 5}}}) {
    const auto run = run_loopr_tool("build", tree.root(), args);
    EXPECT_EQ(run.exit_code, 1) << args.dump();
    EXPECT_EQ(run.output["error"]["code"], "invalid_arguments") << args.dump();
  }
}

TEST(CommandTools, StreamingCopiesTheCommandsOutputToStderr) {
  TempTree tree;
  const json args = {{"command", "echo out; echo err >&2"}};
  {
    ScopedEnv env({{"LOOPR_STREAM_OUTPUT", "1"}});
    const auto streamed = run_loopr_tool("build", tree.root(), args);
    EXPECT_NE(streamed.stderr_text.find("out\n"), std::string::npos) << streamed.stderr_text;
    EXPECT_NE(streamed.stderr_text.find("err\n"), std::string::npos) << streamed.stderr_text;
    EXPECT_EQ(streamed.output["stdout"], "out\n");
  }
  const auto quiet = run_loopr_tool("build", tree.root(), args);
  EXPECT_EQ(quiet.stderr_text, "");
  EXPECT_EQ(quiet.output["stderr"], "err\n");
}

TEST(CommandTools, ANetworkFailureInALaneWithoutNetworkGetsANote) {
  TempTree tree;
  const json args = {
      {"command", "echo 'curl: (6) Could not resolve host: example.org' >&2; exit 6"}};
  {
    ScopedEnv env({{"LOOPR_LANE", "heavy"}, {"LOOPR_NETWORK", "off"}});
    const auto run = run_loopr_tool("run_command", tree.root(), args);
    EXPECT_EQ(run.output["sandbox_note"],
              "network is off in lane heavy; use run_command (lane net) for network access");
  }
  {
    ScopedEnv env({{"LOOPR_LANE", "net"}, {"LOOPR_NETWORK", "on"}});
    const auto run = run_loopr_tool("run_command", tree.root(), args);
    EXPECT_FALSE(run.output.contains("sandbox_note")) << run.stdout_text;
  }
}

TEST(CommandTools, AReadOnlyRefusalInALaneGetsANote) {
  TempTree tree;
  ScopedEnv env({{"LOOPR_LANE", "no-net"}, {"LOOPR_NETWORK", "off"}});
  const auto run = run_loopr_tool(
      "run_command", tree.root(),
      json{{"command", "echo 'sh: 1: cannot create /etc/x: Read-only file system' >&2; exit 2"}});
  ASSERT_TRUE(run.output.contains("sandbox_note")) << run.stdout_text;
  EXPECT_NE(run.output["sandbox_note"].get<std::string>().find("write inside the worktree or /tmp"),
            std::string::npos);
}

std::size_t line_size(const json& value) {
  return value.dump(-1, ' ', false, json::error_handler_t::replace).size() + 1;
}

TEST(CommandTools, OutputInterleavesStdoutAndStderrInTheOrderTheyCame) {
  TempTree tree;
  // Each line is read before the next is printed, so the order is certain.
  const std::string printer = bin_path("loopr-interleaved-printer");
  for (const char* tool : {"run_command", "run_command_isolated", "build", "test", "validate"}) {
    const auto run = run_loopr_tool(tool, tree.root(), json{{"command", printer + " 4"}});
    ASSERT_EQ(run.exit_code, 0) << tool << ": " << run.stdout_text;
    EXPECT_EQ(run.output["exit_code"], 0) << tool << ": " << run.stdout_text;
    EXPECT_EQ(run.output["output"], "out 1\nerr 1\nout 2\nerr 2\nout 3\nerr 3\nout 4\nerr 4\n")
        << tool;
    EXPECT_EQ(run.output["stdout"], "out 1\nout 2\nout 3\nout 4\n") << tool;
    EXPECT_EQ(run.output["stderr"], "err 1\nerr 2\nerr 3\nerr 4\n") << tool;
    EXPECT_EQ(run.output["output_bytes"], 48) << tool;
    EXPECT_EQ(run.output["truncated"], false) << tool;
  }
}

TEST(CommandTools, FiveMegabytesKeepHeadAndTailWithinTheCap) {
  TempTree tree;
  ScopedEnv env({{"LOOPR_MAX_OUTPUT_BYTES", "100000"}});
  // 6 + 250,000 x 20 + 4 bytes.
  const auto run = run_loopr_tool(
      "run_command", tree.root(),
      json{{"command", "echo START; yes abcdefghijklmnopqrs | head -n 250000; echo END >&2"}});
  ASSERT_EQ(run.exit_code, 0) << run.stdout_text.substr(0, 300);
  EXPECT_LE(run.stdout_text.size(), 100000u);
  const json& out = run.output;
  EXPECT_EQ(out["output_bytes"], 5'000'010);
  EXPECT_EQ(out["truncated"], true);
  const std::string output = out["output"];
  EXPECT_EQ(output.rfind("START\nabcdefghijklmnopqrs\n", 0), 0u) << output.substr(0, 100);
  EXPECT_EQ(output.substr(output.size() - 24), "abcdefghijklmnopqrs\nEND\n");
  // Cut at whole lines, one marker line saying how much is not shown.
  const std::size_t marker = output.find("\n[... ");
  ASSERT_NE(marker, std::string::npos);
  const std::size_t marker_end = output.find(" in all) ...]\n", marker);
  ASSERT_NE(marker_end, std::string::npos);
  const std::string head = output.substr(0, marker + 1);
  const std::string tail = output.substr(output.find('\n', marker_end) + 1);
  EXPECT_EQ(output.substr(marker + 1, output.find('\n', marker + 1) - marker - 1),
            "[... " + std::to_string(5'000'010 - head.size() - tail.size()) +
                " bytes cut (5000010 in all) ...]");
  EXPECT_EQ(tail.rfind("abcdefghijklmnopqrs\n", 0), 0u) << tail.substr(0, 40);
  // The budget: half of it to output, the rest to stdout (stderr needs 4).
  EXPECT_GT(head.size() + tail.size(), 40'000u);
  const std::string stdout_text = out["stdout"];
  EXPECT_GT(stdout_text.size(), 40'000u);
  EXPECT_EQ(stdout_text.rfind("START\n", 0), 0u);
  EXPECT_NE(stdout_text.find("bytes cut (5000006 in all)"), std::string::npos);
  EXPECT_EQ(out["stderr"], "END\n");
}

TEST(CommandTools, TheWholeResultFitsTheCapWhateverThePrintedBytes) {
  TempTree tree;
  ScopedEnv env({{"LOOPR_MAX_OUTPUT_BYTES", "60000"}});
  // Both streams large; control characters that JSON writes as 6 bytes;
  // bytes that are not UTF-8 (U+FFFD and a base64 copy); characters of two
  // bytes cut anywhere.
  for (const char* command :
       {"yes o | head -c 1000000; yes e | head -c 1000000 >&2",
        "head -c 1000000 /dev/zero | tr '\\0' '\\1'", "head -c 1000000 /dev/urandom",
        "yes 'é' | tr -d '\\n' | head -c 1000000"}) {
    SCOPED_TRACE(command);
    const auto run = run_loopr_tool("run_command", tree.root(), json{{"command", command}});
    ASSERT_EQ(run.exit_code, 0) << run.stdout_text.substr(0, 300);
    EXPECT_LE(run.stdout_text.size(), 60000u);
    EXPECT_EQ(line_size(run.output), run.stdout_text.size());
    EXPECT_EQ(run.output["truncated"], true);
    EXPECT_NE(run.output["output"].get<std::string>().find(" bytes cut ("), std::string::npos);
    // The budget is lowered only as far as needed: most of the cap is used
    // (random bytes vary in what their JSON costs — U+FFFD for each byte that
    // is not UTF-8, a base64 copy, the named limit — so 80 %, not more).
    EXPECT_GT(run.stdout_text.size(), 48000u);
  }
  // Two-byte characters cut on their boundaries: valid UTF-8, no U+FFFD.
  const auto accents = run_loopr_tool("run_command", tree.root(),
                                      json{{"command", "yes 'é' | tr -d '\\n' | head -c 1000000"}});
  EXPECT_EQ(accents.stdout_text.find("\xEF\xBF\xBD"), std::string::npos);
  EXPECT_FALSE(accents.output.contains("stdout_base64")) << accents.stdout_text.substr(0, 200);
  // Both streams large: a quarter each, half to the merged output (of what
  // is left once each "\n" is written as two bytes).
  const auto both =
      run_loopr_tool("run_command", tree.root(),
                     json{{"command", "yes o | head -c 1000000; yes e | head -c 1000000 >&2"}});
  const std::size_t out_size = both.output["stdout"].get<std::string>().size();
  const std::size_t err_size = both.output["stderr"].get<std::string>().size();
  const std::size_t merged_size = both.output["output"].get<std::string>().size();
  EXPECT_NEAR(static_cast<double>(out_size), static_cast<double>(err_size), 100.0);
  EXPECT_NEAR(static_cast<double>(merged_size), 2.0 * static_cast<double>(out_size), 200.0);
  EXPECT_GT(out_size, 9000u);
  EXPECT_EQ(both.output["output_bytes"], 2'000'000);
  const std::string merged = both.output["output"];
  EXPECT_EQ(merged.rfind("o\no\n", 0), 0u);
  EXPECT_EQ(merged.substr(merged.size() - 4), "e\ne\n");
}

TEST(CommandTools, TermStopsTheCommandAndStillPrintsTheOutputSoFar) {
  TempTree tree;
  // `ready` appears once "started" is in loopr-tool's pipe (the marker alone
  // would match the shell's own command line before it echoed anything).
  tree.write("args.json",
             json{{"command", "echo started; touch ready; exec sleep 1000.9191"}}.dump());
  int out_pipe[2];
  ASSERT_EQ(::pipe2(out_pipe, O_CLOEXEC), 0);
  posix_spawn_file_actions_t actions;
  posix_spawn_file_actions_init(&actions);
  posix_spawn_file_actions_addopen(&actions, 0, tree.path("args.json").c_str(), O_RDONLY, 0);
  posix_spawn_file_actions_adddup2(&actions, out_pipe[1], 1);
  const std::string binary = bin_path("loopr-tool");
  std::string tool = "run_command";
  std::string flag = "--worktree";
  std::string worktree = tree.root();
  char* argv[] = {const_cast<char*>(binary.c_str()), tool.data(), flag.data(), worktree.data(),
                  nullptr};
  pid_t pid = -1;
  ASSERT_EQ(::posix_spawn(&pid, binary.c_str(), &actions, nullptr, argv, environ), 0);
  posix_spawn_file_actions_destroy(&actions);
  ::close(out_pipe[1]);
  const auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(20);
  while (!tree.exists("ready") && std::chrono::steady_clock::now() < deadline) {
    std::this_thread::sleep_for(std::chrono::milliseconds(10));
  }
  ASSERT_TRUE(tree.exists("ready")) << "the command never started";
  ::kill(pid, SIGTERM);
  std::string output;
  char buffer[4096];
  ssize_t n;
  while ((n = ::read(out_pipe[0], buffer, sizeof buffer)) > 0)
    output.append(buffer, static_cast<std::size_t>(n));
  ::close(out_pipe[0]);
  int status = 0;
  ::waitpid(pid, &status, 0);
  ASSERT_TRUE(WIFEXITED(status));
  EXPECT_EQ(WEXITSTATUS(status), 0);
  const auto result = json::parse(output, nullptr, false);
  ASSERT_FALSE(result.is_discarded()) << output;
  EXPECT_EQ(result["stdout"], "started\n");
  EXPECT_EQ(result["interrupted"], true);
  EXPECT_EQ(result["timed_out"], false);
  EXPECT_TRUE(processes_with("sleep 1000.9191").empty());
}

}  // namespace
}  // namespace loopr::test
