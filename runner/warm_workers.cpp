#include "runner/warm_workers.hpp"

#include <fcntl.h>
#include <poll.h>
#include <signal.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <iostream>

#include "common/output_capture.hpp"
#include "proto/worker_messages.hpp"
#include "runner/tool_exit_status.hpp"

namespace loopr::runner {
namespace {

constexpr std::size_t kWorkerReadChunk = 256 * 1024;
// Workers over the cap that may wait for an idle lane to be stopped.
constexpr std::size_t kDeferredEvictions = 2;
// Workers in a row that end before they are ready, after which the lane
// runs its file tools as process jobs.
constexpr int kGiveUpAfter = 3;
// Reads of a worker's channel per poll round (a reply is at most ~1.4 MB:
// the output cap of a result frame).
constexpr int kReadsPerRound = 8;
constexpr int kKilledStatus = 128 + SIGKILL;

bool has_exited(int pidfd) {
  pollfd entry{pidfd, POLLIN, 0};
  return ::poll(&entry, 1, 0) > 0;
}

std::string describe_exit(int status) {
  if (WIFSIGNALED(status)) return "killed by signal " + std::to_string(WTERMSIG(status));
  if (WIFEXITED(status)) return "exit status " + std::to_string(WEXITSTATUS(status));
  return "status " + std::to_string(status);
}

}  // namespace

struct WarmWorkers::Call {
  proto::Job job;
  std::uint64_t cap = 0;
  Clock::time_point started = Clock::now();
  Clock::time_point deadline;
  bool retried = false;
  bool timed_out = false;
  bool cancelled = false;
};

// What a worker pinned when it started: its worktree folder, and the .git
// in it (bound read-only then) — or that there was none.
struct WarmWorkers::Identity {
  dev_t dev = 0;
  ino_t ino = 0;
  bool has_git = false;
  dev_t git_dev = 0;
  ino_t git_ino = 0;

