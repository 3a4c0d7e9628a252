#include "daemon/runner_link.hpp"

#include <fcntl.h>
#include <signal.h>
#include <spdlog/spdlog.h>
#include <sys/prctl.h>
#include <sys/socket.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <asio/co_spawn.hpp>
#include <asio/detached.hpp>
#include <asio/local/stream_protocol.hpp>
#include <asio/posix/stream_descriptor.hpp>
#include <asio/write.hpp>
#include <cerrno>
#include <cstdlib>
#include <cstring>

#include "common/fd_passing.hpp"
#include "common/unique_fd.hpp"
#include "proto/frame_codec.hpp"

namespace loopr::daemon {

namespace {

using Clock = std::chrono::steady_clock;
using asio::redirect_error;
using asio::use_awaitable;

constexpr int kRunnerExitSandboxFailed = 3;  // runner/main.cpp: fail closed
constexpr auto kMaxRestartDelay = std::chrono::seconds(30);
constexpr auto kHandshakeTimeout = std::chrono::seconds(10);
// A runner that lived this long counts as healthy: the backoff starts over.
constexpr auto kHealthyLifetime = std::chrono::seconds(30);
// Beyond a job's own timeout and grace, how long the daemon waits for the
// runner's result before it declares the runner stuck.
constexpr auto kResultSlack = std::chrono::seconds(10);

struct Spawned {
  pid_t pid = -1;
  UniqueFd link;    // daemon's end of the socketpair
  UniqueFd stderr;  // read end of the runner's stderr (and stdout)
  UniqueFd egress;  // daemon's end of the egress link, when asked for
};

// The runner's environment: an allowlist, never looprd's own (which may hold
// API keys). HOME and the XDG folders are what the runner hides from jobs
// (runner/main.cpp); the sanitizer options keep a sanitizer build usable.
std::vector<std::string> runner_environment() {
  std::vector<std::string> env;
  for (const char* name :
       {"PATH", "HOME", "LANG", "LC_ALL", "TZ", "TMPDIR", "XDG_RUNTIME_DIR", "XDG_STATE_HOME",
        "XDG_CONFIG_HOME", "ASAN_OPTIONS", "UBSAN_OPTIONS", "LSAN_OPTIONS"}) {
    if (const char* value = std::getenv(name)) env.push_back(std::string(name) + "=" + value);
  }
  return env;
}

// Closes every fd from `first` up (Linux >= 5.9: close_range; older kernels:
// one close per possible fd). Runs in the forked child before exec.
void close_fds_from(int first) {
  if (::close_range(static_cast<unsigned>(first), ~0U, 0) == 0) return;
  const long limit = ::sysconf(_SC_OPEN_MAX);
  for (long fd = first; fd < (limit > 0 ? limit : 65536); ++fd)
    ::close(static_cast<int>(fd));
}

std::string describe_exit(int status) {
  if (WIFEXITED(status)) return "exited with status " + std::to_string(WEXITSTATUS(status));
  if (WIFSIGNALED(status)) {
    return std::string("was killed by signal ") + ::strsignal(WTERMSIG(status));
  }
  return "ended";
}

// fork + exec of the runner. The daemon is single-threaded (one io thread, no
// helper threads), so the child may allocate; it still only calls what exec
// needs. Every fd of the daemon is O_CLOEXEC, so the runner inherits exactly
// 0 (/dev/null), 1 and 2 (the stderr pipe) and 3 (the link); close_range
// removes anything a library opened without O_CLOEXEC.
Result<Spawned> spawn_runner(const std::vector<std::string>& argv, bool egress) {
  int pair[2];
  if (::socketpair(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0, pair) != 0) {
    return errno_error(errno, "socketpair for the runner link", "");
  }
  UniqueFd daemon_end(pair[0]);
  UniqueFd runner_end(pair[1]);
  UniqueFd egress_daemon_end;
  UniqueFd egress_runner_end;
  if (egress) {
    if (::socketpair(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0, pair) != 0) {
      return errno_error(errno, "socketpair for the runner's egress link", "");
    }
    egress_daemon_end.reset(pair[0]);
    egress_runner_end.reset(pair[1]);
  }
  int pipe_fds[2];
  if (::pipe2(pipe_fds, O_CLOEXEC) != 0) return errno_error(errno, "pipe for runner stderr", "");
  UniqueFd err_read(pipe_fds[0]);
  UniqueFd err_write(pipe_fds[1]);
  UniqueFd dev_null(::open("/dev/null", O_RDONLY | O_CLOEXEC));
  if (!dev_null) return errno_error(errno, "open", "/dev/null");

  std::vector<char*> args;
  for (const std::string& arg : argv)
    args.push_back(const_cast<char*>(arg.c_str()));
  args.push_back(nullptr);
  const std::vector<std::string> env_strings = runner_environment();
  std::vector<char*> env;
  for (const std::string& entry : env_strings)
    env.push_back(const_cast<char*>(entry.c_str()));
  env.push_back(nullptr);
  const pid_t parent = ::getpid();

  const pid_t pid = ::fork();
  if (pid < 0) return errno_error(errno, "fork of the runner", argv.front());
  if (pid == 0) {
    ::prctl(PR_SET_PDEATHSIG, SIGKILL);
    if (::getppid() != parent) ::_exit(127);
    sigset_t none;
    ::sigemptyset(&none);
    ::sigprocmask(SIG_SETMASK, &none, nullptr);
    // Move the fds out of 0..3 first so the dup2s below cannot clobber them.
    const int link = ::fcntl(runner_end.get(), F_DUPFD_CLOEXEC, 10);
    const int err = ::fcntl(err_write.get(), F_DUPFD_CLOEXEC, 10);
    const int in = ::fcntl(dev_null.get(), F_DUPFD_CLOEXEC, 10);
    const int egress_fd = egress ? ::fcntl(egress_runner_end.get(), F_DUPFD_CLOEXEC, 10) : -1;
    if (link < 0 || err < 0 || in < 0 || (egress && egress_fd < 0) || ::dup2(in, 0) < 0 ||
        ::dup2(err, 1) < 0 || ::dup2(err, 2) < 0 || ::dup2(link, 3) < 0 ||
        (egress && ::dup2(egress_fd, 4) < 0)) {
      ::_exit(127);
    }
    // asio opens some fds without O_CLOEXEC (its signal pipe): close all
    // but 0-3 (and 4) so the runner holds exactly what it is given.
    close_fds_from(egress ? 5 : 4);
    ::execve(args[0], args.data(), env.data());
    const char* message = "looprd: cannot exec the lane runner\n";
    [[maybe_unused]] auto ignored = ::write(2, message, std::strlen(message));
    ::_exit(127);
  }
  return Spawned{pid, std::move(daemon_end), std::move(err_read), std::move(egress_daemon_end)};
}

LaneReply not_run(const proto::Job& job, proto::JobStatus status, Error why) {
  LaneReply reply;
  reply.result.job_id = job.job_id;
  reply.result.status = status;
  reply.result.error = why.message;
  reply.link_error = std::move(why);
  return reply;
}

Error shutting_down_error(bool started) {
  return make_error("cancelled",
                    started ? "looprd shut down while this call ran; the call was stopped"
                            : "looprd is shutting down; the call did not run",
                    started ? "check what the call did before running it again"
                            : "run it again once looprd is back");
}

}  // namespace

// The runner passes its egress listener once, while it builds its sandbox.
// A runner that dies first closes the link: nothing to hand over.
asio::awaitable<void> RunnerLink::receive_egress_listener(UniqueFd egress) {
  asio::local::stream_protocol::socket link(io_);
  std::error_code ec;
  link.assign(asio::local::stream_protocol(), egress.release(), ec);
  if (ec) co_return;
  co_await link.async_wait(asio::socket_base::wait_read, redirect_error(use_awaitable, ec));
  if (ec) co_return;
  auto listener = receive_fd(link.native_handle());
  if (!listener) {
    spdlog::debug("lane {}: no egress listener from the runner: {}", config_.lane,
                  listener.error().message);
    co_return;
  }
  spdlog::debug("lane {}: serving the runner's egress listener", config_.lane);
  config_.on_egress_listener(std::move(*listener));
}

std::string_view to_string(LaneState state) {
  switch (state) {
    case LaneState::starting:
      return "starting";
    case LaneState::ready:
      return "ready";
    case LaneState::restarting:
      return "restarting";
    case LaneState::failed:
      return "failed";
    case LaneState::stopped:
      return "stopped";
  }
  return "unknown";
}

struct RunnerLink::PendingJob {
  proto::Job job;
  JobHandling handling;
  Wakeup done;
  std::optional<LaneReply> reply{};
  bool sent = false;
  bool retried = false;           // held after a runner death and queued again
  bool cancel_requested = false;  // a cancel went to the runner: never retried
  Clock::time_point queued_at{};
  Clock::time_point sent_at{};
};

// One runner process's stderr: its last line (why it failed, in its own
// words), and whether the pipe reached EOF (the runner and everything that
// held the pipe are gone, so nothing more will be said).
struct RunnerLink::StderrLog {
  explicit StderrLog(const asio::any_io_executor& executor) : ended(executor) {}
  std::string last_line;
  Wakeup ended;
};

// One runner process's link. Coroutines of an old connection see `closed`
// and stop; the RunnerLink only ever talks to connection_.
struct RunnerLink::Connection {
  Connection(asio::io_context& io, int fd) : socket(io), wake_writer(io.get_executor()) {
    socket.assign(asio::local::stream_protocol(), fd);
  }
  asio::local::stream_protocol::socket socket;
  std::string outbox;
  Wakeup wake_writer;
  bool closed = false;
  bool handshake_done = false;
  Clock::time_point last_heard = Clock::now();
  std::uint64_t heartbeat_seq = 0;

