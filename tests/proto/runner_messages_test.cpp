#include "proto/runner_messages.hpp"

#include <gtest/gtest.h>

#include <limits>

#include "proto/frame_codec.hpp"

namespace loopr::proto {
namespace {

using nlohmann::json;

Job sample_job() {
  Job job;
  job.job_id = "job-42";
  job.tool = "read_file";
  job.args = {{"path", "src/main.cpp"}, {"limit", 200}};
  job.worktree = "/home/dev/repo";
  job.cwd = "/home/dev/repo/src";
  job.env = {{"LANG", "C.UTF-8"}, {"PATH", "/usr/bin:/bin"}};
  job.timeout_ms = 30000;
  job.max_output_bytes = 1 << 20;
  job.traits = {
      .program = JobProgram::tool, .runs_commands = false, .warm_worker = true, .read_only = true};
  return job;
}

// Parses `object` and expects a protocol error naming `type` and `field`.
void expect_refused(const json& object, const std::string& type, const std::string& field) {
  const auto r = parse_runner_message(object);
  ASSERT_FALSE(r.ok()) << object.dump();
  EXPECT_EQ(r.error().code, errc::protocol);
  EXPECT_NE(r.error().message.find("'" + type + "'"), std::string::npos) << r.error().message;
  EXPECT_NE(r.error().message.find("'" + field + "'"), std::string::npos) << r.error().message;
  EXPECT_EQ(r.error().details["field"], field);
}

RunnerMessage round_trip(const RunnerMessage& message) {
  auto parsed = parse_runner_message(to_json(message));
  EXPECT_TRUE(parsed.ok()) << parsed.error().message;
  return parsed.ok() ? *parsed : RunnerMessage{Shutdown{}};
}

TEST(RunnerMessages, JobWireFormat) {
  const json wire = to_json(sample_job());
  EXPECT_EQ(wire, json::parse(R"({
    "type": "job", "job_id": "job-42", "tool": "read_file",
    "args": {"path": "src/main.cpp", "limit": 200},
    "worktree": "/home/dev/repo", "cwd": "/home/dev/repo/src",
    "env": {"LANG": "C.UTF-8", "PATH": "/usr/bin:/bin"},
    "timeout_ms": 30000, "max_output_bytes": 1048576,
    "program": "loopr-tool", "runs_commands": false, "warm_worker": true, "read_only": true})"));
}

TEST(RunnerMessages, JobTraitsRoundTripAndAnUnknownProgramIsRefused) {
  Job job = sample_job();
  job.tool = "web_fetch";
  job.traits = {.program = JobProgram::fetch,
                .runs_commands = true,
                .warm_worker = false,
                .read_only = false};
  const json wire = to_json(job);
  EXPECT_EQ(wire["program"], "loopr-fetch");
  const auto parsed = parse_runner_message(wire);
  ASSERT_TRUE(parsed.ok()) << parsed.error().message;
  EXPECT_EQ(std::get<Job>(*parsed).traits, job.traits);
  json other = wire;
  other["program"] = "/bin/sh";
  expect_refused(other, "job", "program");
}

TEST(RunnerMessages, EveryTypeRoundTrips) {
  const std::vector<RunnerMessage> all = {
      Handshake{"no-net", 1234, kRunnerProtocolVersion},
      HandshakeAck{false, 0, "version mismatch"},
      HandshakeAck{true, 4, std::nullopt},
      sample_job(),
      JobAck{"job-42"},
      OutputChunk{"job-42", OutputStream::standard_error, "warning: x\n"},
      JobResult{"job-42", JobStatus::failed, "out", "err", 2, 17, true, std::nullopt},
      JobResult{"j", JobStatus::error, "", "", std::nullopt, 0, false, "spawn failed"},
      JobResult{"j", JobStatus::timeout, "", "", 137, 9, false, "ran past its timeout",
                LimitHit{"time", "timeout_ms of [tools.run_command] in catalog.toml", 2000, "ms",
                         "loopr stopped the job at its time limit"}},
      Cancel{"job-42"},
      CancelAck{"job-42", true},
      Heartbeat{7},
      HeartbeatAck{7},
      Shutdown{}};
  for (const auto& message : all) {
    EXPECT_EQ(round_trip(message), message) << to_json(message).dump();
  }
}

TEST(RunnerMessages, TypeNames) {
  EXPECT_EQ(message_type(JobResult{}), "result");
  EXPECT_EQ(to_json(JobResult{})["type"], "result");
  EXPECT_EQ(to_json(HeartbeatAck{})["type"], "heartbeat_ack");
  EXPECT_EQ(to_json(JobResult{})["status"], "success");
  EXPECT_EQ(to_string(JobStatus::cancelled), "cancelled");
}

TEST(RunnerMessages, Utf8BytesTravelAsPlainText) {
  const json wire = to_json(OutputChunk{"j", OutputStream::standard_output, "caf\xC3\xA9\n"});
  EXPECT_EQ(wire["data"], "caf\xC3\xA9\n");
  EXPECT_FALSE(wire.contains("data_b64"));
  EXPECT_EQ(wire["stream"], "stdout");
}

TEST(RunnerMessages, NonUtf8BytesTravelAsBase64AndSurviveAFrame) {
  const std::string binary("\x00\xFF\xFE\x80 ok", 7);
  const JobResult result{"j", JobStatus::success, binary, "\xC3", 0, 5, false, std::nullopt};
  const json wire = to_json(result);
  EXPECT_FALSE(wire.contains("output"));
  EXPECT_EQ(wire["output_b64"], "AP/+gCBvaw==");
  EXPECT_EQ(wire["stderr_b64"], "ww==");

  FrameReader reader;
  reader.feed(*encode_frame(wire));
  auto decoded = reader.next();
  ASSERT_TRUE(decoded.ok() && decoded->has_value());
  auto parsed = parse_runner_message(**decoded);
  ASSERT_TRUE(parsed.ok());
  EXPECT_EQ(std::get<JobResult>(*parsed), result);
}

TEST(RunnerMessages, RefusesNonObjectsAndMissingOrUnknownType) {
  EXPECT_FALSE(parse_runner_message(json::array()).ok());
  EXPECT_FALSE(parse_runner_message(json(nullptr)).ok());
  const auto missing = parse_runner_message(json{{"job_id", "x"}});
  ASSERT_FALSE(missing.ok());
  EXPECT_NE(missing.error().message.find("'type'"), std::string::npos);
  EXPECT_FALSE(parse_runner_message(json{{"type", 3}}).ok());
  const auto unknown = parse_runner_message(json{{"type", "launch_missiles"}});
  ASSERT_FALSE(unknown.ok());
  EXPECT_EQ(unknown.error().code, errc::protocol);
  EXPECT_NE(unknown.error().message.find("launch_missiles"), std::string::npos);
}

TEST(RunnerMessages, RefusesMissingFields) {
  for (const char* field :
       {"job_id", "tool", "args", "worktree", "cwd", "env", "timeout_ms", "max_output_bytes",
        "program", "runs_commands", "warm_worker", "read_only"}) {
    json wire = to_json(sample_job());
    wire.erase(field);
    expect_refused(wire, "job", field);
  }
  expect_refused(json{{"type", "handshake"}, {"lane", "net"}, {"version", 1}}, "handshake", "pid");
  expect_refused(json{{"type", "heartbeat"}}, "heartbeat", "seq");
  expect_refused(json{{"type", "cancel_ack"}, {"job_id", "j"}}, "cancel_ack", "found");
  expect_refused(json{{"type", "output_chunk"}, {"job_id", "j"}, {"stream", "stdout"}},
                 "output_chunk", "data");
}

TEST(RunnerMessages, RefusesWrongFieldTypes) {
  auto with = [](const char* field, json value) {
    json wire = to_json(sample_job());
    wire[field] = std::move(value);
    return wire;
  };
  expect_refused(with("job_id", 42), "job", "job_id");
  expect_refused(with("tool", json::array()), "job", "tool");
  expect_refused(with("args", "{}"), "job", "args");
  expect_refused(with("args", json::array()), "job", "args");
  expect_refused(with("env", json::array()), "job", "env");
  expect_refused(with("env", json{{"A", 1}}), "job", "env.A");
  expect_refused(with("timeout_ms", "30000"), "job", "timeout_ms");
  expect_refused(with("timeout_ms", 1.5), "job", "timeout_ms");
  expect_refused(with("timeout_ms", true), "job", "timeout_ms");
  expect_refused(with("runs_commands", "yes"), "job", "runs_commands");
  expect_refused(with("program", 1), "job", "program");
  expect_refused(json{{"type", "cancel_ack"}, {"job_id", "j"}, {"found", 1}}, "cancel_ack",
                 "found");
}

TEST(RunnerMessages, RefusesNegativeAndOversizedNumbers) {
  json job = to_json(sample_job());
  job["timeout_ms"] = -1;
  expect_refused(job, "job", "timeout_ms");
  job = to_json(sample_job());
  job["max_output_bytes"] = (std::uint64_t{1} << 53);
  expect_refused(job, "job", "max_output_bytes");
  job["max_output_bytes"] = std::numeric_limits<std::uint64_t>::max();
  expect_refused(job, "job", "max_output_bytes");

  json hs = to_json(Handshake{"net", 10, 1});
  hs["pid"] = 0;
  expect_refused(hs, "handshake", "pid");
  hs["pid"] = std::int64_t{1} << 31;
  expect_refused(hs, "handshake", "pid");
  hs["pid"] = -5;
  expect_refused(hs, "handshake", "pid");

  json ack = to_json(HandshakeAck{true, 1, std::nullopt});
  ack["slots"] = kMaxRunnerSlots + 1;
  expect_refused(ack, "handshake_ack", "slots");

  json result = to_json(JobResult{"j", JobStatus::success, "", "", 0, 1, false, std::nullopt});
  result["exit_code"] = std::int64_t{1} << 40;
  expect_refused(result, "result", "exit_code");
  result["exit_code"] = nullptr;  // null means absent
  EXPECT_TRUE(parse_runner_message(result).ok());
  result["exit_code"] = -9;
  EXPECT_EQ(std::get<JobResult>(*parse_runner_message(result)).exit_code, -9);
}

TEST(RunnerMessages, RefusesEmptyAndOverlongJobIds) {
  expect_refused(json{{"type", "cancel"}, {"job_id", ""}}, "cancel", "job_id");
  expect_refused(json{{"type", "cancel"}, {"job_id", std::string(kMaxJobIdBytes + 1, 'j')}},
                 "cancel", "job_id");
}

TEST(RunnerMessages, RefusesBadEnumValues) {
  expect_refused(json{{"type", "output_chunk"}, {"job_id", "j"}, {"stream", "stdin"}, {"data", ""}},
                 "output_chunk", "stream");
  json result = to_json(JobResult{"j", JobStatus::success, "", "", 0, 1, false, std::nullopt});
  result["status"] = "exploded";
  expect_refused(result, "result", "status");
}

TEST(RunnerMessages, RefusesBadBase64AndAmbiguousBytes) {
  const json base = {{"type", "output_chunk"}, {"job_id", "j"}, {"stream", "stdout"}};
  json bad = base;
  bad["data_b64"] = "not base64!";
  expect_refused(bad, "output_chunk", "data_b64");
  bad["data_b64"] = "Zg=";
  expect_refused(bad, "output_chunk", "data_b64");
  json both = base;
  both["data"] = "f";
  both["data_b64"] = "Zg==";
  expect_refused(both, "output_chunk", "data");
  json good = base;
  good["data_b64"] = "Zg==";
  EXPECT_EQ(std::get<OutputChunk>(*parse_runner_message(good)).data, "f");
}

TEST(RunnerMessages, IgnoresUnknownExtraFields) {
  json wire = to_json(Heartbeat{3});
  wire["future_field"] = {1, 2};
  const auto r = parse_runner_message(wire);
  ASSERT_TRUE(r.ok());
  EXPECT_EQ(std::get<Heartbeat>(*r).seq, 3u);
}

}  // namespace
}  // namespace loopr::proto
