#include "proto/runner_messages.hpp"

#include <array>
#include <limits>
#include <utility>

#include "common/utf8.hpp"
#include "proto/json_fields.hpp"

namespace loopr::proto {
namespace {

using detail::FieldReader;
using detail::put_bytes;
using nlohmann::json;

constexpr std::array<std::string_view, std::variant_size_v<RunnerMessage>> kTypeNames = {
    "handshake", "handshake_ack", "job",       "job_ack",       "output_chunk", "result",
    "cancel",    "cancel_ack",    "heartbeat", "heartbeat_ack", "shutdown"};

constexpr std::array<std::string_view, 5> kStatusNames = {"success", "failed", "timeout",
                                                          "cancelled", "error"};

json object_of(std::string_view type) {
  return json{{"type", std::string(type)}};
}

json encode(const Handshake& m) {
  json out = object_of("handshake");
  out["lane"] = m.lane;
  out["pid"] = m.pid;
  out["version"] = m.version;
  return out;
}

json encode(const HandshakeAck& m) {
  json out = object_of("handshake_ack");
  out["accepted"] = m.accepted;
  out["slots"] = m.slots;
  if (m.reason) out["reason"] = *m.reason;
  return out;
}

json encode(const Job& m) {
  json out = object_of("job");
  out["job_id"] = m.job_id;
  out["tool"] = m.tool;
  out["args"] = m.args.is_object() ? m.args : json::object();
  out["worktree"] = m.worktree;
  out["cwd"] = m.cwd;
  out["env"] = m.env;
  out["timeout_ms"] = m.timeout_ms;
  out["max_output_bytes"] = m.max_output_bytes;
  if (!m.egress_token.empty()) out["egress_token"] = m.egress_token;
  out["program"] = m.traits.program == JobProgram::fetch ? "loopr-fetch" : "loopr-tool";
  out["runs_commands"] = m.traits.runs_commands;
  out["warm_worker"] = m.traits.warm_worker;
  out["read_only"] = m.traits.read_only;
  return out;
}

json encode(const JobAck& m) {
  json out = object_of("job_ack");
  out["job_id"] = m.job_id;
  return out;
}

json encode(const OutputChunk& m) {
  json out = object_of("output_chunk");
  out["job_id"] = m.job_id;
  out["stream"] = std::string(to_string(m.stream));
  put_bytes(out, "data", m.data);
  return out;
}

json encode(const JobResult& m) {
  json out = object_of("result");
  out["job_id"] = m.job_id;
  out["status"] = std::string(to_string(m.status));
  put_bytes(out, "output", m.output);
  put_bytes(out, "stderr", m.stderr_bytes);
  if (m.exit_code) out["exit_code"] = *m.exit_code;
  out["duration_ms"] = m.duration_ms;
  out["truncated"] = m.truncated;
  if (m.error) out["error"] = *m.error;
  if (m.limit) {
    out["limit"] = {{"name", m.limit->name},
                    {"key", m.limit->key},
                    {"value", m.limit->value},
                    {"unit", m.limit->unit},
                    {"message", m.limit->message}};
  }
  return out;
}

json encode(const Cancel& m) {
  json out = object_of("cancel");
  out["job_id"] = m.job_id;
  return out;
}

json encode(const CancelAck& m) {
  json out = object_of("cancel_ack");
  out["job_id"] = m.job_id;
  out["found"] = m.found;
  return out;
}

json encode(const Heartbeat& m) {
  json out = object_of("heartbeat");
  out["seq"] = m.seq;
  return out;
}

json encode(const HeartbeatAck& m) {
  json out = object_of("heartbeat_ack");
  out["seq"] = m.seq;
  return out;
}

json encode(const Shutdown&) {
  return object_of("shutdown");
}

// One decoder per alternative, indexed like RunnerMessage.
template <class T>
T decode(FieldReader& f);

template <>
Handshake decode<Handshake>(FieldReader& f) {
  Handshake m;
  m.lane = f.identifier("lane", 64);
  m.pid = static_cast<std::int32_t>(
      f.signed_integer("pid", 1, std::numeric_limits<std::int32_t>::max()));
  m.version = static_cast<std::uint32_t>(
      f.unsigned_integer("version", std::numeric_limits<std::uint32_t>::max()));
  return m;
}

template <>
HandshakeAck decode<HandshakeAck>(FieldReader& f) {
  HandshakeAck m;
  m.accepted = f.boolean("accepted");
  m.slots = static_cast<std::uint32_t>(f.unsigned_integer("slots", kMaxRunnerSlots));
  m.reason = f.optional_text("reason");
  return m;
}

template <>
Job decode<Job>(FieldReader& f) {
  Job m;
  m.job_id = f.identifier("job_id", kMaxJobIdBytes);
  m.tool = f.identifier("tool", 256);
  m.args = f.object("args");
  m.worktree = f.text("worktree");
  m.cwd = f.text("cwd");
  m.env = f.string_map("env");
  m.timeout_ms = f.unsigned_integer("timeout_ms");
  m.max_output_bytes = f.unsigned_integer("max_output_bytes");
  m.egress_token = f.optional_text("egress_token", 128).value_or("");
  const std::string program = f.text("program", 32);
  if (f.ok() && program != "loopr-tool" && program != "loopr-fetch") {
    f.fail("program", "must be \"loopr-tool\" or \"loopr-fetch\"");
  }
  m.traits.program = program == "loopr-fetch" ? JobProgram::fetch : JobProgram::tool;
  m.traits.runs_commands = f.boolean("runs_commands");
  m.traits.warm_worker = f.boolean("warm_worker");
  m.traits.read_only = f.boolean("read_only");
  return m;
}

template <>
JobAck decode<JobAck>(FieldReader& f) {
  return JobAck{f.identifier("job_id", kMaxJobIdBytes)};
}

template <>
OutputChunk decode<OutputChunk>(FieldReader& f) {
  OutputChunk m;
  m.job_id = f.identifier("job_id", kMaxJobIdBytes);
  const std::string stream = f.text("stream");
  if (f.ok()) {
    if (stream == "stdout") {
      m.stream = OutputStream::standard_output;
    } else if (stream == "stderr") {
      m.stream = OutputStream::standard_error;
    } else {
      f.fail("stream", "must be \"stdout\" or \"stderr\"");
    }
  }
  m.data = f.bytes("data");
  return m;
}

template <>
JobResult decode<JobResult>(FieldReader& f) {
  JobResult m;
  m.job_id = f.identifier("job_id", kMaxJobIdBytes);
  const std::string status = f.text("status");
  if (f.ok()) {
    bool known = false;
    for (std::size_t i = 0; i < kStatusNames.size(); ++i) {
      if (status == kStatusNames[i]) {
        m.status = static_cast<JobStatus>(i);
        known = true;
      }
    }
    if (!known) f.fail("status", "must be one of success, failed, timeout, cancelled, error");
  }
  m.output = f.bytes("output");
  m.stderr_bytes = f.bytes("stderr");
  if (const auto code = f.optional_signed("exit_code", std::numeric_limits<std::int32_t>::min(),
                                          std::numeric_limits<std::int32_t>::max())) {
    m.exit_code = static_cast<std::int32_t>(*code);
  }
  m.duration_ms = f.unsigned_integer("duration_ms");
  m.truncated = f.boolean("truncated");
  m.error = f.optional_text("error");
  if (f.has("limit")) {
    const json limit = f.object("limit");
    FieldReader l(limit, "result.limit");
    LimitHit hit;
    hit.name = l.text("name", 64);
    hit.key = l.text("key", 256);
    hit.value = l.unsigned_integer("value");
    hit.unit = l.text("unit", 32);
    hit.message = l.text("message", 4096);
    if (!l.ok()) {
      f.fail("limit", l.take_error().message);
    } else {
      m.limit = std::move(hit);
    }
  }
  return m;
}

template <>
Cancel decode<Cancel>(FieldReader& f) {
  return Cancel{f.identifier("job_id", kMaxJobIdBytes)};
}

template <>
CancelAck decode<CancelAck>(FieldReader& f) {
  CancelAck m;
  m.job_id = f.identifier("job_id", kMaxJobIdBytes);
  m.found = f.boolean("found");
  return m;
}

template <>
Heartbeat decode<Heartbeat>(FieldReader& f) {
  return Heartbeat{f.unsigned_integer("seq")};
}

template <>
HeartbeatAck decode<HeartbeatAck>(FieldReader& f) {
  return HeartbeatAck{f.unsigned_integer("seq")};
}

template <>
Shutdown decode<Shutdown>(FieldReader&) {
  return Shutdown{};
}

template <std::size_t I = 0>
Result<RunnerMessage> decode_index(std::size_t index, const json& object, std::string_view type) {
  if constexpr (I < std::variant_size_v<RunnerMessage>) {
    if (index != I) return decode_index<I + 1>(index, object, type);
    using T = std::variant_alternative_t<I, RunnerMessage>;
    FieldReader f(object, "runner message '" + std::string(type) + "'",
                  json{{"type", std::string(type)}});
    T message = decode<T>(f);
    if (!f.ok()) return f.take_error();
    return RunnerMessage(std::in_place_index<I>, std::move(message));
  } else {
    return make_error(errc::internal, "runner message index out of range");
  }
}

}  // namespace

std::string_view message_type(const RunnerMessage& message) {
  return kTypeNames[message.index()];
}

std::string_view to_string(JobStatus status) {
  return kStatusNames[static_cast<std::size_t>(status)];
}

std::string_view to_string(OutputStream stream) {
  return stream == OutputStream::standard_output ? "stdout" : "stderr";
}

json to_json(const RunnerMessage& message) {
  return std::visit([](const auto& m) { return encode(m); }, message);
}

Result<RunnerMessage> parse_runner_message(const json& object) {
  if (!object.is_object()) {
    return make_error(errc::protocol, std::string("runner message must be a JSON object, not ") +
                                          object.type_name());
  }
  const auto it = object.find("type");
  if (it == object.end() || !it->is_string()) {
    Error error = make_error(errc::protocol, "runner message has no string field 'type'");
    error.details = {{"field", "type"}};
    return error;
  }
  const auto& type = it->get_ref<const std::string&>();
  for (std::size_t i = 0; i < kTypeNames.size(); ++i) {
    if (type == kTypeNames[i]) return decode_index(i, object, type);
  }
  // The peer chose `type`: quote at most a short prefix of it.
  const std::string shown = type.substr(0, utf8_safe_prefix(type, 64));
  Error error = make_error(errc::protocol, "unknown runner message type '" + shown + "'");
  error.details = {{"type", shown}, {"field", "type"}};
  return error;
}

}  // namespace loopr::proto
