#include "runner/lane_runner.hpp"

#include <fcntl.h>
#include <poll.h>
#include <signal.h>
#include <sys/socket.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <climits>
#include <cstdlib>
#include <iostream>
#include <optional>

#include "common/path_beneath.hpp"
#include "runner/set_id_sweep.hpp"
#include "runner/tool_exit_status.hpp"

namespace loopr::runner {
namespace {

constexpr std::size_t kFrameReadChunk = 64 * 1024;
// A result carries both streams, each at most this many bytes, and must fit
// in one frame even when every byte is a control character that JSON writes
// as \u00XX (6 bytes): a larger max_output_bytes is lowered to this.
constexpr std::uint64_t kMaxCapturePerStream = (proto::kMaxFramePayload - (64u << 10)) / 12;
// Above this many unsent bytes the runner stops reading job output.
constexpr std::size_t kOutboxHighWater = 4u << 20;

void set_nonblocking(int fd) {
  ::fcntl(fd, F_SETFL, ::fcntl(fd, F_GETFL) | O_NONBLOCK);
}

std::optional<std::string> real_path(const std::string& path) {
  char resolved[PATH_MAX];
  if (::realpath(path.c_str(), resolved) == nullptr) return std::nullopt;
  return std::string(resolved);
}

proto::LimitHit time_limit_hit(const proto::Job& job) {
  const std::string key = "timeout_ms of [tools." + job.tool + "] in catalog.toml";
  return {"time", key, job.timeout_ms, "ms",
          "loopr stopped the job at its time limit of " + std::to_string(job.timeout_ms) + " ms (" +
              key + "; a call's own timeout_ms can only lower it)"};
}

proto::LimitHit memory_limit_hit(const std::string& lane, std::uint64_t memory_mb) {
  const std::string key = "[lanes." + lane + "] memory_mb in loopr.toml";
  return {"memory", key, memory_mb, "MiB",
          "a process of the job was killed for memory: the job used its whole memory limit of " +
              std::to_string(memory_mb) + " MiB (" + key +
              "); use less memory (fewer parallel jobs, smaller inputs), or the user can raise "
              "it"};
}

bool valid_tool_name(const std::string& name) {
  if (name.empty() || name.size() > 64 || !(name[0] >= 'a' && name[0] <= 'z')) return false;
  return std::all_of(name.begin(), name.end(), [](char c) {
    return (c >= 'a' && c <= 'z') || (c >= '0' && c <= '9') || c == '_';
  });
}

// Reads what is available without blocking; false at EOF or on an error.
bool read_available(int fd, std::string& into) {
  char buffer[kFrameReadChunk];
  const ssize_t n = ::read(fd, buffer, sizeof buffer);
  if (n > 0) {
    into.assign(buffer, static_cast<std::size_t>(n));
    return true;
  }
  into.clear();
  return n < 0 && (errno == EAGAIN || errno == EINTR);
}

}  // namespace

struct LaneRunner::ActiveJob {
  ActiveJob(proto::Job job, RunningJob running, std::uint64_t cap)
      : request(std::move(job)), process(std::move(running)), out(cap), err(cap) {}

