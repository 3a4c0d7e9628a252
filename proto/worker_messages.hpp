// The warm worker's link (runner <-> `loopr-tool --serve`, one socketpair per
// worker; runner/warm_workers.hpp). Frames as on the runner link (4-byte
// big-endian length), but a payload is a one-line JSON header, a '\n', and a
// body kept as raw bytes, so neither a tool's arguments nor its output is
// escaped and parsed once more on the way:
//   worker -> runner, once, first:  {"type":"ready","no_process_filter":true}
//   runner -> worker:  {"type":"call","tool":NAME,"max_output_bytes":CAP}
//                      body: the arguments' JSON text
//   worker -> runner:  {"type":"reply","exit_code":N,"truncated":B}
//                      body: what loopr-tool would print on stdout, held
//                      within CAP as the runner holds a process job's stdout
//                      (common/output_capture.hpp), so a reply stays small
// One call at a time: the runner sends the next call only after the reply.
// Pure codecs: no I/O; every function returns loopr::Result and never throws.
#pragma once

#include <cstddef>
#include <cstdint>
#include <string>
#include <string_view>
#include <variant>

#include "common/error.hpp"
#include "proto/frame_codec.hpp"

namespace loopr::proto {

// A call's arguments may be as large as a runner frame; a header is small.
inline constexpr std::size_t kMaxWorkerPayload = kMaxFramePayload + 4096;

struct WorkerReady {
  bool no_process_filter = false;  // the worker installed the filter it was given
};

struct WorkerCall {
  std::string tool;
  std::string args_json;
  std::uint64_t max_output_bytes = 0;  // 0: no cap
};

struct WorkerReply {
  int exit_code = 0;
  std::string stdout_text;
  bool truncated = false;  // stdout_text is the capture of a longer output
};

using WorkerMessage = std::variant<WorkerReady, WorkerCall, WorkerReply>;

// A whole frame (header + payload) for `message`.
Result<std::string> encode_worker_frame(const WorkerMessage& message);

// Parses one payload from FrameReader::next_payload().
Result<WorkerMessage> parse_worker_payload(std::string_view payload);

}  // namespace loopr::proto
