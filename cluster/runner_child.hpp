// RunnerChild: a worker's own lane runner (docs/cluster.md). The worker
// starts an ordinary `loopr-runner --lane L --fd 3 ...` — the same sandbox
// a local lane has, so every SECURITY.md guarantee of the lane holds on the
// worker — and speaks the runner protocol to it (proto/runner_messages.hpp)
// as looprd's RunnerLink does, without asio: one reader thread, and run()
// blocking the slot thread that calls it.
//
// Threads: run() and cancel() from any thread, concurrently (one job each).
#pragma once

#include <sys/types.h>

#include <condition_variable>
#include <functional>
#include <map>
#include <memory>
#include <mutex>
#include <string>
#include <thread>
#include <vector>

#include "common/error.hpp"
#include "common/unique_fd.hpp"
#include "proto/runner_messages.hpp"

namespace loopr::cluster {

class RunnerChild {
 public:
  using OutputSink = std::function<void(const proto::OutputChunk& chunk)>;

  // Starts the runner (argv[0] an absolute path; "--fd 3" is added) and
  // waits for its handshake. Call before any other thread of the process
  // exists, or at least before libnats starts its own: the child is forked.
  static Result<std::unique_ptr<RunnerChild>> start(std::vector<std::string> argv,
                                                    std::uint32_t slots);
  ~RunnerChild();
  RunnerChild(const RunnerChild&) = delete;
  RunnerChild& operator=(const RunnerChild&) = delete;

  // Runs one job; `tick` is called about once a second while it runs (the
  // worker's JetStream heartbeat). An Error when the runner is gone.
  Result<proto::JobResult> run(const proto::Job& job, const OutputSink& on_output,
                               const std::function<void()>& tick);
  void cancel(const std::string& job_id);
  bool alive() const;

 private:
  RunnerChild() = default;
  struct Waiter;
  void read_loop();
  Result<void> send(const proto::RunnerMessage& message);

  pid_t pid_ = -1;
  UniqueFd link_;
  std::thread reader_;
  mutable std::mutex mutex_;
  std::mutex write_mutex_;
  bool gone_ = false;
  std::string gone_why_;
  std::map<std::string, std::shared_ptr<Waiter>> waiters_;
};

}  // namespace loopr::cluster
