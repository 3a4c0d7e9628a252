// The real looprctl binary against a FakeDaemon: exit statuses, what it
// sends, what it prints.
#include <gtest/gtest.h>

#include <sstream>

#include "proto/control_messages.hpp"
#include "tests/client/fake_daemon.hpp"
#include "tests/client/looprctl_fixture.hpp"
#include "tests/client/looprctl_run.hpp"
#include "tests/support/temp_tree.hpp"
#include "tests/support/text_checks.hpp"

namespace loopr::test {
namespace {

using nlohmann::json;

std::vector<std::string> lines_of(const std::string& text) {
  std::vector<std::string> lines;
  std::istringstream in(text);
  for (std::string line; std::getline(in, line);)
    lines.push_back(line);
  return lines;
}

json tool_result(json output, bool ok = true) {
  return {{"call_id", "c-1"},
          {"tool", "read_file"},
          {"lane", "no-net"},
          {"status", ok ? "success" : "failed"},
          {"ok", ok},
          {"output", std::move(output)},
          {"exit_code", ok ? 0 : 1},
          {"duration_ms", 2},
          {"truncated", false}};
}

CtlOptions in_folder(const std::string& cwd) {
  CtlOptions options;
  options.cwd = cwd;
  return options;
}

CtlOptions with_stdin(const std::string& text) {
  CtlOptions options;
  options.stdin_text = text;
  return options;
}

// hermetic() here uses folders of its own, apart from the ones ctl() uses.
class LooprctlTest : public LooprctlFixture {
 protected:
  CtlOptions hermetic() {
    CtlOptions options;
    options.config_dir = tree_.path("c");
    options.state_dir = tree_.path("s");
    return options;
  }
};

// ---- exit statuses ----

TEST_F(LooprctlTest, EveryConnectionSendsInitializeFirst) {
  fake_.answer("tool.list", {{"tools", json::array()}});
  const CtlRun run = ctl({"tools"});
  ASSERT_EQ(run.exit_code, 0) << run.err;
  const auto connections = fake_.connections();
  ASSERT_EQ(connections.size(), 1u);
  ASSERT_EQ(connections[0].size(), 2u);
  EXPECT_EQ(connections[0][0].method, "initialize");
  EXPECT_EQ(connections[0][0].params,
            (json{{"client", "looprctl"}, {"version", proto::kProtocolVersion}}));
  EXPECT_EQ(connections[0][1].method, "tool.list");
}

TEST_F(LooprctlTest, UsageMistakesExitTwoAndSendNothing) {
  expect_usage_errors(std::vector<std::vector<std::string>>{std::vector<std::string>{},
                                                            {"frobnicate"},
                                                            {"tools", "--no-such-flag"},
                                                            {"call"},
                                                            {"call", "read_file", "[1, 2]"},
                                                            {"call", "read_file", "{not json"},
                                                            {"deny"},
                                                            {"events", "--count", "0"},
                                                            {"daemon"}});
}

TEST_F(LooprctlTest, HelpExitsZero) {
  const CtlRun run = ctl({"call", "--help"});
  EXPECT_EQ(run.exit_code, 0);
  EXPECT_TRUE(contains(run.out, "--worktree")) << run.out;
}

TEST_F(LooprctlTest, UnreachableDaemonExitsThreeNamingTheSocketAndHowToStartIt) {
  const std::string socket = tree_.path("nobody.sock");
  const CtlRun run = run_looprctl({"--socket", socket, "tools"}, hermetic());
  EXPECT_EQ(run.exit_code, 3);
  EXPECT_TRUE(contains(run.err, socket)) << run.err;
  EXPECT_TRUE(contains(run.err, "hint: start it with: looprctl daemon start")) << run.err;
}

TEST_F(LooprctlTest, TheSocketComesFromLooprSocketWithoutTheFlag) {
  fake_.answer("tool.list", {{"tools", json::array()}});
  fake_.start();
  started_ = true;
  const CtlRun run = run_looprctl({"tools"}, [&] {
    CtlOptions options = hermetic();
    options.env["LOOPR_SOCKET"] = fake_.socket_path();
    return options;
  }());
  EXPECT_EQ(run.exit_code, 0) << run.err;
  EXPECT_EQ(fake_.requests("tool.list").size(), 1u);
}

TEST_F(LooprctlTest, VersionMismatchErrorExitsFourNamingBothVersions) {
  fake_.on("initialize", [](const proto::Request& request) {
    return FakeReply::error(request, 1004, "unsupported protocol version 1; this looprd speaks 2",
                            {{"protocol", 2}});
  });
  const CtlRun run = ctl({"tools"});
  EXPECT_EQ(run.exit_code, 4);
  EXPECT_TRUE(contains(run.err, "looprctl speaks control protocol version 1")) << run.err;
  EXPECT_TRUE(contains(run.err, "looprd speaks version 2")) << run.err;
  EXPECT_TRUE(fake_.requests("tool.list").empty());
}

TEST_F(LooprctlTest, AnotherProtocolInTheInitializeResultExitsFour) {
  fake_.answer("initialize",
               {{"protocol", 3}, {"daemon_version", "0.9"}, {"capabilities", json::object()}});
  const CtlRun run = ctl({"metrics"});
  EXPECT_EQ(run.exit_code, 4);
  EXPECT_TRUE(contains(run.err, "version 1")) << run.err;
  EXPECT_TRUE(contains(run.err, "version 3")) << run.err;
}

TEST_F(LooprctlTest, MalformedRepliesExitFourWithProtocolError) {
  fake_.answer("tool.list", {{"tools", 5}});
  fake_.on("approval.list", [](const proto::Request&) { return FakeReply::raw("<html>\n"); });
  fake_.answer("metrics.get", json::array({1, 2}));
  fake_.answer("tool.call", {{"status", "success"}});  // no "ok"
  for (const std::vector<std::string>& args : {std::vector<std::string>{"tools"},
                                               {"approvals"},
                                               {"metrics"},
                                               {"--json", "metrics"},
                                               {"call", "read_file"}}) {
    const CtlRun run = ctl(args);
    EXPECT_EQ(run.exit_code, 4) << args.back() << "\n" << run.err;
    EXPECT_TRUE(contains(run.err, "protocol error: ")) << run.err;
  }
}

TEST_F(LooprctlTest, RefusedRequestExitsOneWithTheDaemonsHint) {
  fake_.on("approval.approve", [](const proto::Request& request) {
    return FakeReply::error(
        request, 1001, "no approval 'a-9' is waiting",
        {{"code", "not_found"}, {"hint", "list them with: looprctl approvals"}});
  });
  const CtlRun run = ctl({"approve", "a-9"});
  EXPECT_EQ(run.exit_code, 1);
  EXPECT_TRUE(contains(run.err, "no approval 'a-9' is waiting")) << run.err;
  EXPECT_TRUE(contains(run.err, "hint: list them with: looprctl approvals")) << run.err;
}

TEST_F(LooprctlTest, GlobalFlagsMayFollowTheCommand) {
  fake_.answer("tool.list", {{"tools", json::array()}});
  fake_.start();
  started_ = true;
  const CtlRun run = run_looprctl({"tools", "--json", "--socket", fake_.socket_path()}, hermetic());
  ASSERT_EQ(run.exit_code, 0) << run.err;
  EXPECT_EQ(json::parse(run.out), (json{{"tools", json::array()}}));
}

// ---- call ----

TEST_F(LooprctlTest, CallSendsTheJsonArgumentWorktreeTimeoutAndLoop) {
  fake_.answer("tool.call", tool_result({{"content", "x\n"}}));
  tree_.mkdir("repo/sub");
  const CtlRun run = ctl({"call", "read_file", R"({"path": "a.txt", "limit": 5})", "--worktree",
                          "sub", "--timeout-ms", "5000", "--loop-id", "L1"},
                         in_folder(tree_.path("repo")));
  ASSERT_EQ(run.exit_code, 0) << run.err;
  EXPECT_EQ(params_of("tool.call"), (json{{"tool", "read_file"},
                                          {"args", {{"path", "a.txt"}, {"limit", 5}}},
                                          {"worktree", tree_.path("repo/sub")},
                                          {"timeout_ms", 5000},
                                          {"loop_id", "L1"}}));
}

TEST_F(LooprctlTest, CallReadsArgumentsFromStdinWithDash) {
  fake_.answer("tool.call", tool_result({{"content", ""}}));
  const CtlRun run = ctl({"call", "grep", "-"}, with_stdin(R"({"pattern": "TODO"})"));
  ASSERT_EQ(run.exit_code, 0) << run.err;
  EXPECT_EQ(params_of("tool.call")["args"], (json{{"pattern", "TODO"}}));
}

TEST_F(LooprctlTest, CallDefaultsToNoArgumentsInTheCurrentFolder) {
  fake_.answer("tool.call", tool_result({{"entries", json::array()}}));
  const CtlRun run = ctl({"call", "list_directory"}, in_folder(tree_.root()));
  ASSERT_EQ(run.exit_code, 0) << run.err;
  const json params = params_of("tool.call");
  EXPECT_EQ(params["args"], json::object());
  EXPECT_EQ(params["worktree"], tree_.root());
  EXPECT_FALSE(params.contains("timeout_ms"));
  EXPECT_FALSE(params.contains("loop_id"));
}

TEST_F(LooprctlTest, CallPrintsAFilesContentAsItIs) {
  fake_.answer("tool.call",
               tool_result({{"content", "     1|hello\n     2|world\n"}, {"more", false}}));
  const CtlRun run = ctl({"call", "read_file", R"({"path": "a.txt"})"});
  ASSERT_EQ(run.exit_code, 0) << run.err;
  EXPECT_EQ(run.out, "     1|hello\n     2|world\n");
}

TEST_F(LooprctlTest, CallPrintsACommandsStreamsAndExitCode) {
  json result = tool_result({{"command", "make"},
                             {"exit_code", 3},
                             {"stdout", "built\n"},
                             {"stderr", "warning: x\n"},
                             {"timed_out", false},
                             {"truncated", false}});
  result["tool"] = "run_command";
  fake_.answer("tool.call", result);
  const CtlRun run = ctl({"call", "run_command", R"({"command": "make"})"});
  EXPECT_EQ(run.exit_code, 0) << "the tool ran; the command's status is in the output\n" << run.err;
  EXPECT_EQ(run.out, "built\n");
  EXPECT_TRUE(contains(run.err, "warning: x\n")) << run.err;
  EXPECT_TRUE(contains(run.err, "exit code: 3")) << run.err;
}

TEST_F(LooprctlTest, CallPrintsOtherOutputAsJson) {
  const json output = {{"entries", json::array({{{"path", "a"}, {"size", 1}}})}};
  fake_.answer("tool.call", tool_result(output));
  const CtlRun run = ctl({"call", "list_directory"});
  ASSERT_EQ(run.exit_code, 0) << run.err;
  EXPECT_EQ(json::parse(run.out), output);
}

TEST_F(LooprctlTest, CallWithJsonPrintsTheWholeResult) {
  const json result = tool_result({{"content", "x\n"}});
  fake_.answer("tool.call", result);
  const CtlRun run = ctl({"--json", "call", "read_file", R"({"path": "a"})"});
  ASSERT_EQ(run.exit_code, 0) << run.err;
  EXPECT_EQ(json::parse(run.out), result);
}

TEST_F(LooprctlTest, ToolErrorExitsOneWithCodeMessageAndHintOnStderr) {
  json result = tool_result(nullptr, false);
  result["error"] = {{"code", "not_found"},
                     {"message", "a.txt does not exist"},
                     {"hint", "list the folder with list_directory"}};
  fake_.answer("tool.call", result);

  const CtlRun human = ctl({"call", "read_file", R"({"path": "a.txt"})"});
  EXPECT_EQ(human.exit_code, 1);
  EXPECT_TRUE(human.out.empty()) << human.out;
  EXPECT_TRUE(contains(human.err, "error: not_found: a.txt does not exist\n")) << human.err;
  EXPECT_TRUE(contains(human.err, "hint: list the folder with list_directory\n")) << human.err;

  const CtlRun scripted = ctl({"--json", "call", "read_file", R"({"path": "a.txt"})"});
  EXPECT_EQ(scripted.exit_code, 1);
  EXPECT_EQ(json::parse(scripted.out), result);
}

TEST_F(LooprctlTest, TerminalControlsInAnErrorAreEscaped) {
  json result = tool_result(nullptr, false);
  result["error"] = {{"code", "io"}, {"message", "bad \x1b[2J name"}};
  fake_.answer("tool.call", result);
  const CtlRun run = ctl({"call", "read_file"});
  EXPECT_EQ(run.exit_code, 1);
  EXPECT_FALSE(contains(run.err, "\x1b")) << run.err;
  EXPECT_TRUE(contains(run.err, "bad \\x1b[2J name")) << run.err;
}

// ---- tools, approvals, approve, deny, metrics, status ----

TEST_F(LooprctlTest, ToolsPrintsATableOfNameLaneTierAndTimeout) {
  fake_.answer("tool.list", {{"tools",
                              {{{"name", "read_file"},
                                {"lane", "no-net"},
                                {"tier", "read-only"},
                                {"timeout_ms", 10000},
                                {"description", "Read a file.\nMore text."}},
                               {{"name", "run_command"},
                                {"lane", "net"},
                                {"tier", "privileged"},
                                {"timeout_ms", 120000},
                                {"enabled", false}}}}});
  const CtlRun run = ctl({"tools"});
  ASSERT_EQ(run.exit_code, 0) << run.err;
  const auto lines = lines_of(run.out);
  ASSERT_EQ(lines.size(), 3u) << run.out;
  EXPECT_TRUE(contains(lines[0], "NAME") && contains(lines[0], "TIMEOUT")) << lines[0];
  EXPECT_TRUE(contains(lines[1], "read_file") && contains(lines[1], "no-net") &&
              contains(lines[1], "read-only") && contains(lines[1], "10 s") &&
              contains(lines[1], "Read a file.") && !contains(lines[1], "More"))
      << lines[1];
  EXPECT_TRUE(contains(lines[2], "run_command (disabled)") && contains(lines[2], "2 min"))
      << lines[2];
}

TEST_F(LooprctlTest, ApprovalsListsWaitingCalls) {
  fake_.answer("approval.list", {{"approvals",
                                  {{{"id", "a-1"},
                                    {"call_id", "c-7"},
                                    {"tool", "run_command"},
                                    {"lane", "net"},
                                    {"tier", "privileged"},
                                    {"args", {{"command", "rm -rf build"}}},
                                    {"worktree", "/src/app"},
                                    {"expires_at_ms", 0}}}}});
  const CtlRun run = ctl({"approvals"});
  ASSERT_EQ(run.exit_code, 0) << run.err;
  EXPECT_TRUE(contains(run.out, "a-1")) << run.out;
  EXPECT_TRUE(contains(run.out, "run_command")) << run.out;
  EXPECT_TRUE(contains(run.out, "rm -rf build")) << run.out;
  EXPECT_TRUE(contains(run.out, "expired")) << run.out;
}

TEST_F(LooprctlTest, ApprovalsNameTheRuleThatMadeACallWait) {
  const json rule = {{"decision", "ask"},
                     {"command", {"git", "push"}},
                     {"reason", "publishes"},
                     {"source", "user"},
                     {"file", "/home/ada/.config/loopr/loopr.toml"},
                     {"line", 12}};
  fake_.answer("approval.list", {{"approvals",
                                  {{{"id", "a-1"},
                                    {"tool", "run_command"},
                                    {"args", {{"command", "git push"}}},
                                    {"rule", rule}},
                                   {{"id", "a-2"},
                                    {"tool", "run_command"},
                                    {"args", {{"command", "eval x"}}},
                                    {"uncertain", "eval runs a string as a command"}}}}});
  const CtlRun run = ctl({"approvals"});
  ASSERT_EQ(run.exit_code, 0) << run.err;
  EXPECT_TRUE(contains(run.out,
                       "a-1  waits by the rule at /home/ada/.config/loopr/loopr.toml:12 (ask "
                       "[\"git\",\"push\"]): publishes"))
      << run.out;
  EXPECT_TRUE(contains(run.out,
                       "a-2  waits: the approval rules cannot read its command (eval "
                       "runs a string as a command)"))
      << run.out;
}

TEST_F(LooprctlTest, ApprovalsSaysWhenNoneAreWaiting) {
  fake_.answer("approval.list", {{"approvals", json::array()}});
  const CtlRun run = ctl({"approvals"});
  ASSERT_EQ(run.exit_code, 0) << run.err;
  EXPECT_EQ(run.out, "no calls are waiting for approval\n");
}

TEST_F(LooprctlTest, ApproveSendsTheId) {
  fake_.answer("approval.approve", {{"id", "a-1"}, {"approved", true}});
  const CtlRun run = ctl({"approve", "a-1"});
  ASSERT_EQ(run.exit_code, 0) << run.err;
  EXPECT_EQ(params_of("approval.approve"), (json{{"id", "a-1"}}));
  EXPECT_EQ(run.out, "approved a-1\n");
}

TEST_F(LooprctlTest, DenySendsTheIdAndTheReason) {
  fake_.answer("approval.deny", {{"id", "a-2"}, {"approved", false}});
  const CtlRun run = ctl({"deny", "a-2", "--reason", "not on main"});
  ASSERT_EQ(run.exit_code, 0) << run.err;
  EXPECT_EQ(params_of("approval.deny"), (json{{"id", "a-2"}, {"reason", "not on main"}}));
  EXPECT_EQ(run.out, "denied a-2\n");
}

TEST_F(LooprctlTest, DenyWithoutAReasonSendsNone) {
  fake_.answer("approval.deny", {{"id", "a-3"}, {"approved", false}});
  const CtlRun run = ctl({"--json", "deny", "a-3"});
  ASSERT_EQ(run.exit_code, 0) << run.err;
  EXPECT_EQ(params_of("approval.deny"), (json{{"id", "a-3"}}));
  EXPECT_EQ(json::parse(run.out), (json{{"id", "a-3"}, {"approved", false}}));
}

const json kMetrics = {{"uptime_ms", 3'723'000},
                       {"rss_bytes", 12 * 1024 * 1024},
                       {"clients", 2},
                       {"calls",
                        {{{"tool", "read_file"},
                          {"lane", "no-net"},
                          {"count", 41},
                          {"errors", 1},
                          {"p50_ms", 0.8},
                          {"p90_ms", 1.5},
                          {"p99_ms", 2.5},
                          {"max_ms", 9}}}},
                       {"lanes",
                        {{{"lane", "no-net"},
                          {"state", "running"},
                          {"pid", 4242},
                          {"slots", 2},
                          {"in_flight", 0},
                          {"queued", 0},
                          {"restarts", 1}}}},
                       {"runner_restarts", 1}};

TEST_F(LooprctlTest, MetricsPrintsCallsAndLanes) {
  fake_.answer("metrics.get", kMetrics);
  const CtlRun run = ctl({"metrics"});
  ASSERT_EQ(run.exit_code, 0) << run.err;
  EXPECT_TRUE(contains(run.out, "uptime 1 h 2 min, RSS 12.0 MiB, clients 2")) << run.out;
  bool call_row = false;
  bool lane_row = false;
  for (const auto& line : lines_of(run.out)) {
    call_row |= contains(line, "read_file") && contains(line, "41") && contains(line, "0.8 ms") &&
                contains(line, "9 ms");
    lane_row |= contains(line, "no-net") && contains(line, "running") && contains(line, "4242");
  }
  EXPECT_TRUE(call_row) << run.out;
  EXPECT_TRUE(lane_row) << run.out;
}

TEST_F(LooprctlTest, MetricsPrintsTheEgressProxysConnectionsPerLane) {
  json metrics = kMetrics;
  metrics["egress"] = {{{"lane", "net"},
                        {"allowed", 3},
                        {"refused", 4},
                        {"bytes", 2048},
                        {"refused_by", {{"private", 1}, {"loopback", 3}}}}};
  fake_.answer("metrics.get", metrics);
  const CtlRun run = ctl({"metrics"});
  ASSERT_EQ(run.exit_code, 0) << run.err;
  bool header = false;
  bool row = false;
  for (const auto& line : lines_of(run.out)) {
    header |= contains(line, "NETWORK") && contains(line, "REFUSED BY");
    row |= contains(line, "net") && contains(line, " 3 ") && contains(line, "2.0 KiB") &&
           contains(line, "loopback 3, private 1");
  }
  EXPECT_TRUE(header) << run.out;
  EXPECT_TRUE(row) << run.out;
  // A daemon that reports no egress prints no such table.
  fake_.answer("metrics.get", kMetrics);
  EXPECT_FALSE(contains(ctl({"metrics"}).out, "NETWORK"));
}

TEST_F(LooprctlTest, MetricsWithJsonPrintsTheResult) {
  fake_.answer("metrics.get", kMetrics);
  const CtlRun run = ctl({"--json", "metrics"});
  ASSERT_EQ(run.exit_code, 0) << run.err;
  EXPECT_EQ(json::parse(run.out), kMetrics);
}

TEST_F(LooprctlTest, DaemonStatusPingsAndPrintsTheLanes) {
  fake_.answer("metrics.get", kMetrics);
  const CtlRun run = ctl({"daemon", "status"});
  ASSERT_EQ(run.exit_code, 0) << run.err;
  EXPECT_TRUE(contains(run.out, "looprd fake-1.0 is running on " + fake_.socket_path())) << run.out;
  EXPECT_TRUE(contains(run.out, "4242")) << run.out;
  EXPECT_EQ(fake_.requests("ping").size(), 1u);
}

// ---- events ----

TEST_F(LooprctlTest, EventsStopsAfterCountAndSendsTheTopics) {
  fake_.on("events.subscribe", [](const proto::Request& request) {
    FakeReply reply = FakeReply::result(request, {{"topics", request.params["topics"]}});
    reply.event("tool.started", {{"call_id", "c-1"}})
        .event("tool.finished", {{"call_id", "c-1"}, {"ok", true}})
        .event("tool.started", {{"call_id", "c-2"}});
    return reply;
  });
  const CtlRun run =
      ctl({"events", "--count", "2", "--topic", "tool.started", "--topic", "tool.finished"});
  ASSERT_EQ(run.exit_code, 0) << run.err;
  EXPECT_EQ(params_of("events.subscribe"), (json{{"topics", {"tool.started", "tool.finished"}}}));
  const auto lines = lines_of(run.out);
  ASSERT_EQ(lines.size(), 2u) << run.out;
  EXPECT_EQ(lines[0], R"(tool.started {"call_id":"c-1"})");
  EXPECT_EQ(lines[1], R"(tool.finished {"call_id":"c-1","ok":true})");
}

TEST_F(LooprctlTest, EventsWithJsonPrintsOneObjectPerLine) {
  fake_.on("events.subscribe", [](const proto::Request& request) {
    FakeReply reply = FakeReply::result(request, {{"topics", json::array()}});
    reply.event("approval.requested", {{"id", "a-1"}});
    return reply;
  });
  const CtlRun run = ctl({"--json", "events", "--count", "1"});
  ASSERT_EQ(run.exit_code, 0) << run.err;
  EXPECT_EQ(params_of("events.subscribe"), (json{{"topics", json::array()}}));
  EXPECT_EQ(json::parse(run.out),
            (json{{"event", "approval.requested"}, {"data", {{"id", "a-1"}}}}));
}

TEST_F(LooprctlTest, EventsEndsUnreachableWhenTheDaemonCloses) {
  fake_.on("events.subscribe", [](const proto::Request& request) {
    FakeReply reply = FakeReply::result(request, {{"topics", json::array()}});
    reply.event("loop.created", {{"id", "l-1"}});
    reply.close_connection = true;
    return reply;
  });
  const CtlRun run = ctl({"events", "--follow"});
  EXPECT_EQ(run.exit_code, 3);
  EXPECT_EQ(lines_of(run.out).size(), 1u) << run.out;
  EXPECT_TRUE(contains(run.err, "closed the connection")) << run.err;
}

}  // namespace
}  // namespace loopr::test
