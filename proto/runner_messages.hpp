// Typed runner-protocol messages (DESIGN.md §4), carried one per frame
// (frame_codec.hpp) between looprd and loopr-runner.
//
// Wire form: a JSON object with a "type" field naming the message; unknown
// extra fields are ignored so either side may add optional fields.
// Bytes fields (OutputChunk::data, JobResult::output/stderr_bytes) are
// binary-safe: valid UTF-8 travels as a plain string "<name>", anything else
// as base64 in "<name>_b64"; the parser accepts either (never both).
// Text fields (ids, paths, env) must be valid UTF-8, or encode_frame refuses
// the frame.
#pragma once

#include <cstdint>
#include <map>
#include <nlohmann/json.hpp>
#include <optional>
#include <string>
#include <string_view>
#include <variant>

#include "common/error.hpp"

namespace loopr::proto {

// 2: a job carries its tool's traits (JobTraits).
inline constexpr std::uint32_t kRunnerProtocolVersion = 2;
inline constexpr std::size_t kMaxJobIdBytes = 256;
inline constexpr std::uint32_t kMaxRunnerSlots = 4096;

// runner → daemon, first frame on the link.
struct Handshake {
  std::string lane;
  std::int32_t pid = 0;                            // > 0
  std::uint32_t version = kRunnerProtocolVersion;  // runner protocol version
  bool operator==(const Handshake&) const = default;
};

// daemon → runner. `slots`: concurrent jobs the daemon will send (<= kMaxRunnerSlots).
struct HandshakeAck {
  bool accepted = false;
  std::uint32_t slots = 0;
  std::optional<std::string> reason;  // why it was refused
  bool operator==(const HandshakeAck&) const = default;
};

// Which sandboxed binary runs a job's tool. Wire "program": "loopr-tool" |
// "loopr-fetch".
enum class JobProgram { tool, fetch };

// What looprd's catalog says of a job's tool (config/tool_traits.hpp), so the
// runner decides by traits, never by the tool's name. Each is a wire field of
// the job and required there. The defaults are the cautious side.
struct JobTraits {
  JobProgram program = JobProgram::tool;
  // The job may run a shell command; a root runner then clears set-ID bits
  // the command left in the worktree (runner/set_id_sweep.hpp).
  bool runs_commands = true;
  // The lane's warm workers may serve it (a file tool that starts no process).
  bool warm_worker = false;
  // It changes nothing, so a warm worker lost under it is retried once.
  bool read_only = false;
  bool operator==(const JobTraits&) const = default;
};

// daemon → runner. Integers are capped at 2^53 - 1 on the wire.
struct Job {
  std::string job_id;  // non-empty, <= kMaxJobIdBytes
  std::string tool;
  nlohmann::json args = nlohmann::json::object();  // always an object
  std::string worktree;
  std::string cwd;
  std::map<std::string, std::string> env;
  std::uint64_t timeout_ms = 0;
  std::uint64_t max_output_bytes = 0;
  // Presented by the job to the lane's egress proxy (in its proxy URL), so
  // the proxy can tell which call a connection belongs to; empty: none.
  std::string egress_token;
  JobTraits traits;  // wire: program, runs_commands, warm_worker, read_only
  bool operator==(const Job&) const = default;
};

// runner → daemon: the job was accepted and started.
struct JobAck {
  std::string job_id;
  bool operator==(const JobAck&) const = default;
};

enum class OutputStream { standard_output, standard_error };  // "stdout" | "stderr"

// runner → daemon: streamed output of a running job.
struct OutputChunk {
  std::string job_id;
  OutputStream stream = OutputStream::standard_output;
  std::string data;  // bytes
  bool operator==(const OutputChunk&) const = default;
};

enum class JobStatus { success, failed, timeout, cancelled, error };

// runner → daemon: the job's final state; the last message about the job.
// A loopr limit that ended or cut a job, as the runner saw it: which limit,
// the loopr.toml key that raises it, its value, and one sentence for the
// model. Names: "memory" (the job's memory cgroup OOM-killed a process),
// "time" (the job's timeout).
struct LimitHit {
  std::string name;
  std::string key;
  std::uint64_t value = 0;
  std::string unit;  // "MiB", "ms", ...
  std::string message;
  bool operator==(const LimitHit&) const = default;
};

struct JobResult {
  std::string job_id;
  JobStatus status = JobStatus::success;
  std::string output;                     // bytes: the tool's stdout
  std::string stderr_bytes;               // bytes; wire name "stderr"
  std::optional<std::int32_t> exit_code;  // absent when killed or never started
  std::uint64_t duration_ms = 0;
  bool truncated = false;                        // output hit max_output_bytes
  std::optional<std::string> error;              // runner-side failure, for status error
  std::optional<LimitHit> limit = std::nullopt;  // a loopr limit that ended the job
  bool operator==(const JobResult&) const = default;
};

// daemon → runner.
struct Cancel {
  std::string job_id;
  bool operator==(const Cancel&) const = default;
};

// runner → daemon. `found`: the job was still running and is being stopped.
struct CancelAck {
  std::string job_id;
  bool found = false;
  bool operator==(const CancelAck&) const = default;
};

// daemon → runner; the runner echoes `seq` in a HeartbeatAck.
struct Heartbeat {
  std::uint64_t seq = 0;
  bool operator==(const Heartbeat&) const = default;
};

struct HeartbeatAck {
  std::uint64_t seq = 0;
  bool operator==(const HeartbeatAck&) const = default;
};

// daemon → runner: finish or cancel running jobs, then exit.
struct Shutdown {
  bool operator==(const Shutdown&) const = default;
};

using RunnerMessage = std::variant<Handshake, HandshakeAck, Job, JobAck, OutputChunk, JobResult,
                                   Cancel, CancelAck, Heartbeat, HeartbeatAck, Shutdown>;

// The wire "type" of a message ("handshake", ..., "result", ..., "shutdown").
std::string_view message_type(const RunnerMessage& message);
std::string_view to_string(JobStatus status);
std::string_view to_string(OutputStream stream);

// The wire object, ready for encode_frame(). Never throws.
nlohmann::json to_json(const RunnerMessage& message);

// Refuses (errc::protocol) a non-object, a missing or unknown "type", and a
// missing, mistyped, negative or out-of-range field; the message names the
// type and the field and details hold {"type", "field"}. Never throws.
Result<RunnerMessage> parse_runner_message(const nlohmann::json& object);

}  // namespace loopr::proto