  static std::optional<Identity> of(const std::string& worktree) {
    struct stat st {};
    if (::stat(worktree.c_str(), &st) != 0) return std::nullopt;
    Identity identity;
    identity.dev = st.st_dev;
    identity.ino = st.st_ino;
    if (::lstat((worktree + "/.git").c_str(), &st) == 0) {
      identity.has_git = true;
      identity.git_dev = st.st_dev;
      identity.git_ino = st.st_ino;
    }
    return identity;
  }
  bool operator==(const Identity&) const = default;
};

struct WarmWorkers::Worker {
  std::string worktree;
  Identity identity;
  RunningWorker process;
  proto::FrameReader reader{proto::kMaxWorkerPayload};
  std::string outbox;
  std::size_t sent = 0;
  bool ready = false;
  bool dying = false;   // killed, or its channel ended: waiting for its exit
  std::string trouble;  // why it is dying, when not killed by us
  std::optional<Call> call;
  Clock::time_point idle_since = Clock::now();
};

WarmWorkers::WarmWorkers(const LaneSandbox& sandbox, WarmWorkerOptions options, Send send,
                         RunAsProcess run_as_process)
    : sandbox_(sandbox),
      options_(options),
      send_(std::move(send)),
      run_as_process_(std::move(run_as_process)),
      read_buffer_(kWorkerReadChunk, '\0') {}

WarmWorkers::~WarmWorkers() {
  for (auto& worker : workers_) {
    ::kill(worker->process.pid, SIGKILL);
    ::waitpid(worker->process.pid, nullptr, 0);
  }
}

std::size_t WarmWorkers::busy() const {
  return static_cast<std::size_t>(std::count_if(workers_.begin(), workers_.end(),
                                                [](const auto& w) { return w->call.has_value(); }));
}

bool WarmWorkers::try_start(proto::Job& job, std::uint64_t output_cap,
                            std::chrono::milliseconds timeout) {
  if (options_.max_workers == 0 || given_up_ || sandbox_.spec().sandbox_off ||
      !job.traits.warm_worker) {
    return false;
  }
  return dispatch(job, output_cap, Clock::now() + timeout, /*retried=*/false);
}

bool WarmWorkers::dispatch(proto::Job& job, std::uint64_t cap, Clock::time_point deadline,
                           bool retried) {
  const auto identity = Identity::of(job.worktree);
  if (!identity) return false;
  Worker* worker = idle_worker_for(job.worktree, *identity);
  if (worker == nullptr) {
    if (!make_room()) return false;
    auto started = sandbox_.start_worker(job.worktree);
    if (!started) {
      std::cerr << "loopr-runner: cannot start a warm worker for " << job.worktree << ": "
                << started.error().message << "\n";
      return false;
    }
    auto fresh = std::make_unique<Worker>();
    fresh->worktree = job.worktree;
    fresh->identity = *identity;
    fresh->process = std::move(*started);
    ::fcntl(fresh->process.channel.get(), F_SETFL,
            ::fcntl(fresh->process.channel.get(), F_GETFL) | O_NONBLOCK);
    ::fcntl(fresh->process.setup_errors.get(), F_SETFL,
            ::fcntl(fresh->process.setup_errors.get(), F_GETFL) | O_NONBLOCK);
    worker = fresh.get();
    workers_.push_back(std::move(fresh));
  }
  auto frame = proto::encode_worker_frame(proto::WorkerCall{job.tool, job.args.dump(), cap});
  if (!frame) return false;  // too large for a worker: a process job reports it
  worker->outbox += *frame;
  Call call;
  call.job = std::move(job);
  call.cap = cap;
  call.deadline = deadline;
  call.retried = retried;
  worker->call = std::move(call);
  flush(*worker);
  return true;
}

WarmWorkers::Worker* WarmWorkers::idle_worker_for(const std::string& worktree,
                                                  const Identity& identity) {
  Worker* found = nullptr;
  for (auto& worker : workers_) {
    if (worker->dying || worker->worktree != worktree) continue;
    if (!(worker->identity == identity)) {
      // The folder at this path, or its .git, is not what this worker pinned.
      if (!worker->call) kill(*worker);
      continue;
    }
    if (worker->call || found != nullptr) continue;
    // One that ended since the last poll (killed from outside) is not used.
    if (has_exited(worker->process.pidfd.get())) {
      worker->trouble = "it ended while idle";
      kill(*worker);
      continue;
    }
    found = worker.get();
  }
  return found;
}

// Over the cap, the least recently used idle worker is stopped — but not
// in the path of the call that needs the room: its exit (a PID and a mount
// namespace torn down) would compete with the new worker's start on the
// same cores. So up to kDeferredEvictions workers over the cap may live
// until the lane is idle (enforce() stops them then); beyond that, one is
// stopped here.
bool WarmWorkers::make_room() {
  if (live_workers() < options_.max_workers + kDeferredEvictions) return true;
  Worker* oldest = oldest_idle();
  if (oldest == nullptr) return false;
  kill(*oldest);
  return true;
}

std::size_t WarmWorkers::live_workers() const {
  return static_cast<std::size_t>(std::count_if(workers_.begin(), workers_.end(),
                                                [](const auto& worker) { return !worker->dying; }));
}

WarmWorkers::Worker* WarmWorkers::oldest_idle() {
  Worker* oldest = nullptr;
  for (auto& worker : workers_) {
    if (worker->dying || worker->call) continue;
    if (oldest == nullptr || worker->idle_since < oldest->idle_since) oldest = worker.get();
  }
  return oldest;
}

void WarmWorkers::kill(Worker& worker) {
  if (worker.dying) return;
  worker.dying = true;
  // The worker is its namespace's PID 1: SIGKILL ends it and every thread.
  ::kill(worker.process.pid, SIGKILL);
  worker.process.channel.reset();
}

bool WarmWorkers::has_call(const std::string& job_id) const {
  return std::any_of(workers_.begin(), workers_.end(), [&](const auto& worker) {
    return worker->call && worker->call->job.job_id == job_id;
  });
}

bool WarmWorkers::cancel(const std::string& job_id) {
  for (auto& worker : workers_) {
    if (!worker->call || worker->call->job.job_id != job_id) continue;
    worker->call->cancelled = true;
    kill(*worker);
    return true;
  }
  return false;
}

void WarmWorkers::cancel_all() {
  for (auto& worker : workers_) {
    if (worker->call) {
      send_(proto::CancelAck{worker->call->job.job_id, true});
      worker->call->cancelled = true;
    }
    kill(*worker);
  }
}

void WarmWorkers::abandon() {
  silent_ = true;
  for (auto& worker : workers_)
    kill(*worker);
}

void WarmWorkers::add_poll_fds(std::vector<pollfd>& fds) const {
  for (const auto& worker : workers_) {
    fds.push_back({worker->process.pidfd.get(), POLLIN, 0});
    const bool open = !worker->dying && worker->process.channel;
    const short events =
        open ? static_cast<short>(POLLIN | (worker->sent < worker->outbox.size() ? POLLOUT : 0))
             : 0;
    // A negative fd is ignored by poll(), which keeps the entries paired.
    fds.push_back({open ? worker->process.channel.get() : -1, events, 0});
  }
}

void WarmWorkers::handle_poll(const pollfd* fds, std::size_t count) {
  // Entries come in pairs, in the order of workers_ when they were added;
  // workers started since then come after them and were not polled.
  const std::size_t polled = std::min(count / 2, workers_.size());
  std::vector<Worker*> exited;
  for (std::size_t k = 0; k < polled; ++k) {
    Worker& worker = *workers_[k];
    const pollfd& channel = fds[2 * k + 1];
    if (channel.fd >= 0 && !worker.dying) {
      if (channel.revents & POLLOUT) flush(worker);
      if (channel.revents & (POLLIN | POLLHUP | POLLERR)) read_replies(worker);
    }
    if (fds[2 * k].revents & POLLIN) exited.push_back(&worker);
  }
  for (Worker* worker : exited)
    reap(*worker);
}

void WarmWorkers::flush(Worker& worker) {
  while (!worker.dying && worker.sent < worker.outbox.size()) {
    const ssize_t n = ::send(worker.process.channel.get(), worker.outbox.data() + worker.sent,
                             worker.outbox.size() - worker.sent, MSG_NOSIGNAL);
    if (n < 0 && errno == EINTR) continue;
    if (n < 0 && errno == EAGAIN) return;
    if (n <= 0) {
      worker.trouble = "its channel failed while a call was sent";
      kill(worker);
      return;
    }
    worker.sent += static_cast<std::size_t>(n);
  }
  worker.outbox.clear();
  worker.sent = 0;
}

void WarmWorkers::read_replies(Worker& worker) {
  for (int round = 0; round < kReadsPerRound; ++round) {
    const ssize_t n =
        ::read(worker.process.channel.get(), read_buffer_.data(), read_buffer_.size());
    if (n < 0 && errno == EINTR) continue;
    if (n < 0 && errno == EAGAIN) break;
    if (n <= 0) {
      // It is ending (its exit status, from the pidfd, will say how), or it
      // closed its end while still alive: either way it serves no more.
      kill(worker);
      break;
    }
    worker.reader.feed(std::string_view(read_buffer_.data(), static_cast<std::size_t>(n)));
    if (worker.reader.buffered() > proto::kMaxFramePayload + proto::kFrameHeaderBytes + 8192) {
      worker.trouble = "it sent more than a reply can hold";
      kill(worker);
      return;
    }
    if (static_cast<std::size_t>(n) < read_buffer_.size()) break;
  }
  for (;;) {
    auto payload = worker.reader.next_payload();
    if (!payload) {
      worker.trouble = "it sent a bad frame: " + payload.error().message;
      kill(worker);
      return;
    }
    if (!*payload) return;
    auto message = proto::parse_worker_payload(**payload);
    if (!message) {
      worker.trouble = message.error().message;
      kill(worker);
      return;
    }
    if (const auto* ready = std::get_if<proto::WorkerReady>(&*message); ready && !worker.ready) {
      if (!ready->no_process_filter) {
        worker.trouble = "it did not confirm its filter against new processes";
        kill(worker);
        return;
      }
      worker.ready = true;
      continue;
    }
    const auto* reply = std::get_if<proto::WorkerReply>(&*message);
    if (reply == nullptr || !worker.ready || !worker.call) {
      worker.trouble = "it sent a message out of turn";
      kill(worker);
      return;
    }
    if (reply->stdout_text.size() > worker.call->cap + 256) {
      worker.trouble = "its reply was over the call's output cap";
      kill(worker);
      return;
    }
    complete(worker, *reply);
  }
}

void WarmWorkers::complete(Worker& worker, const proto::WorkerReply& reply) {
  Call& call = *worker.call;
  proto::JobResult result;
  result.job_id = call.job.job_id;
  result.output = reply.stdout_text;  // held within the call's cap by the worker
  result.truncated = reply.truncated;
  result.duration_ms = static_cast<std::uint64_t>(
      std::chrono::duration_cast<std::chrono::milliseconds>(Clock::now() - call.started).count());
  set_status_from_exit(result, reply.exit_code);
  worker.call.reset();
  worker.idle_since = Clock::now();
  ended_before_ready_ = 0;
  if (!silent_) send_(result);
}

void WarmWorkers::fail_call(Call& call, const std::string& message) {
  proto::JobResult result;
  result.job_id = call.job.job_id;
  result.status = proto::JobStatus::error;
  result.error = message;
  result.duration_ms = static_cast<std::uint64_t>(
      std::chrono::duration_cast<std::chrono::milliseconds>(Clock::now() - call.started).count());
  if (!silent_) send_(result);
}

void WarmWorkers::reap(Worker& worker) {
  int status = 0;
  if (::waitpid(worker.process.pid, &status, WNOHANG) <= 0) return;
  // A reply written just before the end still counts.
  if (!worker.dying && worker.process.channel) read_replies(worker);
  std::string setup_error;
  std::string chunk(4096, '\0');
  for (;;) {
    const ssize_t n = ::read(worker.process.setup_errors.get(), chunk.data(), chunk.size());
    if (n <= 0 || setup_error.size() > 65536) break;
    setup_error.append(chunk.data(), static_cast<std::size_t>(n));
  }
  std::optional<Call> call = std::move(worker.call);
  const std::string worktree = worker.worktree;
  const bool was_ready = worker.ready;
  const std::string why = worker.trouble.empty()
                              ? describe_exit(status)
                              : worker.trouble + ", then " + describe_exit(status);
  std::erase_if(workers_, [&](const auto& w) { return w.get() == &worker; });
  if (!setup_error.empty()) {
    if (!call) {
      std::cerr << "loopr-runner: a warm worker for " << worktree << " failed: " << setup_error
                << "\n";
    } else if (!call->cancelled && !call->timed_out) {
      return fail_call(*call, setup_error);  // a process job's sandbox would fail alike
    }
  }
  if (!was_ready && setup_error.empty() && !silent_ && !(call && call->cancelled)) {
    ++ended_before_ready_;
    std::cerr << "loopr-runner: a warm worker for " << worktree << " ended before it was ready ("
              << why << ")" << (call ? "; its call runs as a process job" : "") << "\n";
    if (ended_before_ready_ >= kGiveUpAfter && !given_up_) {
      given_up_ = true;
      std::cerr
          << "loopr-runner: lane " << sandbox_.spec().lane << ": " << kGiveUpAfter
          << " warm workers in a row ended before they were ready; the file tools run as "
             "process jobs from now on (set warm_workers = 0 for this lane to silence this)\n";
    }
    if (call && !call->timed_out) {
      const auto left =
          std::chrono::duration_cast<std::chrono::milliseconds>(call->deadline - Clock::now());
      run_as_process_(std::move(call->job), std::max(left, std::chrono::milliseconds(1)));
      return;
    }
  }
  if (!call) return;
  proto::JobResult result;
  result.job_id = call->job.job_id;
  result.exit_code = kKilledStatus;
  result.duration_ms = static_cast<std::uint64_t>(
      std::chrono::duration_cast<std::chrono::milliseconds>(Clock::now() - call->started).count());
  if (call->cancelled) {
    result.status = proto::JobStatus::cancelled;
    if (!silent_) send_(result);
    return;
  }
  if (call->timed_out) {
    result.status = proto::JobStatus::timeout;
    result.error = "the call ran past its timeout of " + std::to_string(call->job.timeout_ms) +
                   " ms and was stopped (its warm worker was killed)";
    if (!silent_) send_(result);
    return;
  }
  // Retried once, on a fresh worker, within the call's own deadline, and
  // only while a quarter of its time is left (a crash at the deadline is
  // reported as the crash, not as a timeout of its retry).
  const auto left = call->deadline - Clock::now();
  const auto quarter = std::chrono::milliseconds(call->job.timeout_ms / 4);
  if (call->job.traits.read_only && !call->retried && !silent_ && left >= quarter) {
    std::cerr << "loopr-runner: the warm worker for " << worktree << " ended during "
              << call->job.tool << " (" << why << "); retrying it once on a fresh worker\n";
    proto::Job job = std::move(call->job);
    const std::string job_id = job.job_id;
    if (dispatch(job, call->cap, call->deadline, /*retried=*/true)) {
      for (auto& w : workers_) {
        if (w->call && w->call->job.job_id == job_id) w->call->started = call->started;
      }
      return;
    }
    call->job = std::move(job);
  }
  fail_call(*call, "the warm worker serving " + worktree + " ended during " + call->job.tool +
                       " (" + why + ")" +
                       (call->job.traits.read_only
                            ? "; it was not retried again"
                            : "; the call may have been applied in part: read the file again "
                              "before relying on it"));
}

void WarmWorkers::enforce(Clock::time_point now) {
  if (busy() == 0) {
    while (live_workers() > options_.max_workers) {
      Worker* oldest = oldest_idle();
      if (oldest == nullptr) break;
      kill(*oldest);
    }
  }
  for (auto& worker : workers_) {
    if (worker->dying) continue;
    if (worker->call && now >= worker->call->deadline) {
      worker->call->timed_out = true;
      kill(*worker);
    } else if (!worker->call && now - worker->idle_since >= options_.idle_timeout) {
      kill(*worker);
    }
  }
}

std::optional<WarmWorkers::Clock::time_point> WarmWorkers::next_wakeup() const {
  std::optional<Clock::time_point> next;
  for (const auto& worker : workers_) {
    if (worker->dying) continue;
    const Clock::time_point at =
        worker->call ? worker->call->deadline : worker->idle_since + options_.idle_timeout;
    if (!next || at < *next) next = at;
  }
  return next;
}

}  // namespace loopr::runner