  void close() {
    if (closed) return;
    closed = true;
    std::error_code ignored;
    socket.shutdown(asio::socket_base::shutdown_both, ignored);
    socket.close(ignored);
    wake_writer.notify();
  }
};

RunnerLink::RunnerLink(asio::io_context& io, LaneConfig config, Metrics& metrics,
                       OutputSink on_output)
    : io_(io),
      config_(std::move(config)),
      metrics_(metrics),
      on_output_(std::move(on_output)),
      slots_(config_.slots),
      stopped_(io.get_executor()),
      wake_supervisor_(io.get_executor()) {}

RunnerLink::~RunnerLink() {
  if (pid_ > 0) ::kill(pid_, SIGKILL);
}

void RunnerLink::start() {
  stopping_ = false;
  state_ = LaneState::starting;
  spawn_supervisor();
}

// supervise() catches nothing itself: should anything in it throw (memory),
// the lane is not left without a supervisor: the error is logged, the jobs
// it held are failed, its runner is killed and reaped, and a new supervisor
// starts after the first restart pause.
void RunnerLink::spawn_supervisor() {
  asio::co_spawn(io_, supervise(), [this](std::exception_ptr failure) {
    if (!failure) return;
    std::string what = "unknown exception";
    try {
      std::rethrow_exception(failure);
    } catch (const std::exception& e) {
      what = e.what();
    } catch (...) {
    }
    spdlog::critical("lane {}: the runner supervisor failed ({}); starting it again", config_.lane,
                     what);
    if (connection_) connection_->close();
    connection_.reset();
    if (pid_ > 0) {
      ::kill(pid_, SIGKILL);
      asio::co_spawn(io_, reap(pid_), asio::detached);
      pid_ = -1;
    }
    const Error why =
        make_error(errc::internal, "lane " + config_.lane + " lost its runner (" + what + ")",
                   "the call may have partly run: check its effects before retrying");
    fail_in_flight(why, proto::JobStatus::error);
    fail_queued(why, proto::JobStatus::error);
    state_ = LaneState::restarting;
    auto pause = std::make_shared<asio::steady_timer>(io_, config_.first_restart_delay);
    pause->async_wait([this, pause](const std::error_code&) {
      if (!stopping_) {
        spawn_supervisor();
        return;
      }
      state_ = LaneState::stopped;
      stopped_.notify();
    });
  });
}

asio::awaitable<void> RunnerLink::supervise() {
  auto delay = config_.first_restart_delay;
  while (!stopping_) {
    state_ = LaneState::starting;
    auto spawned = spawn_runner(config_.argv, static_cast<bool>(config_.on_egress_listener));
    if (!spawned) {
      last_error_ =
          "cannot start the runner for lane " + config_.lane + ": " + spawned.error().message;
      spdlog::error("{}", last_error_);
      state_ = LaneState::failed;
      fail_queued(lane_failed_error(), proto::JobStatus::error);
    } else {
      pid_ = spawned->pid;
      const auto started = Clock::now();
      spdlog::info("lane {}: runner started (pid {})", config_.lane, pid_);
      auto stderr_log = std::make_shared<StderrLog>(io_.get_executor());
      asio::co_spawn(io_, log_stderr(spawned->stderr.release(), stderr_log), asio::detached);
      if (spawned->egress) {
        asio::co_spawn(io_, receive_egress_listener(std::move(spawned->egress)), asio::detached);
      }
      auto connection = std::make_shared<Connection>(io_, spawned->link.release());
      connection_ = connection;
      asio::co_spawn(io_, write_loop(connection), asio::detached);
      asio::co_spawn(io_, heartbeat_loop(connection), asio::detached);
      co_await serve(connection);
      const bool handshake_done = connection->handshake_done;
      connection->close();
      connection_.reset();

      ::kill(pid_, SIGKILL);  // it may already be gone; its whole job tree dies with it
      const int status = co_await reap(pid_);
      pid_ = -1;
      // Its last words explain the exit: read them all before deciding (the
      // pipe ends with the runner; a job that inherited it dies with it too).
      co_await stderr_log->ended.wait_until(Clock::now() + std::chrono::seconds(1));
      const std::string& said = stderr_log->last_line;
      const bool sandbox_failed =
          WIFEXITED(status) && WEXITSTATUS(status) == kRunnerExitSandboxFailed;
      std::string why = "the runner " + describe_exit(status);
      if (!said.empty()) why += " (" + said + ")";
      if (stopping_) {
        fail_in_flight(shutting_down_error(true), proto::JobStatus::cancelled);
        break;
      }
      hold_or_fail_in_flight(why);
      metrics_.record_runner_restart(config_.lane);
      if (sandbox_failed) {
        last_error_ = "lane " + config_.lane + " cannot build its sandbox, so it runs no job: " +
                      (said.empty() ? why : said);
      } else if (!handshake_done) {
        // It never became ready (cannot exec, refused version, crashed at
        // start): the calls waiting for it fail now with the reason instead
        // of waiting out their timeout. Retried with backoff like any exit.
        last_error_ = "the runner of lane " + config_.lane + " could not start: " + why;
      }
      if (sandbox_failed || !handshake_done) {
        spdlog::error("{}", last_error_);
        state_ = LaneState::failed;
        fail_queued(lane_failed_error(), proto::JobStatus::error);
      } else {
        last_error_ = "runner for lane " + config_.lane + " restarted: " + why;
        spdlog::warn("{}", last_error_);
        state_ = LaneState::restarting;
      }
      if (Clock::now() - started > kHealthyLifetime) delay = config_.first_restart_delay;
    }
    wake_supervisor_.reset();
    co_await wake_supervisor_.wait_until(Clock::now() + delay);
    delay = std::min<std::chrono::milliseconds>(delay * 2, kMaxRestartDelay);
  }
  state_ = LaneState::stopped;
  fail_queued(shutting_down_error(false), proto::JobStatus::cancelled);
  stopped_.notify();
}

asio::awaitable<void> RunnerLink::serve(std::shared_ptr<Connection> connection) {
  proto::FrameReader reader;
  std::string buffer(64 * 1024, '\0');
  for (;;) {
    std::error_code ec;
    const std::size_t n = co_await connection->socket.async_read_some(
        asio::buffer(buffer), redirect_error(use_awaitable, ec));
    if (ec) {
      if (ec != asio::error::eof && !connection->closed) {
        spdlog::warn("lane {}: runner link: {}", config_.lane, ec.message());
      }
      co_return;
    }
    reader.feed(std::string_view(buffer.data(), n));
    for (;;) {
      auto frame = reader.next();
      if (!frame) {
        spdlog::error("lane {}: bad frame from the runner ({}); restarting it", config_.lane,
                      frame.error().message);
        co_return;
      }
      if (!*frame) break;
      auto message = proto::parse_runner_message(**frame);
      if (!message) {
        spdlog::error("lane {}: bad message from the runner ({}); restarting it", config_.lane,
                      message.error().message);
        co_return;
      }
      connection->last_heard = Clock::now();
      handle(*connection, std::move(*message));
      if (connection->closed) co_return;
    }
  }
}

void RunnerLink::handle(Connection& connection, proto::RunnerMessage message) {
  if (auto* handshake = std::get_if<proto::Handshake>(&message)) {
    if (connection.handshake_done || handshake->lane != config_.lane ||
        handshake->version != proto::kRunnerProtocolVersion) {
      proto::HandshakeAck refusal{false, 0,
                                  "expected lane " + config_.lane + " protocol " +
                                      std::to_string(proto::kRunnerProtocolVersion)};
      // Written at once, not queued: close() below would drop the outbox.
      // Nothing else was sent on this link yet, so the socket buffer has room.
      if (auto frame = proto::encode_frame(proto::to_json(proto::RunnerMessage(refusal)))) {
        [[maybe_unused]] const auto sent = ::send(connection.socket.native_handle(), frame->data(),
                                                  frame->size(), MSG_DONTWAIT | MSG_NOSIGNAL);
      }
      spdlog::error("lane {}: refused runner handshake (lane {}, version {})", config_.lane,
                    handshake->lane, handshake->version);
      connection.close();
      return;
    }
    connection.handshake_done = true;
    send(proto::HandshakeAck{true, slots_, std::nullopt});
    state_ = LaneState::ready;
    last_error_.clear();
    pump();
    return;
  }
  if (auto* result = std::get_if<proto::JobResult>(&message)) {
    auto it = in_flight_.find(result->job_id);
    if (it == in_flight_.end()) return;  // cancelled or failed here already
    auto job = it->second;
    in_flight_.erase(it);
    complete(job, LaneReply{std::move(*result), std::nullopt});
    pump();
    return;
  }
  if (auto* chunk = std::get_if<proto::OutputChunk>(&message)) {
    if (in_flight_.contains(chunk->job_id) && on_output_) on_output_(*chunk);
    return;
  }
  // job_ack, cancel_ack, heartbeat_ack: last_heard is already updated.
}

void RunnerLink::send(const proto::RunnerMessage& message) {
  if (!connection_ || connection_->closed) return;
  auto frame = proto::encode_frame(proto::to_json(message));
  if (!frame) {
    spdlog::error("lane {}: cannot encode {}: {}", config_.lane, proto::message_type(message),
                  frame.error().message);
    return;
  }
  connection_->outbox += *frame;
  connection_->wake_writer.notify();
}

asio::awaitable<void> RunnerLink::write_loop(std::shared_ptr<Connection> connection) {
  while (!connection->closed) {
    if (connection->outbox.empty()) {
      connection->wake_writer.reset();
      co_await connection->wake_writer.wait();
      continue;
    }
    std::string batch;
    batch.swap(connection->outbox);
    std::error_code ec;
    co_await asio::async_write(connection->socket, asio::buffer(batch),
                               redirect_error(use_awaitable, ec));
    if (ec) {
      connection->close();
      co_return;
    }
  }
}

asio::awaitable<void> RunnerLink::heartbeat_loop(std::shared_ptr<Connection> connection) {
  const auto started = Clock::now();
  asio::steady_timer timer(io_);
  while (!connection->closed) {
    timer.expires_after(config_.heartbeat_interval);
    std::error_code ignored;
    co_await timer.async_wait(redirect_error(use_awaitable, ignored));
    if (connection->closed) co_return;
    const auto now = Clock::now();
    if (!connection->handshake_done && now - started > kHandshakeTimeout) {
      spdlog::error("lane {}: the runner sent no handshake within {} s; restarting it",
                    config_.lane, kHandshakeTimeout.count());
      connection->close();
      co_return;
    }
    if (connection->handshake_done &&
        now - connection->last_heard > 3 * config_.heartbeat_interval) {
      spdlog::error("lane {}: the runner stopped answering heartbeats; restarting it",
                    config_.lane);
      connection->close();
      co_return;
    }
    if (connection->handshake_done) send(proto::Heartbeat{++connection->heartbeat_seq});
  }
}

asio::awaitable<void> RunnerLink::log_stderr(int fd, std::shared_ptr<StderrLog> log) {
  asio::posix::stream_descriptor stream(io_, fd);
  std::string pending;
  std::string buffer(4096, '\0');
  for (;;) {
    std::error_code ec;
    const std::size_t n =
        co_await stream.async_read_some(asio::buffer(buffer), redirect_error(use_awaitable, ec));
    if (ec) break;
    pending.append(buffer.data(), n);
    std::size_t newline;
    while ((newline = pending.find('\n')) != std::string::npos) {
      std::string line = pending.substr(0, newline);
      pending.erase(0, newline + 1);
      if (line.empty()) continue;
      const std::string_view prefix = "loopr-runner: ";
      log->last_line = line.starts_with(prefix) ? line.substr(prefix.size()) : line;
      // The runner's report of its cgroup limits (runner/main.cpp): kept for
      // `daemon status`, and a limit that is not applied is a warning.
      const std::string lane_prefix = "lane " + config_.lane + ": ";
      if (log->last_line.starts_with(lane_prefix)) {
        const std::string fact = log->last_line.substr(lane_prefix.size());
        const bool pids = fact.starts_with("pids.max") || fact.starts_with("no pids cgroup");
        const bool memory = fact.starts_with("memory limit") ||
                            fact.starts_with("no memory cgroup") ||
                            fact.starts_with("no memory limit");
        if (pids || memory) cgroup_report_[pids ? "pids" : "memory"] = fact;
        if (fact.find("is NOT applied") != std::string::npos) {
          spdlog::warn("lane {} runner: {}", config_.lane, line);
          continue;
        }
      }
      spdlog::info("lane {} runner: {}", config_.lane, line);
    }
    if (pending.size() > 8192) pending.clear();  // a runner line is never this long
  }
  log->ended.notify();
}

asio::awaitable<int> RunnerLink::reap(pid_t pid) {
  int status = 0;
  const int pidfd = static_cast<int>(::syscall(SYS_pidfd_open, pid, 0));
  if (pidfd >= 0) {
    asio::posix::stream_descriptor waiter(io_, pidfd);
    std::error_code ignored;
    co_await waiter.async_wait(asio::posix::stream_descriptor::wait_read,
                               redirect_error(use_awaitable, ignored));
  }
  // With the pidfd readable the process has exited and this does not block;
  // without pidfd_open (Linux < 5.3) it waits for the SIGKILL sent before.
  while (::waitpid(pid, &status, 0) < 0 && errno == EINTR) {
  }
  co_return status;
}

void RunnerLink::pump() {
  if (state_ != LaneState::ready || !connection_ || connection_->closed) return;
  while (in_flight_.size() < slots_ && !queue_.empty()) {
    auto job = queue_.front();
    queue_.pop_front();
    // Encoded before it counts as in flight: a job that cannot be framed
    // fails alone, and the runner never hears of it.
    auto frame = proto::encode_frame(proto::to_json(proto::RunnerMessage(job->job)));
    if (!frame) {
      complete(job, not_run(job->job, proto::JobStatus::error,
                            make_error(errc::too_large,
                                       "the call is too large to hand to the lane runner: " +
                                           frame.error().message,
                                       "send less at once, e.g. split a large write into a "
                                       "write_file and several edit_file calls")));
      continue;
    }
    job->sent = true;
    job->sent_at = Clock::now();
    in_flight_.emplace(job->job.job_id, job);
    connection_->outbox += *frame;
    connection_->wake_writer.notify();
  }
}

void RunnerLink::complete(const std::shared_ptr<PendingJob>& job, LaneReply reply) {
  job->reply = std::move(reply);
  job->done.notify();
}

Error RunnerLink::lane_failed_error() const {
  return make_error(errc::sandbox_setup, last_error_,
                    "lane " + config_.lane +
                        " cannot run jobs right now, not because of the call: if the message "
                        "names a loopr.toml setting, change it and restart looprd; otherwise it "
                        "is a problem of the machine or of loopr. `looprctl daemon status` shows "
                        "the lane, and tools of other lanes still work");
}

void RunnerLink::fail_in_flight(const Error& why, proto::JobStatus status) {
  auto jobs = std::move(in_flight_);
  in_flight_.clear();
  for (auto& [id, job] : jobs)
    complete(job, not_run(job->job, status, why));
}

// The runner died (`why`) with jobs in flight. A job run with
// retry_on_runner_death, not retried yet and not being cancelled, goes back
// to the front of the queue (in the order the jobs were sent) and runs again
// once the restarted runner's handshake is done (pump); a failed restart
// fails it through fail_queued. Every other job fails now.
void RunnerLink::hold_or_fail_in_flight(const std::string& why) {
  auto jobs = std::move(in_flight_);
  in_flight_.clear();
  std::vector<std::shared_ptr<PendingJob>> held;
  for (auto& [id, job] : jobs) {
    if (job->handling.retry_on_runner_death && !job->retried && !job->cancel_requested) {
      held.push_back(job);
      continue;
    }
    complete(job, not_run(job->job, proto::JobStatus::error,
                          make_error(errc::internal,
                                     "the runner of lane " + config_.lane + " ended while this " +
                                         (job->retried ? "call ran for the second time, after an "
                                                         "earlier runner restart ("
                                                       : "call ran (") +
                                         why + "); it is being restarted",
                                     job->retried ? "the call is not retried again: make it again "
                                                    "once the lane is ready"
                                                  : "the call may have partly run: check its "
                                                    "effects before running it again")));
  }
  std::sort(held.begin(), held.end(),
            [](const auto& a, const auto& b) { return a->sent_at > b->sent_at; });
  const auto now = Clock::now();
  for (auto& job : held) {  // latest first, each pushed in front: sent order
    job->retried = true;
    job->sent = false;
    job->queued_at = now;  // the wait for the new runner has its own budget
    queue_.push_front(job);
    spdlog::info(
        "lane {}: the runner ended while call {} ({}) ran; the call is held and runs once "
        "more on the restarted runner",
        config_.lane, job->job.job_id, job->job.tool);
  }
}

void RunnerLink::fail_queued(const Error& why, proto::JobStatus status) {
  auto jobs = std::move(queue_);
  queue_.clear();
  for (auto& job : jobs)
    complete(job, not_run(job->job, status, why));
}

asio::awaitable<LaneReply> RunnerLink::run(proto::Job job, JobHandling handling) {
  if (stopping_) co_return not_run(job, proto::JobStatus::cancelled, shutting_down_error(false));
  if (state_ == LaneState::failed) {
    co_return not_run(job, proto::JobStatus::error, lane_failed_error());
  }
  if (in_flight_.contains(job.job_id)) {
    co_return not_run(job, proto::JobStatus::error,
                      make_error(errc::internal, "job id " + job.job_id + " is already running",
                                 "report this as a loopr bug"));
  }
  auto pending = std::make_shared<PendingJob>(PendingJob{.job = std::move(job),
                                                         .handling = handling,
                                                         .done = Wakeup(io_.get_executor()),
                                                         .queued_at = Clock::now()});
  queue_.push_back(pending);
  pump();

  const auto budget =
      std::chrono::milliseconds(pending->job.timeout_ms) + config_.term_grace + kResultSlack;
  for (;;) {
    const auto deadline = (pending->sent ? pending->sent_at : pending->queued_at) + budget;
    const bool done = co_await pending->done.wait_until(deadline);
    if (done && pending->reply) {
      pending->reply->retried = pending->retried;
      co_return std::move(*pending->reply);
    }
    if (Clock::now() < (pending->sent ? pending->sent_at : pending->queued_at) + budget) continue;
    if (!pending->sent && pending->retried) {
      std::erase(queue_, pending);
      LaneReply reply = not_run(
          pending->job, proto::JobStatus::error,
          make_error(errc::internal,
                     "the runner of lane " + config_.lane +
                         " ended while this call ran, and no restarted runner took it up within " +
                         std::to_string(budget.count() / 1000) + " s" +
                         (last_error_.empty() ? std::string() : " (" + last_error_ + ")"),
                     "`looprctl daemon status` shows the lane; make the call again once it is "
                     "ready"));
      reply.retried = true;
      co_return reply;
    }
    if (!pending->sent) {
      std::erase(queue_, pending);
      co_return not_run(
          pending->job, proto::JobStatus::timeout,
          make_error(errc::timeout,
                     "the call waited " + std::to_string(budget.count() / 1000) +
                         " s for a free slot in lane " + config_.lane + " (" +
                         std::to_string(slots_) + " slots, all busy) and never started",
                     "the lane is busy: wait for running calls to finish, or ask the user to "
                     "raise [lanes." +
                         config_.lane + "] slots in loopr.toml"));
    }
    // Sent, and the runner is silent past the job's own timeout: it is stuck.
    in_flight_.erase(pending->job.job_id);
    spdlog::error("lane {}: no result for job {} long after its timeout; restarting the runner",
                  config_.lane, pending->job.job_id);
    if (connection_) connection_->close();
    co_return not_run(pending->job, proto::JobStatus::error,
                      make_error(errc::internal,
                                 "the runner of lane " + config_.lane +
                                     " gave no result for this call long after its timeout; it "
                                     "is being restarted",
                                 "the call may have partly run: check its effects before running "
                                 "it again"));
  }
}

bool RunnerLink::cancel(const std::string& job_id) {
  for (auto it = queue_.begin(); it != queue_.end(); ++it) {
    if ((*it)->job.job_id == job_id) {
      auto job = *it;
      queue_.erase(it);
      complete(job, not_run(job->job, proto::JobStatus::cancelled,
                            make_error("cancelled",
                                       job->retried
                                           ? "the call was cancelled while it waited to run again "
                                             "on the restarted runner of lane " +
                                                 config_.lane
                                           : "the call was cancelled before it started")));
      return true;
    }
  }
  if (auto it = in_flight_.find(job_id); it != in_flight_.end()) {
    it->second->cancel_requested = true;
    send(proto::Cancel{job_id});
    return true;
  }
  return false;
}

asio::awaitable<void> RunnerLink::stop(std::chrono::milliseconds grace) {
  stopping_ = true;
  wake_supervisor_.notify();
  fail_queued(shutting_down_error(false), proto::JobStatus::cancelled);
  if (state_ == LaneState::stopped && pid_ < 0) co_return;
  send(proto::Shutdown{});
  const bool exited = co_await stopped_.wait_until(Clock::now() + grace);
  if (!exited) {
    if (pid_ > 0) ::kill(pid_, SIGKILL);
    if (connection_) connection_->close();
    co_await stopped_.wait_until(Clock::now() + std::chrono::seconds(5));
  }
}

std::optional<std::size_t> RunnerLink::jobs_ahead(const std::string& job_id) const {
  std::size_t ahead = 0;
  for (const auto& pending : queue_) {
    if (pending->job.job_id == job_id) return ahead;
    ++ahead;
  }
  return std::nullopt;
}

nlohmann::json RunnerLink::status_json() const {
  nlohmann::json status = {{"lane", config_.lane},
                           {"state", to_string(state_)},
                           {"pid", pid_ > 0 ? nlohmann::json(pid_) : nlohmann::json(nullptr)},
                           {"slots", slots_},
                           {"in_flight", in_flight_.size()},
                           {"queued", queue_.size()},
                           {"restarts", metrics_.runner_restarts(config_.lane)}};
  if (!last_error_.empty()) status["last_error"] = last_error_;
  if (!cgroup_report_.empty()) status["cgroups"] = cgroup_report_;
  return status;
}

}  // namespace loopr::daemon
