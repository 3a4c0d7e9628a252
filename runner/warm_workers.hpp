// WarmWorkers: the lane's resident workers for the file tools (DESIGN.md §6.4),
// so that read_file, write_file, edit_file, file_delete, list_directory, glob
// and grep cost no fork or exec per call. Which calls they take is the job's
// trait (proto::JobTraits::warm_worker, from the catalog), not its tool name.
//
// A worker serves one worktree. It is started like a job for that worktree
// (LaneSandbox::start_worker: its own PID and mount namespaces, the job's
// filesystem with only that worktree, rlimits, Landlock, no capabilities, the
// lane's seccomp filter) and execs `loopr-tool --serve`, which stacks a
// filter against execve and new processes before it reads anything and says
// so in its first message; a worker that does not is killed and never used.
// Its stderr is /dev/null: nothing it writes reaches looprd's log, where it
// could pass for the runner's own words.
// It runs the same tool code as a process job (call_tool), and its reply
// goes through the same OutputCapture, so a result is byte-identical.
//
// Lifecycle: started on first use; at most `max_workers` per lane (the least
// recently used idle one is stopped to make room — once the lane is idle, so
// that its exit does not slow the call that needed the room, with at most 2
// over the cap meanwhile; when all are busy the call runs as a process job
// instead); stopped after `idle_timeout` without a call; one call at a time each (a worktree gets a
// second worker when its first is busy). A call over its timeout, or cancelled, kills its worker
// (SIGKILL to its PID 1: no thread is left running) and gets a timeout or
// cancelled result. A worker that dies during a call fails it with a clear
// error — or, for a read-only tool (JobTraits::read_only: read_file,
// list_directory, glob, grep),
// retries it once on a fresh worker, within the call's own deadline, when a
// quarter of its time is left; a sandbox step that failed is reported as it
// is and never retried. A worktree whose folder was replaced (another inode
// at the same path), or whose .git appeared, went or was replaced, gets new
// workers (a worker's read-only .git mount is taken when it starts).
//
// No state crosses calls inside a worker but the worktree's directory, which
// its mount namespace pins: every call opens its files afresh, so a change
// made by a run_command job between two calls is seen by the second.
//
// Contract: single-threaded, driven by LaneRunner's poll loop (add_poll_fds,
// then handle_poll with the same fds, then enforce). Results go out through
// `send`, the runner's outgoing frames.
#pragma once

#include <poll.h>
#include <sys/types.h>

#include <chrono>
#include <cstdint>
#include <functional>
#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "proto/frame_codec.hpp"
#include "proto/runner_messages.hpp"
#include "proto/worker_messages.hpp"
#include "runner/contain.hpp"

namespace loopr::runner {

struct WarmWorkerOptions {
  // Per lane; 0: no warm workers, a process per call. Up to 2 more may live
  // while the least recently used waits for an idle lane to be stopped.
  std::size_t max_workers = 8;
  std::chrono::milliseconds idle_timeout{60'000};
};

class WarmWorkers {
 public:
  using Clock = std::chrono::steady_clock;
  using Send = std::function<void(const proto::RunnerMessage&)>;
  // Runs a call as a process job after all, within `timeout` (what is left
  // of its own): for a call whose worker ended before it was ready.
  using RunAsProcess = std::function<void(proto::Job, std::chrono::milliseconds timeout)>;

  WarmWorkers(const LaneSandbox& sandbox, WarmWorkerOptions options, Send send,
              RunAsProcess run_as_process);
  ~WarmWorkers();  // kills and reaps every worker
  WarmWorkers(const WarmWorkers&) = delete;
  WarmWorkers& operator=(const WarmWorkers&) = delete;

  // Starts `job` (worktree and cwd already checked by LaneRunner) on a worker
  // and takes it; false, leaving `job` as it was, when no worker can take it
  // now (disabled, the sandbox off, or all busy at the cap).
  bool try_start(proto::Job& job, std::uint64_t output_cap, std::chrono::milliseconds timeout);

  // True if the call is on a worker: the worker is killed and a cancelled
  // result follows when it has exited.
  bool cancel(const std::string& job_id);
  void cancel_all();
  bool has_call(const std::string& job_id) const;

  // Workers with a call in flight (they take the lane's slots).
  std::size_t busy() const;

  // Appends the fds to poll; handle_poll() takes the same entries back.
  void add_poll_fds(std::vector<pollfd>& fds) const;
  void handle_poll(const pollfd* fds, std::size_t count);
  // Kills workers past their call's deadline or idle too long.
  void enforce(Clock::time_point now);
  std::optional<Clock::time_point> next_wakeup() const;

  // The runner's link is gone: kill every worker, report nothing.
  void abandon();

 private:
  struct Call;
  struct Worker;

  bool dispatch(proto::Job& job, std::uint64_t cap, Clock::time_point deadline, bool retried);
  struct Identity;
  Worker* idle_worker_for(const std::string& worktree, const Identity& identity);
  bool make_room();
  std::size_t live_workers() const;
  Worker* oldest_idle();
  void kill(Worker& worker);
  void flush(Worker& worker);
  void read_replies(Worker& worker);
  void complete(Worker& worker, const proto::WorkerReply& reply);
  void reap(Worker& worker);
  void fail_call(Call& call, const std::string& message);

  const LaneSandbox& sandbox_;
  WarmWorkerOptions options_;
  Send send_;
  RunAsProcess run_as_process_;
  std::vector<std::unique_ptr<Worker>> workers_;
  std::string read_buffer_;
  int ended_before_ready_ = 0;  // in a row; at kGiveUpAfter the lane stops using workers
  bool given_up_ = false;
  bool silent_ = false;  // abandon(): nobody to report to
};

}  // namespace loopr::runner
