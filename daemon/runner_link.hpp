// RunnerLink: looprd's side of one lane (DESIGN.md §4, §6): it starts
// `loopr-runner --lane L --fd 3 ...` on a socketpair, answers its handshake,
// sends jobs within the lane's slot count (the rest wait here, in order),
// heartbeats it, and restarts it with backoff when it dies or stops
// answering. A runner that dies fails its in-flight jobs at once with
// "runner for lane L restarted" — except a job run with
// retry_on_runner_death (JobHandling), which is held and sent once more to
// the restarted runner; other lanes are separate RunnerLinks and are
// untouched. A runner that cannot build its sandbox (exit status 3: fail
// closed) puts the lane in state "failed": calls fail at once with the
// runner's own explanation, and the lane keeps retrying with backoff.
//
// The runner's stderr is read line by line into the daemon's log.
// Threads: io thread only. Processes: the runner is a child of looprd, killed
// with SIGKILL if looprd dies (PR_SET_PDEATHSIG) and reaped through a pidfd
// (Linux >= 5.3).
#pragma once

#include <sys/types.h>

#include <asio/awaitable.hpp>
#include <asio/io_context.hpp>
#include <chrono>
#include <cstdint>
#include <deque>
#include <functional>
#include <map>
#include <memory>
#include <nlohmann/json.hpp>
#include <optional>
#include <string>
#include <vector>

#include "common/error.hpp"
#include "common/unique_fd.hpp"
#include "daemon/metrics.hpp"
#include "daemon/wakeup.hpp"
#include "proto/runner_messages.hpp"

namespace loopr::daemon {

struct LaneConfig {
  std::string lane;
  // The runner's command line; the link is inherited as fd 3 ("--fd 3").
  std::vector<std::string> argv;
  std::uint32_t slots = 1;
  std::chrono::milliseconds heartbeat_interval{5000};
  std::chrono::milliseconds first_restart_delay{500};  // doubles up to 30 s
  std::chrono::milliseconds term_grace{500};           // the runner's TERM→KILL grace
  // A lane with network: the runner inherits a second socket as fd 4 (argv
  // says "--egress-fd 4") and passes over it the egress listener it makes in
  // the lane's network namespace; each one is handed here (DESIGN §7.9).
  std::function<void(UniqueFd listener)> on_egress_listener;
};

enum class LaneState { starting, ready, restarting, failed, stopped };
std::string_view to_string(LaneState state);

// How the link treats one job beyond what the runner is told. The caller
// decides (the ToolRouter, from the tool's catalog tier); the link knows no
// catalog and obeys.
struct JobHandling {
  // When the runner dies while the job runs, hold the job and send it once
  // more, after the restarted runner's handshake, instead of failing it: for
  // calls that change nothing, so running one twice is harmless. The retry
  // runs with the job's full timeout again (the cut-short run left nothing to
  // count on), and its wait for the runner to come back is bounded like any
  // queued job's; so a retried call takes at most about twice its timeout
  // plus the restart. Never retried: a job whose runner dies a second time,
  // a job being cancelled, a job the link itself gave up on as stuck. When
  // the runner cannot be restarted (fails to start, fails its sandbox, looprd
  // stops), the held job fails with that reason.
  bool retry_on_runner_death = false;
};

// What run() answers. `result` is the runner's own result for the job. When
// the job never produced one (the lane failed, its runner died or went
// silent, looprd is shutting down, no slot came free in time, the job could
// not be sent), `result` is made up here (status error, timeout or
// cancelled) and `link_error` says why, with a hint for the model.
struct LaneReply {
  proto::JobResult result;
  std::optional<Error> link_error;
  // The runner died while the job ran and the job was sent again
  // (JobHandling::retry_on_runner_death); `result` is the second run's.
  bool retried = false;
};

class RunnerLink {
 public:
  using OutputSink = std::function<void(const proto::OutputChunk& chunk)>;

  RunnerLink(asio::io_context& io, LaneConfig config, Metrics& metrics, OutputSink on_output);
  ~RunnerLink();
  RunnerLink(const RunnerLink&) = delete;
  RunnerLink& operator=(const RunnerLink&) = delete;

  // Starts supervising (spawns the first runner).
  void start();
  // Runs one job and returns its result; never throws.
  asio::awaitable<LaneReply> run(proto::Job job, JobHandling handling = {});
  // Cancels a queued, held or running job; false if this lane does not know it.
  bool cancel(const std::string& job_id);
  // Sends shutdown, waits up to `grace` for the runner to exit, then kills it.
  asio::awaitable<void> stop(std::chrono::milliseconds grace);

  const std::string& lane() const { return config_.lane; }
  LaneState state() const { return state_; }
  pid_t pid() const { return pid_; }
  // {lane, state, pid, slots, in_flight, queued, restarts, last_error?}
  nlohmann::json status_json() const;
  // How many jobs wait before `job_id` for a slot of this lane; nullopt when
  // that job is not waiting (sent to the runner, or unknown here).
  std::optional<std::size_t> jobs_ahead(const std::string& job_id) const;

 private:
  struct PendingJob;
  struct Connection;
  struct StderrLog;

  void spawn_supervisor();
  asio::awaitable<void> supervise();
  asio::awaitable<void> receive_egress_listener(UniqueFd egress);
  asio::awaitable<void> serve(std::shared_ptr<Connection> connection);
  asio::awaitable<void> write_loop(std::shared_ptr<Connection> connection);
  asio::awaitable<void> heartbeat_loop(std::shared_ptr<Connection> connection);
  asio::awaitable<void> log_stderr(int fd, std::shared_ptr<StderrLog> log);
  asio::awaitable<int> reap(pid_t pid);

  void handle(Connection& connection, proto::RunnerMessage message);
  void send(const proto::RunnerMessage& message);
  void pump();
  void complete(const std::shared_ptr<PendingJob>& job, LaneReply reply);
  void fail_in_flight(const Error& why, proto::JobStatus status);
  void hold_or_fail_in_flight(const std::string& why);
  void fail_queued(const Error& why, proto::JobStatus status);
  Error lane_failed_error() const;

  asio::io_context& io_;
  LaneConfig config_;
  Metrics& metrics_;
  OutputSink on_output_;

  LaneState state_ = LaneState::stopped;
  bool stopping_ = false;
  pid_t pid_ = -1;
  std::uint32_t slots_ = 1;
  std::string last_error_;  // why the lane is failed or last restarted
  // What the runner said of its cgroup limits, by kind ("pids", "memory"):
  // where each lives, or why it is not applied (status_json "cgroups").
  std::map<std::string, std::string> cgroup_report_;
  std::shared_ptr<Connection> connection_;
  std::deque<std::shared_ptr<PendingJob>> queue_;
  std::map<std::string, std::shared_ptr<PendingJob>> in_flight_;
  Wakeup stopped_;
  Wakeup wake_supervisor_;  // ends a restart pause early (stop)
};

}  // namespace loopr::daemon
