// loopr-runner end to end: the real binary, its sandbox, and the runner
// protocol, driven from the daemon's side of a socketpair.
#include <gtest/gtest.h>
#include <signal.h>
#include <sys/wait.h>

#include "proto/base64.hpp"
#include "tests/runner/process_scan.hpp"
#include "tests/runner/runner_harness.hpp"

namespace loopr::test {
namespace {

using nlohmann::json;
using proto::JobStatus;

TEST(LaneRunner, RunsAFileToolInTheSandbox) {
  RunnerHarness runner;
  runner.tree().write("wt/hello.txt", "one\ntwo\n");
  const auto result = runner.run("read_file", {{"path", "hello.txt"}});
  ASSERT_EQ(result.status, JobStatus::success) << result.output << result.stderr_bytes;
  EXPECT_EQ(result.exit_code, 0);
  const auto out = json::parse(result.output);
  EXPECT_EQ(out["content"], "     1|one\n     2|two\n");
}

// Issue 25: apt run as root in a job drops its methods to the _apt user,
// which the lane's user namespace cannot switch to ("setgroups ... Operation
// not permitted"). With the APT_CONFIG the runner gives every job, apt-get
// update works (here from a file: repository in the worktree, in a lane
// without and one with network); forced back to _apt, the failure comes
// with a hint the model can act on.
TEST(LaneRunner, AptGetWorksInAJobAndASwitchToItsUserGetsAHint) {
  for (RunnerOptions options : {RunnerOptions{}, lane_options("net")}) {
    SCOPED_TRACE(options.lane);
    RunnerHarness runner(options);
    runner.tree().write("wt/repo/Packages", "");
    runner.tree().write("wt/sources.list",
                        "deb [trusted=yes] file:" + runner.worktree() + "/repo ./\n");
    const std::string apt =
        "mkdir -p /tmp/l/partial /tmp/c/archives/partial && apt-get -o "
        "Dir::Etc::SourceList=$PWD/sources.list -o Dir::Etc::SourceParts=/nonexistent -o "
        "Dir::State::Lists=/tmp/l -o Dir::Cache=/tmp/c -o Debug::NoLocking=1 ";
    const auto updated = runner.shell(apt + "update 2>&1; echo status=$?");
    const std::string out = updated.value("stdout", "");
    EXPECT_NE(out.find("status=0"), std::string::npos) << out;
    EXPECT_EQ(out.find("setgroups"), std::string::npos) << out;
    EXPECT_NE(out.find("Reading package lists"), std::string::npos) << out;

    const auto as_apt = runner.shell(apt + "-o APT::Sandbox::User=_apt update");
    if (runner.shell("id -u").value("stdout", "") == "0\n") {
      EXPECT_NE(as_apt["exit_code"], 0) << as_apt.dump();
      EXPECT_NE(as_apt.value("sandbox_note", "").find("-o APT::Sandbox::User=root"),
                std::string::npos)
          << as_apt.dump();
    } else {
      // An ordinary user's apt does not switch users at all.
      EXPECT_EQ(as_apt["exit_code"], 0) << as_apt.dump();
    }
  }
}

// What one job leaves in /tmp or /dev/shm (another loop's files, or a full
// /tmp) is gone for the next job of the lane: each gets empty ones.
TEST(LaneRunner, EachJobHasAnEmptyTmpAndDevShmOfItsOwn) {
  for (RunnerOptions options : {RunnerOptions{}, lane_options("net")}) {
    RunnerHarness runner(options);
    // (When the worktree root lies under /tmp, its mount point is there
    // too, hence the grep.)
    const std::string root = runner.tree().root();
    const std::string top =
        root.rfind("/tmp/", 0) == 0 ? root.substr(5, root.find('/', 5) - 5) : "/";
    const std::string list = "ls -A /dev/shm /tmp | grep -vx '" + top + "'";
    const json first = runner.shell(
        "echo secret > /tmp/left; echo secret > /dev/shm/left; dd if=/dev/zero of=/tmp/fill "
        "bs=1M count=8 2>/dev/null; " +
        list);
    EXPECT_EQ(first["stdout"], "/dev/shm:\nleft\n\n/tmp:\nfill\nleft\n") << first.dump();
    const json second = runner.shell(list);
    EXPECT_EQ(second["stdout"], "/dev/shm:\n\n/tmp:\n") << options.lane << ": " << second.dump();
  }
}

TEST(LaneRunner, AToolErrorIsStatusFailedWithTheErrorObject) {
  RunnerHarness runner;
  const auto result = runner.run("read_file", {{"path", "missing.txt"}});
  EXPECT_EQ(result.status, JobStatus::failed);
  EXPECT_EQ(result.exit_code, 1);
  EXPECT_EQ(json::parse(result.output)["error"]["code"], "not_found");
}

// A command stopped at its own timeout_ms says that this was the limit, and
// which argument raises it (issue 25).
TEST(LaneRunner, ACommandsOwnTimeoutIsNamedAsTheLimit) {
  RunnerHarness runner;
  const auto result =
      runner.run("run_command", {{"command", "exec sleep 1000.2222"}, {"timeout_ms", 300}});
  ASSERT_EQ(result.status, JobStatus::success) << result.output;
  const auto out = json::parse(result.output);
  EXPECT_EQ(out["timed_out"], true);
  EXPECT_EQ(out["limit"]["name"], "time") << out.dump();
  EXPECT_EQ(out["limit"]["key"], "timeout_ms (an argument of run_command)") << out.dump();
  EXPECT_EQ(out["limit"]["value"], 300) << out.dump();
  EXPECT_FALSE(result.limit.has_value());  // the job itself ended in time
}

TEST(LaneRunner, TimeoutStopsTheJobAndKeepsItsPartialOutput) {
  RunnerHarness runner;
  // loopr-tool's own timeout is longer than the job's: the runner must act.
  const auto result = runner.run(
      "run_command", {{"command", "echo started; exec sleep 1000.1111"}, {"timeout_ms", 600000}},
      /*timeout_ms=*/2000);
  EXPECT_EQ(result.status, JobStatus::timeout);
  ASSERT_TRUE(result.error.has_value());
  EXPECT_NE(result.error->find("timeout of 2000 ms"), std::string::npos);
  // Which limit stopped it, and the key that raises it (issue 25).
  ASSERT_TRUE(result.limit.has_value());
  EXPECT_EQ(result.limit->name, "time");
  EXPECT_EQ(result.limit->key, "timeout_ms of [tools.run_command] in catalog.toml");
  EXPECT_EQ(result.limit->value, 2000u);
  EXPECT_TRUE(processes_with("sleep 1000.1111").empty());
  // loopr-tool, stopped by the runner's TERM, still printed what it had.
  const auto out = json::parse(result.output, nullptr, false);
  ASSERT_FALSE(out.is_discarded()) << result.output;
  EXPECT_EQ(out["stdout"], "started\n");
  EXPECT_EQ(out["interrupted"], true);
}

TEST(LaneRunner, CancelEndsARunningJob) {
  RunnerHarness runner;
  runner.send(runner.job("c1", "run_command", {{"command", "exec sleep 1000.2222"}}));
  ASSERT_TRUE(runner.receive_a<proto::JobAck>());
  runner.send(proto::Cancel{"c1"});
  const auto ack = runner.receive_a<proto::CancelAck>();
  ASSERT_TRUE(ack);
  EXPECT_TRUE(ack->found);
  const auto result = runner.receive_a<proto::JobResult>();
  ASSERT_TRUE(result);
  EXPECT_EQ(result->status, JobStatus::cancelled);
  EXPECT_TRUE(processes_with("sleep 1000.2222").empty());
}

TEST(LaneRunner, CancelOfAQueuedJobNeverStartsIt) {
  RunnerOptions options;
  options.slots = 1;
  RunnerHarness runner(options);
  runner.send(runner.job("busy", "run_command", {{"command", "exec sleep 1000.2223"}}));
  runner.send(runner.job("queued", "run_command", {{"command", "touch started"}}));
  ASSERT_TRUE(wait_for_process("sleep 1000.2223", std::chrono::seconds(20)));
  runner.send(proto::Cancel{"queued"});
  const auto queued = runner.receive_a<proto::JobResult>();
  ASSERT_TRUE(queued);
  EXPECT_EQ(queued->job_id, "queued");
  EXPECT_EQ(queued->status, JobStatus::cancelled);
  runner.send(proto::Cancel{"busy"});
  const auto busy = runner.receive_a<proto::JobResult>();
  ASSERT_TRUE(busy);
  EXPECT_EQ(busy->job_id, "busy");
  EXPECT_FALSE(runner.tree().exists("wt/started"));
}

TEST(LaneRunner, CancelOfAnUnknownJobSaysNotFound) {
  RunnerHarness runner;
  runner.send(proto::Cancel{"nope"});
  const auto ack = runner.receive_a<proto::CancelAck>();
  ASSERT_TRUE(ack);
  EXPECT_FALSE(ack->found);
}

TEST(LaneRunner, OutputOverTheCapKeepsHeadAndTail) {
  RunnerHarness runner;
  // read_file cuts a page to fit the cap, but returns its first line
  // whatever its size: 2,000 characters here, over the cap.
  std::string big = std::string(3000, 'x') + "\n";
  for (int i = 1; i < 5000; ++i)
    big += "line " + std::to_string(i) + "\n";
  runner.tree().write("wt/big.txt", big);
  const auto result = runner.run("read_file", {{"path", "big.txt"}}, 30'000, /*max_output=*/2000);
  EXPECT_TRUE(result.truncated);
  EXPECT_NE(result.output.find("[output truncated: "), std::string::npos);
  EXPECT_LE(result.output.size(), 2000u + 100u);
  // Head: the start of loopr-tool's JSON; tail: its end, after the marker.
  EXPECT_EQ(result.output.rfind("{\"content\":\"     1|xxxxxxxxxx", 0), 0u)
      << result.output.substr(0, 100);
  const std::string tail = "\"total_lines\":5000}\n";
  ASSERT_GE(result.output.size(), tail.size());
  EXPECT_EQ(result.output.substr(result.output.size() - tail.size()), tail);
  EXPECT_LT(result.output.find("[output truncated: "), result.output.size() - tail.size());
}

TEST(LaneRunner, JobsBeyondTheSlotsWaitTheirTurn) {
  RunnerOptions options;
  options.slots = 1;
  RunnerHarness runner(options);
  // Each job appends "start N" and "end N"; with one slot they cannot interleave.
  for (int i = 1; i <= 3; ++i) {
    const std::string n = std::to_string(i);
    runner.send(runner.job(
        "s" + n, "run_command",
        {{"command", "echo start " + n + " >> order; sleep 0.2; echo end " + n + " >> order"}}));
  }
  for (int i = 0; i < 3; ++i)
    ASSERT_TRUE(runner.receive_a<proto::JobResult>());
  EXPECT_EQ(runner.tree().read("wt/order"), "start 1\nend 1\nstart 2\nend 2\nstart 3\nend 3\n");
}

TEST(LaneRunner, NonUtf8OutputSurvivesTheTrip) {
  RunnerHarness runner;
  const auto out = runner.shell("printf 'a\\377\\376b'");
  ASSERT_TRUE(out.contains("stdout_base64")) << out.dump();
  auto bytes = proto::base64_decode(out["stdout_base64"].get<std::string>());
  ASSERT_TRUE(bytes.ok());
  EXPECT_EQ(*bytes, std::string("a\xff\xfe"
                                "b"));
}

TEST(LaneRunner, HeavyLaneStreamsOutputChunksAsTheyAreProduced) {
  RunnerOptions options;
  options.lane = "heavy";
  options.stream_output = true;
  RunnerHarness runner(options);
  // The command cannot finish before the test has seen its first line.
  runner.send(runner.job(
      "h1", "build",
      {{"command", "echo compiling; while [ ! -e go ]; do sleep 0.01; done; echo linking"}}));
  std::string streamed;
  while (streamed.find("compiling") == std::string::npos) {
    auto message = runner.receive();
    ASSERT_TRUE(message) << "no output_chunk before the job finished; streamed: " << streamed;
    ASSERT_FALSE(std::holds_alternative<proto::JobResult>(*message));
    if (auto* chunk = std::get_if<proto::OutputChunk>(&*message)) {
      EXPECT_EQ(chunk->job_id, "h1");
      streamed += chunk->data;
    }
  }
  runner.tree().write("wt/go", "");
  std::optional<proto::JobResult> result;
  while (!result) {
    auto message = runner.receive();
    ASSERT_TRUE(message);
    if (auto* chunk = std::get_if<proto::OutputChunk>(&*message)) streamed += chunk->data;
    if (auto* done = std::get_if<proto::JobResult>(&*message)) result = *done;
  }
  EXPECT_NE(streamed.find("linking"), std::string::npos);
  ASSERT_EQ(result->status, JobStatus::success);
  EXPECT_EQ(json::parse(result->output)["stdout"], "compiling\nlinking\n");
}

TEST(LaneRunner, StreamedChunksCarryBytesThatAreNotUtf8Exactly) {
  RunnerOptions options;
  options.lane = "heavy";
  options.stream_output = true;
  RunnerHarness runner(options);
  runner.send(runner.job("b1", "build", {{"command", "printf 'a\\377\\376\\000b'"}}));
  std::string streamed;
  for (;;) {
    auto message = runner.receive();
    ASSERT_TRUE(message);
    if (auto* chunk = std::get_if<proto::OutputChunk>(&*message)) {
      if (chunk->stream == proto::OutputStream::standard_error) streamed += chunk->data;
    }
    if (std::holds_alternative<proto::JobResult>(*message)) break;
  }
  EXPECT_EQ(streamed, std::string("a\xff\xfe\0b", 5));
}

TEST(LaneRunner, ConfiguredCommandsRunOnTheHeavyLane) {
  RunnerOptions options;
  options.lane = "heavy";
  options.stream_output = true;
  RunnerHarness runner(options);
  for (const char* tool : {"build", "test", "validate"}) {
    const auto result = runner.run(tool, {{"command", "pwd; echo problem >&2; exit 3"}});
    ASSERT_EQ(result.status, JobStatus::success) << tool << ": " << result.output;
    const auto out = json::parse(result.output);
    EXPECT_EQ(out["exit_code"], 3) << tool;
    EXPECT_EQ(out["stdout"], runner.worktree() + "\n") << tool;
    EXPECT_EQ(out["stderr"], "problem\n") << tool;
  }
}

TEST(LaneRunner, AResultAlwaysFitsInAFrame) {
  RunnerHarness runner;
  // Control characters cost 6 bytes each in JSON; with a cap far above the
  // frame size, the runner lowers the cap it gives the job rather than lose
  // the result, and run_command keeps its JSON within that lowered cap.
  const auto result =
      runner.run("run_command", {{"command", "head -c 6000000 /dev/zero | tr '\\0' '\\1'"}}, 60'000,
                 /*max_output=*/1ull << 40);
  EXPECT_EQ(result.status, JobStatus::success) << (result.error ? *result.error : "");
  EXPECT_LT(result.output.size(), proto::kMaxFramePayload / 6);
  const auto out = json::parse(result.output, nullptr, false);
  ASSERT_FALSE(out.is_discarded()) << result.output.substr(0, 200);
  EXPECT_EQ(out["truncated"], true);
  EXPECT_EQ(out["output_bytes"], 6'000'000);
  EXPECT_NE(out["output"].get<std::string>().find(" bytes cut (6000000 in all) ...]"),
            std::string::npos);
}

TEST(LaneRunner, AChildHoldingStdoutOpenDoesNotHangTheJob) {
  RunnerHarness runner;
  const auto out = runner.shell("sleep 1000.3333 & echo parent done", 60'000);
  EXPECT_EQ(out["exit_code"], 0);
  EXPECT_EQ(out["timed_out"], false);
  EXPECT_EQ(out["stdout"], "parent done\n");
  EXPECT_TRUE(processes_with("sleep 1000.3333").empty());
}

TEST(LaneRunner, HeartbeatsAreAnswered) {
  RunnerHarness runner;
  runner.send(proto::Heartbeat{42});
  const auto ack = runner.receive_a<proto::HeartbeatAck>();
  ASSERT_TRUE(ack);
  EXPECT_EQ(ack->seq, 42u);
}

TEST(LaneRunner, RefusesAWorktreeOutsideItsRoots) {
  RunnerHarness runner;
  auto job = runner.job("w1", "read_file", {{"path", "x"}});
  job.worktree = "/usr";
  runner.send(job);
  const auto result = runner.receive_a<proto::JobResult>();
  ASSERT_TRUE(result);
  EXPECT_EQ(result->status, JobStatus::error);
  ASSERT_TRUE(result->error);
  EXPECT_NE(result->error->find("not beneath a configured worktree root"), std::string::npos);
}

TEST(LaneRunner, RefusesADuplicateJobId) {
  RunnerHarness runner;
  runner.send(runner.job("d1", "run_command", {{"command", "exec sleep 1000.4444"}}));
  runner.send(runner.job("d1", "read_file", {{"path", "x"}}));
  const auto result = runner.receive_a<proto::JobResult>();
  ASSERT_TRUE(result);
  EXPECT_EQ(result->status, JobStatus::error);
  EXPECT_NE(result->error->find("already running"), std::string::npos);
  runner.send(proto::Cancel{"d1"});
  ASSERT_TRUE(runner.receive_a<proto::JobResult>());
}

TEST(LaneRunner, ShutdownCancelsJobsAndExitsCleanly) {
  RunnerHarness runner;
  runner.send(runner.job("x1", "run_command", {{"command", "exec sleep 1000.5555"}}));
  ASSERT_TRUE(runner.receive_a<proto::JobAck>());
  runner.send(proto::Shutdown{});
  const auto result = runner.receive_a<proto::JobResult>();
  ASSERT_TRUE(result);
  EXPECT_EQ(result->status, JobStatus::cancelled);
  const int status = runner.wait_exit();
  EXPECT_TRUE(WIFEXITED(status));
  EXPECT_EQ(WEXITSTATUS(status), 0);
  EXPECT_TRUE(processes_with("sleep 1000.5555").empty());
}

TEST(LaneRunner, AnOversizedFrameClosesTheLink) {
  RunnerHarness runner;
  // A length header announcing 2 GiB: refused before anything is allocated.
  runner.send_raw(std::string("\x7f\xff\xff\xff{}", 6));
  const int status = runner.wait_exit();
  ASSERT_TRUE(WIFEXITED(status));
  EXPECT_EQ(WEXITSTATUS(status), 1);
  EXPECT_NE(runner.runner_stderr().find("bad frame"), std::string::npos);
}

TEST(LaneRunner, ANonJsonFrameClosesTheLink) {
  RunnerHarness runner;
  runner.send_raw(std::string("\x00\x00\x00\x05hello", 9));
  const int status = runner.wait_exit();
  ASSERT_TRUE(WIFEXITED(status));
  EXPECT_EQ(WEXITSTATUS(status), 1);
}

// Which binary runs a job is its `program` trait (from looprd's catalog),
// not its tool name: web_fetch sent as a loopr-tool job is refused by
// loopr-tool as a tool it does not have.
TEST(LaneRunner, TheJobsProgramTraitPicksTheBinaryThatRunsIt) {
  RunnerHarness runner;
  for (const proto::JobProgram program : {proto::JobProgram::fetch, proto::JobProgram::tool}) {
    const std::string id = program == proto::JobProgram::fetch ? "by-fetch" : "by-tool";
    proto::Job job = runner.job(id, "web_fetch", {{"url", "not a url"}});
    ASSERT_EQ(job.traits.program, proto::JobProgram::fetch) << "the catalog's trait";
    job.traits.program = program;
    runner.send(job);
    const auto result = runner.receive_a<proto::JobResult>();
    ASSERT_TRUE(result.has_value()) << runner.runner_stderr();
    const std::string said = result->output + result->stderr_bytes + result->error.value_or("");
    if (program == proto::JobProgram::tool) {
      EXPECT_NE(said.find("unknown tool 'web_fetch'"), std::string::npos) << said;
    } else {
      EXPECT_EQ(said.find("unknown tool"), std::string::npos) << said;
      EXPECT_NE(said.find("url"), std::string::npos) << said;
    }
  }
}

TEST(LaneRunner, AMessageOfTheWrongShapeClosesTheLink) {
  RunnerHarness runner;
  auto frame = proto::encode_frame({{"type", "job"}, {"job_id", 7}});
  ASSERT_TRUE(frame.ok());
  runner.send_raw(*frame);
  const int status = runner.wait_exit();
  ASSERT_TRUE(WIFEXITED(status));
  EXPECT_EQ(WEXITSTATUS(status), 1);
  EXPECT_NE(runner.runner_stderr().find("bad message"), std::string::npos);
}

TEST(LaneRunner, KilledRunnerTakesItsJobsWithIt) {
  RunnerHarness runner;
  runner.send(runner.job("k1", "run_command", {{"command", "exec sleep 1000.6666"}}));
  ASSERT_TRUE(runner.receive_a<proto::JobAck>());
  ASSERT_TRUE(wait_for_process("sleep 1000.6666", std::chrono::seconds(20)))
      << "the job never started";
  ::kill(runner.pid(), SIGKILL);
  runner.wait_exit();
  // The job's PID 1 dies with the runner (PR_SET_PDEATHSIG), and its PID
  // namespace with it; the kernel does that asynchronously, hence the bound.
  EXPECT_TRUE(processes_with_after("sleep 1000.6666", std::chrono::seconds(10)).empty());
}

}  // namespace
}  // namespace loopr::test
