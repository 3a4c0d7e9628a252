#include "runner/warm_workers.hpp"

#include <fcntl.h>
#include <signal.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <array>
#include <cerrno>
#include <iostream>

#include "common/output_capture.hpp"
#include "proto/worker_messages.hpp"
#include "runner/tool_exit_status.hpp"

namespace loopr::runner {
namespace {

constexpr std::array<std::string_view, 7> kServedTools = {
    "read_file", "write_file", "edit_file", "file_delete", "list_directory", "glob", "grep"};
constexpr std::array<std::string_view, 4> kReadOnlyTools = {"read_file", "list_directory", "glob",
                                                            "grep"};
constexpr std::size_t kReadChunk = 256 * 1024;
// Workers over the cap that may wait for an idle lane to be stopped.
constexpr std::size_t kDeferredEvictions = 2;

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

struct WarmWorkers::Worker {
  std::string worktree;
  dev_t dev = 0;
  ino_t ino = 0;
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

WarmWorkers::WarmWorkers(const LaneSandbox& sandbox, WarmWorkerOptions options, Send send)
    : sandbox_(sandbox), options_(options), send_(std::move(send)) {}

WarmWorkers::~WarmWorkers() {
  for (auto& worker : workers_) {
    ::kill(worker->process.pid, SIGKILL);
    ::waitpid(worker->process.pid, nullptr, 0);
  }
}

bool WarmWorkers::serves(std::string_view tool) {
  return std::find(kServedTools.begin(), kServedTools.end(), tool) != kServedTools.end();
}

bool WarmWorkers::read_only(std::string_view tool) {
  return std::find(kReadOnlyTools.begin(), kReadOnlyTools.end(), tool) != kReadOnlyTools.end();
}

std::size_t WarmWorkers::busy() const {
  return static_cast<std::size_t>(std::count_if(workers_.begin(), workers_.end(),
                                                [](const auto& w) { return w->call.has_value(); }));
}

bool WarmWorkers::try_start(proto::Job& job, std::uint64_t output_cap,
                            std::chrono::milliseconds timeout) {
  if (options_.max_workers == 0 || sandbox_.spec().sandbox_off || !serves(job.tool)) return false;
  return dispatch(job, output_cap, Clock::now() + timeout, /*retried=*/false);
}

bool WarmWorkers::dispatch(proto::Job& job, std::uint64_t cap, Clock::time_point deadline,
                           bool retried) {
  struct stat st {};
  if (::stat(job.worktree.c_str(), &st) != 0) return false;
  Worker* worker = idle_worker_for(job.worktree, st.st_dev, st.st_ino);
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
    fresh->dev = st.st_dev;
    fresh->ino = st.st_ino;
    fresh->process = std::move(*started);
    ::fcntl(fresh->process.channel.get(), F_SETFL,
            ::fcntl(fresh->process.channel.get(), F_GETFL) | O_NONBLOCK);
    ::fcntl(fresh->process.setup_errors.get(), F_SETFL,
            ::fcntl(fresh->process.setup_errors.get(), F_GETFL) | O_NONBLOCK);
    worker = fresh.get();
    workers_.push_back(std::move(fresh));
  }
  auto frame = proto::encode_worker_frame(proto::WorkerCall{job.tool, job.args.dump()});
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

WarmWorkers::Worker* WarmWorkers::idle_worker_for(const std::string& worktree, dev_t dev,
                                                  ino_t ino) {
  Worker* found = nullptr;
  for (auto& worker : workers_) {
    if (worker->dying || worker->worktree != worktree) continue;
    if (worker->dev != dev || worker->ino != ino) {
      // The folder at this path was replaced: this worker pins the old one.
      if (!worker->call) kill(*worker);
      continue;
    }
    if (!worker->call && found == nullptr) found = worker.get();
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
  std::string buffer(kReadChunk, '\0');
  for (;;) {
    const ssize_t n = ::read(worker.process.channel.get(), buffer.data(), buffer.size());
    if (n < 0 && errno == EINTR) continue;
    if (n < 0 && errno == EAGAIN) break;
    if (n <= 0) {
      // It is ending; its exit status (the pidfd) says how.
      worker.dying = true;
      worker.process.channel.reset();
      break;
    }
    worker.reader.feed(std::string_view(buffer.data(), static_cast<std::size_t>(n)));
    if (static_cast<std::size_t>(n) < buffer.size()) break;
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
    complete(worker, reply->exit_code, reply->stdout_text);
  }
}

void WarmWorkers::complete(Worker& worker, int exit_code, std::string_view stdout_text) {
  Call& call = *worker.call;
  OutputCapture out(call.cap);
  out.append(stdout_text);
  proto::JobResult result;
  result.job_id = call.job.job_id;
  result.output = out.contents();
  result.truncated = out.truncated();
  result.duration_ms = static_cast<std::uint64_t>(
      std::chrono::duration_cast<std::chrono::milliseconds>(Clock::now() - call.started).count());
  set_status_from_exit(result, exit_code);
  worker.call.reset();
  worker.idle_since = Clock::now();
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
  const std::string trouble = worker.trouble;
  std::erase_if(workers_, [&](const auto& w) { return w.get() == &worker; });
  if (!call) {
    if (!setup_error.empty()) {
      std::cerr << "loopr-runner: a warm worker for " << worktree << " failed: " << setup_error
                << "\n";
    }
    return;
  }
  if (call->cancelled) {
    proto::JobResult result;
    result.job_id = call->job.job_id;
    result.status = proto::JobStatus::cancelled;
    if (!silent_) send_(result);
    return;
  }
  if (call->timed_out) {
    proto::JobResult result;
    result.job_id = call->job.job_id;
    result.status = proto::JobStatus::timeout;
    result.error = "the call ran past its timeout of " + std::to_string(call->job.timeout_ms) +
                   " ms and was stopped (its warm worker was killed)";
    result.duration_ms = call->job.timeout_ms;
    if (!silent_) send_(result);
    return;
  }
  if (!setup_error.empty()) return fail_call(*call, setup_error);
  const std::string why =
      trouble.empty() ? describe_exit(status) : trouble + ", then " + describe_exit(status);
  if (read_only(call->job.tool) && !call->retried && !silent_) {
    std::cerr << "loopr-runner: the warm worker for " << worktree << " ended during "
              << call->job.tool << " (" << why << "); retrying it once on a fresh worker\n";
    proto::Job job = std::move(call->job);
    if (dispatch(job, call->cap, call->deadline, /*retried=*/true)) return;
    call->job = std::move(job);
  }
  fail_call(*call, "the warm worker serving " + worktree + " ended during " + call->job.tool +
                       " (" + why + ")" +
                       (read_only(call->job.tool)
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
