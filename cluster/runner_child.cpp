#include "cluster/runner_child.hpp"

#include <fcntl.h>
#include <poll.h>
#include <signal.h>
#include <sys/prctl.h>
#include <sys/socket.h>
#include <sys/wait.h>
#include <unistd.h>

#include <chrono>

#include "proto/frame_codec.hpp"

namespace loopr::cluster {

struct RunnerChild::Waiter {
  std::condition_variable changed;
  std::optional<proto::JobResult> result;
  std::vector<proto::OutputChunk> output;
};

Result<std::unique_ptr<RunnerChild>> RunnerChild::start(std::vector<std::string> argv,
                                                        std::uint32_t slots) {
  int pair[2];
  if (::socketpair(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0, pair) != 0) {
    return errno_error(errno, "socketpair for the worker's runner", "");
  }
  UniqueFd mine(pair[0]);
  UniqueFd theirs(pair[1]);
  argv.push_back("--fd");
  argv.push_back("3");
  std::vector<char*> args;
  for (std::string& arg : argv)
    args.push_back(arg.data());
  args.push_back(nullptr);
  const pid_t parent = ::getpid();
  const pid_t pid = ::fork();
  if (pid < 0) return errno_error(errno, "fork of the worker's runner", argv.front());
  if (pid == 0) {
    ::prctl(PR_SET_PDEATHSIG, SIGKILL);
    if (::getppid() != parent) ::_exit(127);
    sigset_t none;
    ::sigemptyset(&none);
    ::sigprocmask(SIG_SETMASK, &none, nullptr);
    const int link = ::fcntl(theirs.get(), F_DUPFD_CLOEXEC, 10);
    if (link < 0 || ::dup2(link, 3) < 0) ::_exit(127);
    ::close_range(4, ~0U, 0);
    ::execv(args[0], args.data());
    ::_exit(127);
  }
  theirs.reset();
  std::unique_ptr<RunnerChild> child(new RunnerChild());
  child->pid_ = pid;
  child->link_ = std::move(mine);
  // The handshake, read here before the reader thread exists.
  proto::FrameReader reader;
  char buffer[4096];
  for (;;) {
    auto frame = reader.next();
    if (!frame) return std::move(frame).error();
    if (*frame) {
      auto message = proto::parse_runner_message(**frame);
      if (!message || !std::holds_alternative<proto::Handshake>(*message)) {
        return make_error(errc::protocol, "the worker's runner did not start with a handshake");
      }
      break;
    }
    pollfd fd{child->link_.get(), POLLIN, 0};
    if (::poll(&fd, 1, 30'000) <= 0) {
      return make_error(errc::sandbox_setup,
                        "the worker's runner did not answer within 30 s; its stderr says why");
    }
    const ssize_t n = ::read(child->link_.get(), buffer, sizeof buffer);
    if (n <= 0) {
      int status = 0;
      ::waitpid(pid, &status, 0);
      child->pid_ = -1;
      return make_error(errc::sandbox_setup,
                        "the worker's runner exited before its handshake (status " +
                            std::to_string(WIFEXITED(status) ? WEXITSTATUS(status) : -1) +
                            "); the line above says why (exit 3: the sandbox cannot be built)");
    }
    reader.feed(std::string_view(buffer, static_cast<std::size_t>(n)));
  }
  proto::HandshakeAck ack;
  ack.accepted = true;
  ack.slots = slots;
  if (auto sent = child->send(ack); !sent) return std::move(sent).error();
  if (reader.buffered() != 0) {
    return make_error(errc::protocol, "the worker's runner sent more than its handshake");
  }
  child->reader_ = std::thread([raw = child.get()] { raw->read_loop(); });
  return child;
}

RunnerChild::~RunnerChild() {
  (void)send(proto::Shutdown{});
  if (pid_ > 0) {
    for (int i = 0; i < 50; ++i) {
      if (::waitpid(pid_, nullptr, WNOHANG) == pid_) {
        pid_ = -1;
        break;
      }
      std::this_thread::sleep_for(std::chrono::milliseconds(100));
    }
    if (pid_ > 0) {
      ::kill(pid_, SIGKILL);
      ::waitpid(pid_, nullptr, 0);
    }
  }
  ::shutdown(link_.get(), SHUT_RDWR);
  if (reader_.joinable()) reader_.join();
}

bool RunnerChild::alive() const {
  std::lock_guard lock(mutex_);
  return !gone_;
}

Result<void> RunnerChild::send(const proto::RunnerMessage& message) {
  auto frame = proto::encode_frame(proto::to_json(message));
  if (!frame) return std::move(frame).error();
  std::lock_guard lock(write_mutex_);
  std::size_t offset = 0;
  while (offset < frame->size()) {
    const ssize_t n =
        ::send(link_.get(), frame->data() + offset, frame->size() - offset, MSG_NOSIGNAL);
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0) return errno_error(errno, "write to the worker's runner", "");
    offset += static_cast<std::size_t>(n);
  }
  return {};
}

void RunnerChild::read_loop() {
  proto::FrameReader reader;
  char buffer[65536];
  std::string why = "the worker's runner closed its link";
  for (;;) {
    const ssize_t n = ::read(link_.get(), buffer, sizeof buffer);
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0) break;
    reader.feed(std::string_view(buffer, static_cast<std::size_t>(n)));
    bool failed = false;
    for (;;) {
      auto frame = reader.next();
      if (!frame) {
        why = "the worker's runner sent a bad frame: " + frame.error().message;
        failed = true;
        break;
      }
      if (!*frame) break;
      auto message = proto::parse_runner_message(**frame);
      if (!message) continue;
      if (auto* heartbeat = std::get_if<proto::Heartbeat>(&*message)) {
        (void)send(proto::HeartbeatAck{heartbeat->seq});
        continue;
      }
      std::lock_guard lock(mutex_);
      if (auto* result = std::get_if<proto::JobResult>(&*message)) {
        auto it = waiters_.find(result->job_id);
        if (it != waiters_.end()) {
          it->second->result = std::move(*result);
          it->second->changed.notify_all();
        }
      } else if (auto* chunk = std::get_if<proto::OutputChunk>(&*message)) {
        auto it = waiters_.find(chunk->job_id);
        if (it != waiters_.end()) {
          it->second->output.push_back(std::move(*chunk));
          it->second->changed.notify_all();
        }
      }
    }
    if (failed) break;
  }
  std::lock_guard lock(mutex_);
  gone_ = true;
  gone_why_ = why;
  for (auto& [id, waiter] : waiters_)
    waiter->changed.notify_all();
}