  proto::Job request;
  RunningJob process;
  OutputCapture out;
  OutputCapture err;
  Clock::time_point started = Clock::now();
  Clock::time_point deadline;
  std::optional<Clock::time_point> kill_at;
  bool timed_out = false;
  bool cancelled = false;
  bool exited = false;
  int wait_status = 0;
  int memory_slot = -1;  // JobMemoryCgroups slot; -1: none
  std::uint64_t oom_kills_before = 0;
};

LaneRunner::LaneRunner(const LaneSandbox& sandbox, UniqueFd link, LaneRunnerOptions options)
    : sandbox_(sandbox),
      link_(std::move(link)),
      options_(std::move(options)),
      workers_(
          sandbox, options_.warm_workers,
          [this](const proto::RunnerMessage& message) { send(message); },
          [this](proto::Job job, std::chrono::milliseconds timeout) {
            const std::uint64_t cap =
                std::clamp<std::uint64_t>(job.max_output_bytes, 1, kMaxCapturePerStream);
            start_process_job(std::move(job), cap, timeout);
          }) {
  set_nonblocking(link_.get());
}

LaneRunner::~LaneRunner() {
  for (auto& job : active_) {
    if (!job->exited) {
      ::kill(job->process.pid, SIGKILL);
      ::waitpid(job->process.pid, nullptr, 0);
    }
  }
}

void LaneRunner::send(const proto::RunnerMessage& message) {
  auto frame = proto::encode_frame(proto::to_json(message));
  if (!frame) {
    std::cerr << "loopr-runner: cannot encode a " << proto::message_type(message)
              << " frame: " << frame.error().message << "\n";
    // A job's result must arrive in some form, or the daemon waits for it.
    if (const auto* result = std::get_if<proto::JobResult>(&message);
        result != nullptr && result->status != proto::JobStatus::error) {
      send_error_result(result->job_id,
                        "the job's result did not fit in a runner frame: " + frame.error().message);
    }
    return;
  }
  outbox_ += *frame;
}

void LaneRunner::send_error_result(const std::string& job_id, const std::string& message) {
  proto::JobResult result;
  result.job_id = job_id;
  result.status = proto::JobStatus::error;
  result.error = message;
  send(result);
}

bool LaneRunner::flush_outbox() {
  while (outbox_offset_ < outbox_.size()) {
    // MSG_NOSIGNAL: a daemon that went away is an error here, not a SIGPIPE
    // (ignoring SIGPIPE instead would be inherited by every job's exec).
    const ssize_t n = ::send(link_.get(), outbox_.data() + outbox_offset_,
                             outbox_.size() - outbox_offset_, MSG_NOSIGNAL);
    if (n < 0 && errno == EINTR) continue;
    if (n < 0 && errno == EAGAIN) break;
    if (n <= 0) return false;
    outbox_offset_ += static_cast<std::size_t>(n);
  }
  if (outbox_offset_ == outbox_.size()) {
    outbox_.clear();
    outbox_offset_ = 0;
  } else if (outbox_offset_ > (1u << 20)) {
    outbox_.erase(0, outbox_offset_);
    outbox_offset_ = 0;
  }
  return true;
}

void LaneRunner::handle_message(proto::RunnerMessage message) {
  if (auto* ack = std::get_if<proto::HandshakeAck>(&message)) {
    if (!ack->accepted) {
      std::cerr << "loopr-runner: the daemon refused the handshake\n";
      link_failed_ = true;
      return;
    }
    if (ack->slots > 0) options_.slots = static_cast<int>(ack->slots);
    handshake_done_ = true;
    start_queued_jobs();
  } else if (auto* job = std::get_if<proto::Job>(&message)) {
    accept_job(std::move(*job));
  } else if (auto* cancel_request = std::get_if<proto::Cancel>(&message)) {
    cancel(cancel_request->job_id);
  } else if (auto* heartbeat = std::get_if<proto::Heartbeat>(&message)) {
    send(proto::HeartbeatAck{heartbeat->seq});
  } else if (std::holds_alternative<proto::Shutdown>(message)) {
    shutting_down_ = true;
    while (!queue_.empty()) {
      cancel(queue_.front().job_id);
    }
    for (auto& running : active_)
      cancel(running->request.job_id);
    workers_.cancel_all();
  } else {
    std::cerr << "loopr-runner: ignoring a message a runner does not expect\n";
  }
}

void LaneRunner::accept_job(proto::Job job) {
  const std::string id = job.job_id;
  const auto refuse = [&](const std::string& why) {
    send(proto::JobAck{id});
    send_error_result(id, why);
  };
  if (id.empty()) return refuse("job_id is empty");
  const bool duplicate =
      workers_.has_call(id) ||
      std::any_of(queue_.begin(), queue_.end(), [&](const auto& q) { return q.job_id == id; }) ||
      std::any_of(active_.begin(), active_.end(),
                  [&](const auto& a) { return a->request.job_id == id; });
  if (duplicate) return refuse("job_id " + id + " is already running");
  if (shutting_down_) return refuse("the runner is shutting down");
  if (!valid_tool_name(job.tool)) return refuse("invalid tool name '" + job.tool + "'");
  const auto worktree = real_path(job.worktree);
  if (!worktree)
    return refuse("worktree " + job.worktree + " does not exist in lane " + sandbox_.spec().lane);
  const bool allowed = std::any_of(options_.writable_roots.begin(), options_.writable_roots.end(),
                                   [&](const std::string& root) {
                                     const auto real_root = real_path(root);
                                     return real_root && same_or_beneath(*worktree, *real_root);
                                   });
  if (!allowed) {
    return refuse("worktree " + *worktree + " is not beneath a configured worktree root of lane " +
                  sandbox_.spec().lane + "; add it to sandbox.worktree_roots in loopr.toml");
  }
  job.worktree = *worktree;
  const auto cwd = real_path(job.cwd.empty() ? *worktree : job.cwd);
  if (!cwd || !same_or_beneath(*cwd, *worktree)) {
    return refuse("cwd " + job.cwd + " is not a folder inside the worktree");
  }
  job.cwd = *cwd;
  send(proto::JobAck{id});
  queue_.push_back(std::move(job));
  start_queued_jobs();
}

void LaneRunner::start_queued_jobs() {
  while (handshake_done_ && !queue_.empty() &&
         static_cast<int>(active_.size() + workers_.busy()) < options_.slots) {
    proto::Job job = std::move(queue_.front());
    queue_.pop_front();
    start_job(std::move(job));
  }
}

void LaneRunner::start_job(proto::Job job) {
  const std::uint64_t output_cap =
      std::clamp<std::uint64_t>(job.max_output_bytes, 1, kMaxCapturePerStream);
  const auto call_timeout = std::chrono::milliseconds(
      static_cast<std::int64_t>(std::clamp<std::uint64_t>(job.timeout_ms, 1, 86'400'000)));
  if (workers_.try_start(job, output_cap, call_timeout)) return;
  start_process_job(std::move(job), output_cap, call_timeout);
}

void LaneRunner::start_process_job(proto::Job job, std::uint64_t output_cap,
                                   std::chrono::milliseconds call_timeout) {
  JobLaunch launch;
  launch.tool = job.tool;
  launch.in_fetch_binary = job.traits.program == proto::JobProgram::fetch;
  launch.args_json = job.args.dump();
  launch.worktree = job.worktree;
  launch.cwd = job.cwd;
  launch.env = job.env;
  launch.egress_token = job.egress_token;
  launch.max_output_bytes = static_cast<std::int64_t>(output_cap);
  launch.stream_output = options_.stream_output;
  JobMemoryCgroups& memory = *sandbox_.memory_cgroups();
  const int memory_slot = memory.limited() ? memory.acquire() : -1;
  if (memory.limited() && memory_slot < 0) {
    // Fail closed: a job never runs without the memory limit the lane has.
    return send_error_result(job.job_id, "no free memory cgroup for the job in lane " +
                                             sandbox_.spec().lane +
                                             " (more jobs at once than the runner's --slots)");
  }
  launch.memory_cgroup_procs = memory.procs_fd(memory_slot);
  const std::uint64_t oom_kills_before = memory.oom_kills(memory_slot);
  auto running = sandbox_.start_job(launch);
  if (!running) {
    memory.release(memory_slot);
    return send_error_result(job.job_id, running.error().message);
  }
  set_nonblocking(running->stdout_pipe.get());
  set_nonblocking(running->stderr_pipe.get());
  set_nonblocking(running->setup_errors.get());
  auto active = std::make_unique<ActiveJob>(std::move(job), std::move(*running), output_cap);
  active->deadline = active->started + call_timeout;
  active->memory_slot = memory_slot;
  active->oom_kills_before = oom_kills_before;
  active_.push_back(std::move(active));
}

void LaneRunner::cancel(const std::string& job_id) {
  for (auto it = queue_.begin(); it != queue_.end(); ++it) {
    if (it->job_id != job_id) continue;
    queue_.erase(it);
    send(proto::CancelAck{job_id, true});
    proto::JobResult result;
    result.job_id = job_id;
    result.status = proto::JobStatus::cancelled;
    send(result);
    return;
  }
  if (workers_.cancel(job_id)) {
    send(proto::CancelAck{job_id, true});
    return;
  }
  for (auto& job : active_) {
    if (job->request.job_id != job_id) continue;
    send(proto::CancelAck{job_id, true});
    if (!job->cancelled && !job->exited) {
      job->cancelled = true;
      ::kill(job->process.pid, SIGTERM);
      job->kill_at = Clock::now() + options_.term_grace;
    }
    return;
  }
  send(proto::CancelAck{job_id, false});
}

void LaneRunner::read_job_stream(ActiveJob& job, bool is_stdout) {
  UniqueFd& fd = is_stdout ? job.process.stdout_pipe : job.process.stderr_pipe;
  std::string chunk;
  if (!read_available(fd.get(), chunk)) {
    fd.reset();
    return;
  }
  if (chunk.empty()) return;
  (is_stdout ? job.out : job.err).append(chunk);
  if (options_.stream_output) {
    send(proto::OutputChunk{
        job.request.job_id,
        is_stdout ? proto::OutputStream::standard_output : proto::OutputStream::standard_error,
        chunk});
  }
}

void LaneRunner::finish_job(ActiveJob& job) {
  // The job's PID 1 has exited, so its namespace is gone and every writer of
  // its pipes with it: what is left in them is the rest of the output.
  for (bool is_stdout : {true, false}) {
    UniqueFd& fd = is_stdout ? job.process.stdout_pipe : job.process.stderr_pipe;
    std::string chunk;
    while (fd && read_available(fd.get(), chunk) && !chunk.empty()) {
      (is_stdout ? job.out : job.err).append(chunk);
      if (options_.stream_output) {
        send(proto::OutputChunk{
            job.request.job_id,
            is_stdout ? proto::OutputStream::standard_output : proto::OutputStream::standard_error,
            chunk});
      }
    }
    fd.reset();
  }
  std::string setup_error;
  std::string chunk;
  while (read_available(job.process.setup_errors.get(), chunk) && !chunk.empty() &&
         setup_error.size() < 65536) {
    setup_error += chunk;
  }

  // As root, a command may have left a set-ID file behind (set_id_sweep.hpp).
  if (::getuid() == 0 && !sandbox_.spec().sandbox_off && job.request.traits.runs_commands) {
    if (const std::size_t cleared = clear_set_id_bits(job.request.worktree); cleared > 0) {
      std::cerr << "loopr-runner: cleared set-user-ID/set-group-ID bits on " << cleared
                << " file(s) job " << job.request.job_id << " left in " << job.request.worktree
                << "\n";
    }
  }

  proto::JobResult result;
  result.job_id = job.request.job_id;
  result.output = job.out.contents();
  result.stderr_bytes = job.err.contents();
  result.truncated = job.out.truncated() || job.err.truncated();
  result.duration_ms = static_cast<std::uint64_t>(
      std::chrono::duration_cast<std::chrono::milliseconds>(Clock::now() - job.started).count());
  const int status = job.wait_status;
  const int code = WIFEXITED(status) ? WEXITSTATUS(status) : 128 + WTERMSIG(status);
  result.exit_code = code;
  if (!setup_error.empty()) {
    result.status = proto::JobStatus::error;
    result.error = setup_error;
  } else if (job.cancelled) {
    result.status = proto::JobStatus::cancelled;
  } else if (job.timed_out) {
    result.status = proto::JobStatus::timeout;
    result.error = "the job ran past its timeout of " + std::to_string(job.request.timeout_ms) +
                   " ms and was stopped; output so far is kept";
    result.limit = time_limit_hit(job.request);
  } else {
    set_status_from_exit(result, code);
  }
  // The job's memory cgroup: did the kernel kill one of its processes?
  JobMemoryCgroups& memory = *sandbox_.memory_cgroups();
  if (job.memory_slot >= 0) {
    if (memory.oom_kills(job.memory_slot) > job.oom_kills_before) {
      result.limit = memory_limit_hit(sandbox_.spec().lane, memory.memory_mb());
    }
    memory.release(job.memory_slot);
    job.memory_slot = -1;
  }
  send(result);
}

void LaneRunner::enforce_deadlines(Clock::time_point now) {
  for (auto& job : active_) {
    if (job->exited) continue;
    if (!job->kill_at && now >= job->deadline) {
      job->timed_out = true;
      ::kill(job->process.pid, SIGTERM);
      job->kill_at = now + options_.term_grace;
    } else if (job->kill_at && now >= *job->kill_at) {
      // SIGKILL to PID 1 ends the whole PID namespace, stopped processes too.
      ::kill(job->process.pid, SIGKILL);
    }
  }
}

int LaneRunner::next_timeout_ms(Clock::time_point now) const {
  std::optional<Clock::time_point> next;
  for (const auto& job : active_) {
    if (job->exited) continue;
    const Clock::time_point at = job->kill_at ? *job->kill_at : job->deadline;
    if (!next || at < *next) next = at;
  }
  if (const auto worker_next = workers_.next_wakeup();
      worker_next && (!next || *worker_next < *next)) {
    next = worker_next;
  }
  if (!next) return -1;
  const auto wait = std::chrono::duration_cast<std::chrono::milliseconds>(*next - now).count();
  return static_cast<int>(std::clamp<std::int64_t>(wait + 1, 0, 60'000));
}

int LaneRunner::serve() {
  proto::Handshake hello;
  hello.lane = sandbox_.spec().lane;
  hello.pid = ::getpid();
  hello.version = proto::kRunnerProtocolVersion;
  send(hello);

  bool peer_closed = false;
  for (;;) {
    if (link_failed_) return 1;
    if ((shutting_down_ || peer_closed) && active_.empty() && queue_.empty() &&
        workers_.busy() == 0) {
      flush_outbox();
      return 0;
    }
    std::vector<pollfd> fds;
    fds.push_back({link_.get(),
                   static_cast<short>((peer_closed ? 0 : POLLIN) |
                                      (outbox_offset_ < outbox_.size() ? POLLOUT : 0)),
                   0});
    const bool reading_output = outbox_.size() - outbox_offset_ < kOutboxHighWater;
    // Entry k of `owners` says which job and which fd fds[k + 1] belongs to.
    std::vector<std::pair<ActiveJob*, int>> owners;
    for (auto& job : active_) {
      if (!job->exited) {
        fds.push_back({job->process.pidfd.get(), POLLIN, 0});
        owners.emplace_back(job.get(), 0);
      }
      if (reading_output && job->process.stdout_pipe) {
        fds.push_back({job->process.stdout_pipe.get(), POLLIN, 0});
        owners.emplace_back(job.get(), 1);
      }
      if (reading_output && job->process.stderr_pipe) {
        fds.push_back({job->process.stderr_pipe.get(), POLLIN, 0});
        owners.emplace_back(job.get(), 2);
      }
    }
    const std::size_t worker_fds_at = fds.size();
    workers_.add_poll_fds(fds);
    const int ready = ::poll(fds.data(), fds.size(), next_timeout_ms(Clock::now()));
    if (ready < 0 && errno != EINTR) {
      std::cerr << "loopr-runner: poll failed: " << std::strerror(errno) << "\n";
      return 1;
    }
    if (ready > 0 && (fds[0].revents & (POLLIN | POLLHUP | POLLERR))) {
      char buffer[kFrameReadChunk];
      const ssize_t n = ::read(link_.get(), buffer, sizeof buffer);
      if (n > 0) {
        reader_.feed(std::string_view(buffer, static_cast<std::size_t>(n)));
        for (;;) {
          auto frame = reader_.next();
          if (!frame) {
            std::cerr << "loopr-runner: bad frame from the daemon, closing the link: "
                      << frame.error().message << "\n";
            return 1;
          }
          if (!*frame) break;
          auto message = proto::parse_runner_message(**frame);
          if (!message) {
            std::cerr << "loopr-runner: bad message from the daemon, closing the link: "
                      << message.error().message << "\n";
            return 1;
          }
          handle_message(std::move(*message));
        }
      } else if (n == 0 || (errno != EAGAIN && errno != EINTR)) {
        // The daemon is gone: nobody is left to report to.
        peer_closed = true;
        for (auto& job : active_) {
          if (!job->exited) ::kill(job->process.pid, SIGKILL);
        }
        workers_.abandon();
        queue_.clear();
      }
    }
    if (ready > 0) workers_.handle_poll(fds.data() + worker_fds_at, fds.size() - worker_fds_at);
    for (std::size_t k = 0; ready > 0 && k < owners.size(); ++k) {
      if (!(fds[k + 1].revents & (POLLIN | POLLHUP | POLLERR))) continue;
      auto [job, which] = owners[k];
      if (which == 1) read_job_stream(*job, true);
      if (which == 2) read_job_stream(*job, false);
      if (which == 0 && ::waitpid(job->process.pid, &job->wait_status, WNOHANG) > 0) {
        job->exited = true;
      }
    }
    for (auto it = active_.begin(); it != active_.end();) {
      if ((*it)->exited) {
        if (!peer_closed) finish_job(**it);
        it = active_.erase(it);
      } else {
        ++it;
      }
    }
    start_queued_jobs();
    enforce_deadlines(Clock::now());
    workers_.enforce(Clock::now());
    if (!peer_closed && !flush_outbox()) peer_closed = true;
  }
}

}  // namespace loopr::runner
