// Wire-codec throughput: frame and line encode/decode at three payload sizes,
// and parsing a typical runner job. Run by hand (bench/README.md), never as a
// timed test:  build/bin/codec_bench --benchmark_min_time=0.5
#include <benchmark/benchmark.h>

#include <string>

#include "proto/frame_codec.hpp"
#include "proto/line_codec.hpp"
#include "proto/runner_messages.hpp"

namespace {

namespace proto = loopr::proto;
using nlohmann::json;

// A message whose JSON payload is about `bytes` long.
json message_of_size(std::int64_t bytes) {
  json out = {{"type", "output_chunk"}, {"job_id", "job-1"}, {"stream", "stdout"}};
  const auto base = static_cast<std::int64_t>(out.dump().size()) + 10;
  out["data"] = std::string(static_cast<std::size_t>(bytes > base ? bytes - base : 1), 'x');
  return out;
}

void BM_EncodeFrame(benchmark::State& state) {
  const json message = message_of_size(state.range(0));
  for (auto _ : state) {
    auto frame = proto::encode_frame(message);
    benchmark::DoNotOptimize(frame);
  }
  state.SetBytesProcessed(state.iterations() * state.range(0));
}

void BM_DecodeFrame(benchmark::State& state) {
  const std::string frame = *proto::encode_frame(message_of_size(state.range(0)));
  proto::FrameReader reader;
  for (auto _ : state) {
    reader.feed(frame);
    auto object = reader.next();
    benchmark::DoNotOptimize(object);
  }
  state.SetBytesProcessed(state.iterations() * static_cast<std::int64_t>(frame.size()));
}

void BM_EncodeLine(benchmark::State& state) {
  const json message = message_of_size(state.range(0));
  for (auto _ : state) {
    auto line = proto::encode_line(message);
    benchmark::DoNotOptimize(line);
  }
  state.SetBytesProcessed(state.iterations() * state.range(0));
}

void BM_DecodeLine(benchmark::State& state) {
  const std::string line = *proto::encode_line(message_of_size(state.range(0)));
  proto::LineReader reader;
  for (auto _ : state) {
    reader.feed(line);
    auto object = reader.next();
    benchmark::DoNotOptimize(object);
  }
  state.SetBytesProcessed(state.iterations() * static_cast<std::int64_t>(line.size()));
}

void BM_ParseRunnerJob(benchmark::State& state) {
  proto::Job job;
  job.job_id = "01JD3M6W4K8Q";
  job.tool = "read_file";
  job.args = {{"path", "src/daemon/tool_router.cpp"}, {"offset", 0}, {"limit", 400}};
  job.worktree = "/home/dev/src/loopr";
  job.cwd = "/home/dev/src/loopr";
  job.env = {{"LANG", "C.UTF-8"}, {"PATH", "/usr/bin:/bin"}, {"HOME", "/nonexistent"}};
  job.timeout_ms = 30000;
  job.max_output_bytes = 1 << 20;
  const json wire = proto::to_json(job);
  for (auto _ : state) {
    auto message = proto::parse_runner_message(wire);
    benchmark::DoNotOptimize(message);
  }
}

}  // namespace

BENCHMARK(BM_EncodeFrame)->Arg(100)->Arg(4 << 10)->Arg(1 << 20);
BENCHMARK(BM_DecodeFrame)->Arg(100)->Arg(4 << 10)->Arg(1 << 20);
BENCHMARK(BM_EncodeLine)->Arg(100)->Arg(4 << 10)->Arg(1 << 20);
BENCHMARK(BM_DecodeLine)->Arg(100)->Arg(4 << 10)->Arg(1 << 20);
BENCHMARK(BM_ParseRunnerJob);

BENCHMARK_MAIN();
