// Integration tests of what a careless client, a broken runner or a shutdown
// must not do to looprd's answers: each names the failure it guards against.
// They drive the real looprd (and, unless a fake runner is named, its real
// lane runners) over its control socket.
#include <gtest/gtest.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include <chrono>
#include <cstdlib>
#include <filesystem>
#include <set>
#include <string>
#include <thread>
#include <vector>

#include "tests/daemon/daemon_harness.hpp"

namespace loopr::test {
namespace {

using nlohmann::json;
using namespace std::chrono_literals;

std::string message_of(const json& result) {
  return result.contains("error") && result["error"].contains("message")
             ? result["error"]["message"].get<std::string>()
             : std::string();
}

class DaemonHardening : public ::testing::Test {
 protected:
  void SetUp() override { daemon_.start(); }
  DaemonHarness daemon_;
};

// Read-before-edit hands each edit the hash its session last saw. Without a
// per-file order, concurrent edits of one file would all be handed the same
// hash: all but one refused as stale, or one overwriting another unseen.
TEST_F(DaemonHardening, ConcurrentEditsOfOneFileAreAppliedOneAfterAnother) {
  constexpr int kEdits = 6;
  std::string text;
  for (int i = 0; i < kEdits; ++i)
    text += "line" + std::to_string(i) + "\n";
  daemon_.tree().write("work/repo/lines.txt", text);
  const std::string loop = "concurrent-loop";
  ASSERT_EQ(daemon_.tool("read_file", {{"path", "lines.txt"}}, loop)["ok"], true);

  std::vector<json> results(kEdits);
  {
    std::vector<std::jthread> editors;
    for (int i = 0; i < kEdits; ++i) {
      editors.emplace_back([&, i] {
        results[static_cast<std::size_t>(i)] =
            daemon_.tool("edit_file",
                         {{"path", "lines.txt"},
                          {"old_string", "line" + std::to_string(i) + "\n"},
                          {"new_string", "LINE" + std::to_string(i) + "\n"}},
                         loop);
      });
    }
  }
  for (const json& result : results)
    EXPECT_EQ(result["ok"], true) << result.dump();
  std::string expected;
  for (int i = 0; i < kEdits; ++i)
    expected += "LINE" + std::to_string(i) + "\n";
  EXPECT_EQ(daemon_.tree().read("work/repo/lines.txt"), expected);
}

// A file the session read and someone then removed: writing it again
// creates it (nothing can be lost), instead of a stale_read forever.
TEST_F(DaemonHardening, AFileReadThenRemovedCanBeWrittenAgain) {
  daemon_.tree().write("work/repo/gone.txt", "old\n");
  const std::string loop = "gone-loop";
  ASSERT_EQ(daemon_.tool("read_file", {{"path", "gone.txt"}}, loop)["ok"], true);
  std::filesystem::remove(daemon_.tree().path("work/repo/gone.txt"));
  auto written = daemon_.tool("write_file", {{"path", "gone.txt"}, {"content", "new\n"}}, loop);
  EXPECT_EQ(written["ok"], true) << written.dump();
  EXPECT_EQ(daemon_.tree().read("work/repo/gone.txt"), "new\n");
}

// A folder the session deleted recursively: its files are forgotten, so a
// file re-created there by someone else cannot be overwritten on an old read.
TEST_F(DaemonHardening, DeletingAFolderForgetsTheReadsOfItsFiles) {
  daemon_.tree().write("work/repo/dir/a.txt", "a\n");
  daemon_.tree().write("work/repo/dir2/b.txt", "b\n");
  const std::string loop = "folder-loop";
  ASSERT_EQ(daemon_.tool("read_file", {{"path", "dir/a.txt"}}, loop)["ok"], true);
  ASSERT_EQ(daemon_.tool("read_file", {{"path", "dir2/b.txt"}}, loop)["ok"], true);
  auto deleted = daemon_.tool("file_delete", {{"path", "dir"}, {"recursive", true}}, loop);
  ASSERT_EQ(deleted["ok"], true) << deleted.dump();
  daemon_.tree().write("work/repo/dir/a.txt", "someone else's\n");
  auto blind = daemon_.tool("write_file", {{"path", "dir/a.txt"}, {"content", "x"}}, loop);
  EXPECT_EQ(blind["error"]["code"], "not_read_first") << blind.dump();
  EXPECT_EQ(daemon_.tree().read("work/repo/dir/a.txt"), "someone else's\n");
  // dir2 shares a prefix with dir but was not deleted: its read still counts.
  auto kept = daemon_.tool("write_file", {{"path", "dir2/b.txt"}, {"content", "b2\n"}}, loop);
  EXPECT_EQ(kept["ok"], true) << kept.dump();
}

// An absolute path through the worktree as the client named it (here via a
// symlink to the repository) names the same file as the relative path.
TEST_F(DaemonHardening, AnAbsolutePathThroughASymlinkedWorktreeNamesTheSameFile) {
  daemon_.tree().write("work/repo/s.txt", "s\n");
  const std::string link = daemon_.tree().path("work/link");
  ASSERT_EQ(::symlink(daemon_.worktree().c_str(), link.c_str()), 0);
  json params = {{"tool", "read_file"}, {"args", {{"path", link + "/s.txt"}}}, {"worktree", link}};
  auto read = daemon_.call("tool.call", params);
  EXPECT_EQ(read["ok"], true) << read.dump();
  EXPECT_EQ(read["output"]["path"], "s.txt") << read.dump();
}

// A client that sends its requests and then shuts down its sending side
// (`nc -N`, a script's here-document) still gets every reply.
TEST_F(DaemonHardening, AHalfClosedClientGetsEveryReply) {
  daemon_.tree().write("work/repo/h.txt", "h\n");
  RawConnection raw(daemon_.socket_path());
  raw.send(request_line(1, "initialize", {{"client", "half"}, {"version", 1}}));
  raw.send(request_line(
      2, "tool.call",
      {{"tool", "read_file"}, {"args", {{"path", "h.txt"}}}, {"worktree", daemon_.worktree()}}));
  raw.send(request_line(3, "ping"));
  ASSERT_EQ(::shutdown(raw.fd(), SHUT_WR), 0);
  std::set<std::int64_t> answered;
  json read_reply;
  for (int i = 0; i < 3; ++i) {
    auto reply = raw.receive(30s);
    ASSERT_TRUE(reply) << "reply " << i << " never came";
    answered.insert((*reply)["id"].get<std::int64_t>());
    if ((*reply)["id"] == 2) read_reply = *reply;
  }
  EXPECT_EQ(answered, (std::set<std::int64_t>{1, 2, 3}));
  EXPECT_EQ(read_reply["result"]["ok"], true) << read_reply.dump();
  EXPECT_TRUE(raw.closed_by_peer(10s)) << "closed once everything was answered";
}

TEST_F(DaemonHardening, MadeUpToolNamesShareOneMetricsEntry) {
  for (int i = 0; i < 5; ++i) {
    auto result = daemon_.tool("no-such-tool-" + std::to_string(i), json::object());
    EXPECT_EQ(result["error"]["code"], "invalid_arguments") << result.dump();
  }
  auto metrics = daemon_.call("metrics.get");
  int unknown = -1;
  for (const auto& row : metrics["calls"]) {
    EXPECT_EQ(row["tool"].get<std::string>().find("no-such-tool"), std::string::npos) << row.dump();
    if (row["tool"] == "<unknown>") unknown = row["count"].get<int>();
  }
  EXPECT_EQ(unknown, 5) << metrics.dump();
}

TEST_F(DaemonHardening, ABatchOverTheCallLimitOrWithAHugeToolNameIsRefused) {
  json calls = json::array();
  for (int i = 0; i < 65; ++i)
    calls.push_back({{"tool", "read_file"}, {"args", {{"path", "x"}}}});
  auto client = daemon_.client();
  auto too_many = client.call("tool.batch", {{"calls", calls}, {"worktree", daemon_.worktree()}});
  ASSERT_FALSE(too_many);
  EXPECT_NE(too_many.error().message.find("at most 64"), std::string::npos)
      << too_many.error().message;
  auto long_name = client.call("tool.batch", {{"calls", {{{"tool", std::string(300, 'x')}}}},
                                              {"worktree", daemon_.worktree()}});
  ASSERT_FALSE(long_name);
  EXPECT_NE(long_name.error().message.find("1 to 256 bytes"), std::string::npos)
      << long_name.error().message;
  EXPECT_EQ(daemon_.call("ping")["pong"], true);
}

// ---- approvals, disconnects and shutdown ----------------------------------------

class DaemonHardeningAsking : public ::testing::Test {
 protected:
  DaemonHardeningAsking()
      : daemon_(DaemonOptions{"[approval.tools]\nrun_command = \"ask\"\n", {}, {}}) {}
  void SetUp() override { daemon_.start(); }
  DaemonHarness daemon_;
};

TEST_F(DaemonHardeningAsking, AnApprovalShowsLongArgumentsCut) {
  auto watcher = daemon_.client();
  ASSERT_TRUE(watcher.call("events.subscribe", {{"topics", {"approval.requested"}}}));
  const std::string command = "echo " + std::string(20000, 'x');
  std::jthread caller([&] { daemon_.tool("run_command", {{"command", command}}); });
  auto requested = watcher.next_event(30s);
  ASSERT_TRUE(requested && *requested);
  const std::string shown = (**requested).data["args"]["command"];
  EXPECT_LT(shown.size(), 4200u);
  EXPECT_NE(shown.find("20005 bytes in all"), std::string::npos) << shown.substr(4000);
  ASSERT_TRUE(watcher.call("approval.deny", {{"id", (**requested).data["id"]}}));
}

// A client that disconnects while its call waits for approval: the call is
// withdrawn (no one is left to read its result), and it never runs.
TEST_F(DaemonHardeningAsking, AClientThatGoesAwayHasItsCallsCancelled) {
  auto watcher = daemon_.client();
  ASSERT_TRUE(watcher.call("events.subscribe", {{"topics", {"approval"}}}));
  {
    RawConnection raw(daemon_.socket_path());
    raw.send(request_line(1, "initialize", {{"client", "leaver"}, {"version", 1}}));
    ASSERT_TRUE(raw.receive(30s));
    raw.send(request_line(2, "tool.call",
                          {{"tool", "run_command"},
                           {"args", {{"command", "touch left-marker"}}},
                           {"worktree", daemon_.worktree()}}));
    auto requested = watcher.next_event(30s);
    ASSERT_TRUE(requested && *requested);
    EXPECT_EQ((**requested).event, "approval.requested");
  }  // the connection closes here
  auto resolved = watcher.next_event(30s);
  ASSERT_TRUE(resolved && *resolved);
  EXPECT_EQ((**resolved).event, "approval.resolved");
  EXPECT_EQ((**resolved).data["approved"], false);
  EXPECT_NE((**resolved).data["reason"].get<std::string>().find("cancelled"), std::string::npos)
      << (**resolved).data.dump();
  EXPECT_EQ(watcher.call("approval.list").value()["approvals"].size(), 0u);
  EXPECT_FALSE(daemon_.tree().exists("work/repo/left-marker"));
}

// Shutdown withdraws a pending approval: the caller is told the call was
// cancelled by the shutdown, not that a user denied it.
TEST_F(DaemonHardeningAsking, ShutdownWithdrawsAPendingApprovalAsCancelled) {
  auto watcher = daemon_.client();
  ASSERT_TRUE(watcher.call("events.subscribe", {{"topics", {"approval.requested"}}}));
  json result;
  std::jthread caller([&] { result = daemon_.tool("run_command", {{"command", "true"}}); });
  auto requested = watcher.next_event(30s);
  ASSERT_TRUE(requested && *requested);
  ASSERT_TRUE(watcher.call("daemon.shutdown"));
  caller.join();
  EXPECT_EQ(result["status"], "cancelled") << result.dump();
  EXPECT_EQ(result["error"]["code"], "cancelled") << result.dump();
  EXPECT_NE(message_of(result).find("shutting down"), std::string::npos) << result.dump();
  EXPECT_EQ(daemon_.wait_exit(30s), 0);
}

// ---- the runner link ------------------------------------------------------------

// A runner that exits before its handshake (a missing library, a refused
// version): calls fail at once with its exit status and its last words, not
// after waiting out their timeout for a slot.
TEST(DaemonHardeningRunner, ARunnerThatCannotStartFailsCallsWithItsReason) {
  TempTree scripts;
  const std::string runner = fake_runner(
      scripts, "runner", "echo 'loopr-runner: cannot load libexample.so.9' >&2\nexit 127\n");
  DaemonHarness daemon(DaemonOptions{"", {}, {"--runner", runner}});
  daemon.start();
  json result;
  const auto deadline = std::chrono::steady_clock::now() + 30s;
  do {  // the first spawn may still be under way
    result = daemon.tool("read_file", {{"path", "x"}});
  } while (message_of(result).find("could not start") == std::string::npos &&
           std::chrono::steady_clock::now() < deadline);
  EXPECT_EQ(result["status"], "error") << result.dump();
  EXPECT_EQ(result["error"]["code"], "sandbox_setup") << result.dump();
  EXPECT_NE(message_of(result).find("status 127"), std::string::npos) << result.dump();
  EXPECT_NE(message_of(result).find("libexample.so.9"), std::string::npos) << result.dump();
  EXPECT_EQ(daemon.call("ping")["pong"], true);
}

// The runner's environment is an allowlist: a secret in looprd's own
// environment (an API key) never reaches it; HOME does (the runner hides it).
TEST(DaemonHardeningRunner, TheRunnerGetsOnlyAllowlistedEnvironment) {
  TempTree scripts;
  const std::string env_file = scripts.path("env.txt");
  const std::string runner =
      fake_runner(scripts, "runner", "env > " + env_file + ".$$\nexec sleep 60\n");
  ::setenv("LOOPR_TEST_SECRET_KEY", "hunter2", 1);
  DaemonHarness daemon(DaemonOptions{"", {}, {"--runner", runner}});
  daemon.start();
  ::unsetenv("LOOPR_TEST_SECRET_KEY");
  std::string seen;
  const auto deadline = std::chrono::steady_clock::now() + 30s;
  while (seen.empty() && std::chrono::steady_clock::now() < deadline) {
    for (const auto& entry : std::filesystem::directory_iterator(scripts.root())) {
      if (entry.path().filename().string().starts_with("env.txt.")) {
        seen = scripts.read(entry.path().filename().string());
      }
    }
    std::this_thread::sleep_for(20ms);  // waiting for the runner to start, bounded
  }
  ASSERT_FALSE(seen.empty()) << "no runner started";
  EXPECT_EQ(seen.find("hunter2"), std::string::npos) << seen;
  EXPECT_NE(seen.find("PATH="), std::string::npos) << seen;
  if (std::getenv("HOME") != nullptr) {
    EXPECT_NE(seen.find("HOME="), std::string::npos) << seen;
  }
}

// ---- the socket folder ------------------------------------------------------------

struct StartAttempt {
  int exit_code = -1;
  std::string output;
};

StartAttempt start_looprd_on(const DaemonHarness& daemon, const std::string& socket) {
  const std::string command = bin_path("looprd") + " --foreground --socket " + socket +
                              " --config-dir " + daemon.config_dir() + " --state-dir " +
                              daemon.state_dir() + " 2>&1";
  StartAttempt attempt;
  FILE* out = ::popen(command.c_str(), "r");
  if (out == nullptr) return attempt;
  char buffer[1024];
  while (std::fgets(buffer, sizeof buffer, out) != nullptr)
    attempt.output += buffer;
  attempt.exit_code = WEXITSTATUS(::pclose(out));
  return attempt;
}

// A socket folder other users can write is refused, and loopr does not chmod
// a folder it did not create.
TEST(DaemonHardeningFolders, ASocketFolderOthersCanWriteIsRefusedAndLeftAsItWas) {
  DaemonHarness daemon;
  const std::string shared = daemon.tree().path("shared");
  std::filesystem::create_directories(shared);
  ASSERT_EQ(::chmod(shared.c_str(), 0777), 0);
  const StartAttempt attempt = start_looprd_on(daemon, shared + "/looprd.sock");
  EXPECT_NE(attempt.exit_code, 0) << attempt.output;
  EXPECT_NE(attempt.output.find("writable by other users"), std::string::npos) << attempt.output;
  EXPECT_NE(attempt.output.find("chmod go-w"), std::string::npos) << attempt.output;
  struct stat st {};
  ASSERT_EQ(::stat(shared.c_str(), &st), 0);
  EXPECT_EQ(st.st_mode & 0777, 0777u) << "the user's folder was changed";
}

}  // namespace
}  // namespace loopr::test