Result<proto::JobResult> RunnerChild::run(const proto::Job& job, const OutputSink& on_output,
                                          const std::function<void()>& tick) {
  auto waiter = std::make_shared<Waiter>();
  {
    std::lock_guard lock(mutex_);
    if (gone_) return make_error(errc::sandbox_setup, gone_why_);
    waiters_[job.job_id] = waiter;
  }
  if (auto sent = send(job); !sent) {
    std::lock_guard lock(mutex_);
    waiters_.erase(job.job_id);
    return std::move(sent).error();
  }
  std::unique_lock lock(mutex_);
  auto next_tick = std::chrono::steady_clock::now() + std::chrono::seconds(1);
  for (;;) {
    while (!waiter->output.empty()) {
      std::vector<proto::OutputChunk> chunks = std::move(waiter->output);
      waiter->output.clear();
      lock.unlock();
      if (on_output) {
        for (const auto& chunk : chunks)
          on_output(chunk);
      }
      lock.lock();
    }
    if (waiter->result) break;
    if (gone_) {
      waiters_.erase(job.job_id);
      return make_error(errc::sandbox_setup, gone_why_);
    }
    if (std::chrono::steady_clock::now() >= next_tick) {
      lock.unlock();
      if (tick) tick();
      lock.lock();
      next_tick = std::chrono::steady_clock::now() + std::chrono::seconds(1);
      continue;
    }
    waiter->changed.wait_until(lock, next_tick);
  }
  proto::JobResult result = std::move(*waiter->result);
  waiters_.erase(job.job_id);
  return result;
}

void RunnerChild::cancel(const std::string& job_id) {
  (void)send(proto::Cancel{job_id});
}

}  // namespace loopr::cluster
