// LaneRunner: serves the runner protocol (DESIGN.md §4) on one link to the
// daemon, running each job in the lane's sandbox.
//
// Contract: single-threaded (a poll loop) in the contained runner process;
// it owns the link fd and every job's fds. Jobs beyond `slots` wait in a FIFO
// queue. A timed-out or cancelled job gets SIGTERM to its PID 1 (loopr-tool,
// which stops its command, every process of the job, and reports what it
// has), then SIGKILL to its PID 1 after the grace period, which tears down
// its PID namespace. The file tools go to the lane's warm workers instead
// (warm_workers.hpp) when one can take the call; their calls count against
// the same slots. Output is held within the job's max_output_bytes per
// stream (OutputCapture), lowered if need be so that a result always fits in
// one frame; with stream_output (the heavy lane) it is also sent as
// output_chunk frames as it arrives, and job pipes are not read while the
// outgoing buffer is above its high-water mark, so a slow daemon slows the
// job instead of growing the runner.
#pragma once

#include <chrono>
#include <cstdint>
#include <deque>
#include <memory>
#include <string>
#include <vector>

#include "common/output_capture.hpp"
#include "common/unique_fd.hpp"
#include "proto/frame_codec.hpp"
#include "proto/runner_messages.hpp"
#include "runner/contain.hpp"
#include "runner/warm_workers.hpp"

namespace loopr::runner {

struct LaneRunnerOptions {
  int slots = 2;  // jobs and warm-worker calls at once
  WarmWorkerOptions warm_workers;
  bool stream_output = false;
  std::chrono::milliseconds term_grace{500};
  std::vector<std::string> writable_roots;  // job worktrees must lie beneath one
};

class LaneRunner {
 public:
  LaneRunner(const LaneSandbox& sandbox, UniqueFd link, LaneRunnerOptions options);
  ~LaneRunner();

  // Sends the handshake, then serves until a shutdown request or until the
  // peer closes the link. Returns the process exit status: 0 after a clean
  // shutdown or close, 1 after a protocol error or a refused handshake.
  int serve();

 private:
  struct ActiveJob;
  using Clock = std::chrono::steady_clock;

  void handle_message(proto::RunnerMessage message);
  void accept_job(proto::Job job);
  void start_queued_jobs();
  void start_job(proto::Job job);
  void start_process_job(proto::Job job, std::uint64_t output_cap,
                         std::chrono::milliseconds timeout);
  void cancel(const std::string& job_id);
  void read_job_stream(ActiveJob& job, bool is_stdout);
  void finish_job(ActiveJob& job);
  void enforce_deadlines(Clock::time_point now);
  void send(const proto::RunnerMessage& message);
  void send_error_result(const std::string& job_id, const std::string& message);
  bool flush_outbox();
  int next_timeout_ms(Clock::time_point now) const;

  const LaneSandbox& sandbox_;
  UniqueFd link_;
  LaneRunnerOptions options_;
  proto::FrameReader reader_;
  std::string outbox_;
  std::size_t outbox_offset_ = 0;
  std::deque<proto::Job> queue_;
  std::vector<std::unique_ptr<ActiveJob>> active_;
  WarmWorkers workers_;
  bool handshake_done_ = false;
  bool shutting_down_ = false;
  bool link_failed_ = false;
};

}  // namespace loopr::runner
