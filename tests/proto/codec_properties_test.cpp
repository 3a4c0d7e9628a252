// Property tests: round trips under arbitrary chunking and arbitrary field
// values, and "never crashes" for arbitrary input to every decoder.
#include <gtest/gtest.h>
#include <rapidcheck.h>
#include <rapidcheck/gtest.h>

#include <string>
#include <vector>

#include "common/utf8.hpp"
#include "proto/base64.hpp"
#include "proto/control_messages.hpp"
#include "proto/frame_codec.hpp"
#include "proto/json_bounded.hpp"
#include "proto/line_codec.hpp"
#include "proto/runner_messages.hpp"

namespace loopr::proto {
namespace {

using nlohmann::json;

// ---- generators (only valid inside a property) ----

std::string any_bytes() {
  return *rc::gen::container<std::string>(
      rc::gen::map(rc::gen::inRange(0, 256), [](int b) { return static_cast<char>(b); }));
}

std::string any_text() {
  return *rc::gen::oneOf(
      rc::gen::map(rc::gen::arbitrary<std::string>(), to_lossy_utf8),
      rc::gen::map(rc::gen::container<std::string>(rc::gen::map(
                       rc::gen::inRange(0, 256), [](int b) { return static_cast<char>(b); })),
                   to_lossy_utf8));
}

std::string any_id(std::size_t max_bytes) {
  std::string text = any_text();
  text.resize(utf8_safe_prefix(text, max_bytes));
  return text.empty() ? std::string("id") : text;
}

std::uint64_t any_u64(std::uint64_t max) {
  return *rc::gen::oneOf(rc::gen::just<std::uint64_t>(0), rc::gen::just(max),
                         rc::gen::inRange<std::uint64_t>(0, max));
}

json any_args() {
  json args = json::object();
  const auto count = *rc::gen::inRange(0, 5);
  for (int i = 0; i < count; ++i) {
    const std::string key = any_text();
    switch (*rc::gen::inRange(0, 4)) {
      case 0:
        args[key] = any_text();
        break;
      case 1:
        args[key] = *rc::gen::arbitrary<std::int64_t>();
        break;
      case 2:
        args[key] = *rc::gen::arbitrary<bool>();
        break;
      default:
        args[key] = json{{"nested", json::array({any_text(), nullptr})}};
        break;
    }
  }
  return args;
}

std::optional<std::string> maybe_text() {
  if (*rc::gen::arbitrary<bool>()) return any_text();
  return std::nullopt;
}

RunnerMessage any_runner_message() {
  constexpr std::uint64_t kSafe = (std::uint64_t{1} << 53) - 1;
  switch (*rc::gen::inRange(0, 11)) {
    case 0:
      return Handshake{any_id(64), *rc::gen::inRange<std::int32_t>(1, 0x7FFFFFFF),
                       *rc::gen::arbitrary<std::uint32_t>()};
    case 1:
      return HandshakeAck{*rc::gen::arbitrary<bool>(),
                          static_cast<std::uint32_t>(any_u64(kMaxRunnerSlots)), maybe_text()};
    case 2: {
      Job job;
      job.job_id = any_id(kMaxJobIdBytes);
      job.tool = any_id(256);
      job.args = any_args();
      job.worktree = any_text();
      job.cwd = any_text();
      const auto n = *rc::gen::inRange(0, 4);
      for (int i = 0; i < n; ++i)
        job.env[any_text()] = any_text();
      job.timeout_ms = any_u64(kSafe);
      job.max_output_bytes = any_u64(kSafe);
      job.traits = {.program = *rc::gen::arbitrary<bool>() ? JobProgram::fetch : JobProgram::tool,
                    .runs_commands = *rc::gen::arbitrary<bool>(),
                    .warm_worker = *rc::gen::arbitrary<bool>(),
                    .read_only = *rc::gen::arbitrary<bool>()};
      return job;
    }
    case 3:
      return JobAck{any_id(kMaxJobIdBytes)};
    case 4:
      return OutputChunk{
          any_id(kMaxJobIdBytes),
          *rc::gen::element(OutputStream::standard_output, OutputStream::standard_error),
          any_bytes()};
    case 5: {
      JobResult r;
      r.job_id = any_id(kMaxJobIdBytes);
      r.status = *rc::gen::element(JobStatus::success, JobStatus::failed, JobStatus::timeout,
                                   JobStatus::cancelled, JobStatus::error);
      r.output = any_bytes();
      r.stderr_bytes = any_bytes();
      if (*rc::gen::arbitrary<bool>()) r.exit_code = *rc::gen::arbitrary<std::int32_t>();
      r.duration_ms = any_u64(kSafe);
      r.truncated = *rc::gen::arbitrary<bool>();
      r.error = maybe_text();
      return r;
    }
    case 6:
      return Cancel{any_id(kMaxJobIdBytes)};
    case 7:
      return CancelAck{any_id(kMaxJobIdBytes), *rc::gen::arbitrary<bool>()};
    case 8:
      return Heartbeat{any_u64(kSafe)};
    case 9:
      return HeartbeatAck{any_u64(kSafe)};
    default:
      return Shutdown{};
  }
}

// Splits `bytes` into chunks: one byte each, or random sizes (some empty).
std::vector<std::string> chunked(const std::string& bytes) {
  std::vector<std::string> out;
  const bool single = *rc::gen::arbitrary<bool>();
  std::size_t pos = 0;
  while (pos < bytes.size()) {
    // rapidcheck shrinks sizes towards 0: every chunk but the empty ones
    // advances by at least one byte.
    if (!single && *rc::gen::inRange(0, 8) == 1) out.emplace_back();
    const std::size_t n = single ? 1 : std::size_t{1} + *rc::gen::inRange<std::size_t>(0, 300);
    out.push_back(bytes.substr(pos, n));
    pos += n;
  }
  return out;
}

json any_object() {
  json object = any_args();
  object["seq"] = *rc::gen::arbitrary<std::uint32_t>();
  return object;
}

template <class Reader>
std::vector<json> feed_all(Reader& reader, const std::vector<std::string>& chunks) {
  std::vector<json> out;
  for (const auto& chunk : chunks) {
    reader.feed(chunk);
    while (true) {
      auto r = reader.next();
      RC_ASSERT(r.ok());
      if (!r->has_value()) break;
      out.push_back(std::move(**r));
    }
  }
  return out;
}

// ---- round trips ----

RC_GTEST_PROP(Properties, FramesRoundTripUnderAnyChunking, ()) {
  const auto objects = *rc::gen::container<std::vector<json>>(rc::gen::exec(any_object));
  std::string bytes;
  for (const auto& object : objects) {
    auto frame = encode_frame(object);
    RC_ASSERT(frame.ok());
    bytes += *frame;
  }
  FrameReader reader;
  RC_ASSERT(feed_all(reader, chunked(bytes)) == objects);
  RC_ASSERT(reader.buffered() == 0u);
}

RC_GTEST_PROP(Properties, LinesRoundTripUnderAnyChunking, ()) {
  const auto objects = *rc::gen::container<std::vector<json>>(rc::gen::exec(any_object));
  std::string bytes;
  for (const auto& object : objects) {
    auto line = encode_line(object);
    RC_ASSERT(line.ok());
    if (*rc::gen::arbitrary<bool>()) line->insert(line->size() - 1, "\r");
    if (*rc::gen::arbitrary<bool>()) bytes += "\n";
    bytes += *line;
  }
  LineReader reader;
  RC_ASSERT(feed_all(reader, chunked(bytes)) == objects);
}

RC_GTEST_PROP(Properties, RunnerMessagesRoundTripThroughJson, ()) {
  const RunnerMessage message = any_runner_message();
  auto parsed = parse_runner_message(to_json(message));
  RC_ASSERT(parsed.ok());
  RC_ASSERT(*parsed == message);
}

RC_GTEST_PROP(Properties, RunnerMessagesRoundTripThroughFrames, ()) {
  const auto messages =
      *rc::gen::container<std::vector<RunnerMessage>>(rc::gen::exec(any_runner_message));
  std::string bytes;
  for (const auto& message : messages) {
    auto frame = encode_frame(to_json(message));
    RC_ASSERT(frame.ok());
    bytes += *frame;
  }
  FrameReader reader;
  const auto objects = feed_all(reader, chunked(bytes));
  RC_ASSERT(objects.size() == messages.size());
  for (std::size_t i = 0; i < objects.size(); ++i) {
    auto parsed = parse_runner_message(objects[i]);
    RC_ASSERT(parsed.ok());
    RC_ASSERT(*parsed == messages[i]);
  }
}

RC_GTEST_PROP(Properties, Base64RoundTrips, ()) {
  const std::string bytes = any_bytes();
  const std::string encoded = base64_encode(bytes);
  RC_ASSERT(encoded.size() % 4 == 0);
  auto decoded = base64_decode(encoded);
  RC_ASSERT(decoded.ok());
  RC_ASSERT(*decoded == bytes);
}

RC_GTEST_PROP(Properties, RequestsRoundTrip, (std::int64_t id)) {
  const Request request{id, any_id(64), any_args()};
  auto parsed = parse_request(to_json(request));
  RC_ASSERT(parsed.ok());
  RC_ASSERT(*parsed == request);
}

// ---- decoders never crash ----

RC_GTEST_PROP(Properties, FrameReaderSurvivesArbitraryBytes, ()) {
  const std::string bytes = any_bytes();
  FrameReader reader(*rc::gen::element<std::size_t>(8, 64, kMaxFramePayload));
  for (const auto& chunk : chunked(bytes)) {
    reader.feed(chunk);
    for (int i = 0; i < 4; ++i) {
      auto r = reader.next();
      if (!r.ok() || !r->has_value()) break;
      RC_ASSERT((*r)->is_object());
    }
  }
}

RC_GTEST_PROP(Properties, FrameReaderSurvivesCorruptedFrames, ()) {
  std::string bytes;
  const auto count = *rc::gen::inRange(1, 4);
  for (int i = 0; i < count; ++i)
    bytes += *encode_frame(to_json(any_runner_message()));
  const auto flips = *rc::gen::inRange(1, 4);
  for (int i = 0; i < flips; ++i) {
    const auto at = *rc::gen::inRange<std::size_t>(0, bytes.size());
    bytes[at] = static_cast<char>(*rc::gen::inRange(0, 256));
  }
  FrameReader reader;
  for (const auto& chunk : chunked(bytes)) {
    reader.feed(chunk);
    while (true) {
      auto r = reader.next();
      if (!r.ok()) {
        RC_ASSERT(reader.failed());
        break;
      }
      if (!r->has_value()) break;
      (void)parse_runner_message(**r);
    }
  }
}

RC_GTEST_PROP(Properties, LineReaderSurvivesArbitraryBytes, ()) {
  const std::string bytes = any_bytes();
  LineReader reader(*rc::gen::element<std::size_t>(4, 64, kMaxLineBytes));
  for (const auto& chunk : chunked(bytes)) {
    reader.feed(chunk);
    for (int i = 0; i < 8; ++i) {
      auto r = reader.next();
      if (!r.ok() || !r->has_value()) break;
    }
  }
  RC_ASSERT(reader.buffered() <= bytes.size());
}

RC_GTEST_PROP(Properties, JsonBoundedSurvivesArbitraryBytes, ()) {
  const std::string bytes = any_bytes();
  auto r = parse_json_bounded(bytes, 4);
  if (r.ok()) RC_ASSERT(json_depth_within(r->dump(), 4));
}

// Mutates one field of a valid message: deleted, or replaced by a value of
// an arbitrary JSON type.
RC_GTEST_PROP(Properties, RunnerParserSurvivesMutatedMessages, ()) {
  json wire = to_json(any_runner_message());
  std::vector<std::string> keys;
  for (const auto& item : wire.items())
    keys.push_back(item.key());
  const std::string key = *rc::gen::elementOf(keys);
  switch (*rc::gen::inRange(0, 8)) {
    case 0:
      wire.erase(key);
      break;
    case 1:
      wire[key] = nullptr;
      break;
    case 2:
      wire[key] = *rc::gen::arbitrary<std::int64_t>();
      break;
    case 3:
      wire[key] = *rc::gen::arbitrary<std::uint64_t>();
      break;
    case 4:
      wire[key] = *rc::gen::arbitrary<double>();
      break;
    case 5:
      wire[key] = any_text();
      break;
    case 6:
      wire[key] = json::array({any_text()});
      break;
    default:
      wire[key + "_b64"] = any_text();
      break;
  }
  auto parsed = parse_runner_message(wire);
  if (!parsed.ok()) {
    RC_ASSERT(parsed.error().code == errc::protocol);
    RC_ASSERT(!parsed.error().message.empty());
  }
}

RC_GTEST_PROP(Properties, ControlParsersSurviveArbitraryLines, ()) {
  const std::string bytes = any_bytes();
  LineReader reader;
  reader.feed(bytes);
  reader.feed("\n");
  for (int i = 0; i < 16; ++i) {
    auto r = reader.next();
    if (!r.ok()) {
      const Response reply = error_reply(r.error());
      RC_ASSERT(reply.is_error());
      continue;
    }
    if (!r->has_value()) break;
    const json& value = **r;
    (void)parse_request(value);
    (void)parse_server_message(value);
    (void)parse_runner_message(value);
    (void)parse_tool_call_params(value);
  }
}

}  // namespace
}  // namespace loopr::proto
