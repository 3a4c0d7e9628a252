#include "tests/daemon/daemon_harness.hpp"

#include <fcntl.h>
#include <gtest/gtest.h>
#include <poll.h>
#include <signal.h>
#include <spawn.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/un.h>
#include <sys/wait.h>
#include <unistd.h>

#include <fstream>
#include <sstream>
#include <thread>

extern char** environ;

namespace loopr::test {
namespace {

using Clock = std::chrono::steady_clock;

UniqueFd bind_datagram(const std::string& path) {
  UniqueFd fd(::socket(AF_UNIX, SOCK_DGRAM | SOCK_CLOEXEC, 0));
  sockaddr_un address{};
  address.sun_family = AF_UNIX;
  path.copy(address.sun_path, sizeof address.sun_path - 1);
  if (!fd || ::bind(fd.get(), reinterpret_cast<sockaddr*>(&address), sizeof address) != 0) {
    ADD_FAILURE() << "cannot bind the notify socket " << path;
    return UniqueFd();
  }
  return fd;
}

}  // namespace

DaemonHarness::DaemonHarness(DaemonOptions options) : options_(std::move(options)) {
  config_dir_ = tree_.path("config");
  state_dir_ = tree_.path("state");
  socket_path_ = tree_.path("run/looprd.sock");
  root_ = tree_.path("work");
  worktree_ = tree_.path("work/repo");
  log_path_ = tree_.path("looprd.log");
  tree_.mkdir("config");
  tree_.mkdir("work/repo");
  std::string toml =
      "[sandbox]\n"
      "worktree_roots = [\"" +
      root_ +
      "\"]\n"
      "[approval]\n"
      "timeout_s = 5\n"
      "[lanes.no-net]\nslots = 2\n"
      "[lanes.net]\nslots = 2\n"
      "[lanes.heavy]\nslots = 1\n";
  tree_.write("config/loopr.toml", toml + options_.extra_toml);
  if (!options_.catalog_toml.empty()) tree_.write("config/catalog.toml", options_.catalog_toml);
}

DaemonHarness::~DaemonHarness() {
  if (pid_ > 0) stop(SIGTERM);
}

void DaemonHarness::spawn(const std::string& notify_path) {
  std::vector<std::string> args = {bin_path("looprd"), "--foreground", "--socket",    socket_path_,
                                   "--config-dir",     config_dir_,    "--state-dir", state_dir_,
                                   "--log-level",      "debug"};
  args.insert(args.end(), options_.extra_args.begin(), options_.extra_args.end());
  const bool activated = activation_fd_ >= 0;
  if (activated && listen_pid_.empty()) {
    // LISTEN_PID must be looprd's own pid: sh learns it ($$) and execs looprd in place.
    args.insert(args.begin(), {"/bin/sh", "-c", "export LISTEN_PID=$$; exec \"$0\" \"$@\""});
  }
  std::vector<char*> argv;
  for (auto& arg : args)
    argv.push_back(arg.data());
  argv.push_back(nullptr);
  std::vector<std::string> env_strings = {"NOTIFY_SOCKET=" + notify_path};
  if (activated) {
    env_strings.push_back("LISTEN_FDS=" + listen_fds_);
    if (!listen_pid_.empty()) env_strings.push_back("LISTEN_PID=" + listen_pid_);
  }
  for (char** e = environ; *e != nullptr; ++e) {
    const std::string_view entry(*e);
    if (entry.starts_with("NOTIFY_SOCKET=") || entry.starts_with("LISTEN_")) continue;
    env_strings.emplace_back(*e);
  }
  std::vector<char*> envp;
  for (auto& entry : env_strings)
    envp.push_back(entry.data());
  envp.push_back(nullptr);

  // dup2 onto fd 3 clears FD_CLOEXEC only when the fd is not already 3.
  UniqueFd moved;
  int activation_fd = activation_fd_;
  if (activation_fd == 3) {
    moved.reset(::fcntl(activation_fd, F_DUPFD_CLOEXEC, 10));
    activation_fd = moved.get();
  }
  posix_spawn_file_actions_t actions;
  posix_spawn_file_actions_init(&actions);
  posix_spawn_file_actions_addopen(&actions, 0, "/dev/null", O_RDONLY, 0);
  posix_spawn_file_actions_addopen(&actions, 2, log_path_.c_str(), O_WRONLY | O_CREAT | O_APPEND,
                                   0600);
  posix_spawn_file_actions_adddup2(&actions, 2, 1);
  if (activated) posix_spawn_file_actions_adddup2(&actions, activation_fd, 3);
  const int rc = ::posix_spawn(&pid_, argv[0], &actions, nullptr, argv.data(), envp.data());
  posix_spawn_file_actions_destroy(&actions);
  if (rc != 0) {
    pid_ = -1;
    ADD_FAILURE() << "cannot start " << argv[0];
  }
}

void DaemonHarness::start() {
  const std::string notify_path = tree_.path("notify.sock");
  ::unlink(notify_path.c_str());
  UniqueFd notify = bind_datagram(notify_path);
  ASSERT_TRUE(notify);
  spawn(notify_path);
  ASSERT_GT(pid_, 0);

  const auto deadline = Clock::now() + std::chrono::seconds(30);
  while (Clock::now() < deadline) {
    pollfd p{notify.get(), POLLIN, 0};
    ::poll(&p, 1, 100);
    if (p.revents & POLLIN) {
      char buffer[256];
      const ssize_t n = ::recv(notify.get(), buffer, sizeof buffer, 0);
      if (n > 0 && std::string_view(buffer, static_cast<std::size_t>(n)).find("READY=1") !=
                       std::string_view::npos) {
        return;
      }
    }
    int status = 0;
    if (::waitpid(pid_, &status, WNOHANG) == pid_) {
      pid_ = -1;
      FAIL() << "looprd exited while starting (status " << status << "):\n" << log();
    }
  }
  FAIL() << "looprd did not report READY=1 within 30 s:\n" << log();
}

int DaemonHarness::start_expecting_refusal() {
  const std::string notify_path = tree_.path("notify.sock");
  ::unlink(notify_path.c_str());
  UniqueFd notify = bind_datagram(notify_path);
  if (!notify) return -1;
  spawn(notify_path);
  if (pid_ <= 0) return -1;
  const auto deadline = Clock::now() + std::chrono::seconds(30);
  while (Clock::now() < deadline) {
    pollfd p{notify.get(), POLLIN, 0};
    ::poll(&p, 1, 100);
    if (p.revents & POLLIN) {
      char buffer[256];
      const ssize_t n = ::recv(notify.get(), buffer, sizeof buffer, 0);
      if (n > 0 && std::string_view(buffer, static_cast<std::size_t>(n)).find("READY=1") !=
                       std::string_view::npos) {
        ADD_FAILURE() << "looprd started (READY=1) where it should have refused:\n" << log();
        return stop(SIGTERM);
      }
    }
    int status = 0;
    if (::waitpid(pid_, &status, WNOHANG) == pid_) {
      pid_ = -1;
      return status;
    }
  }
  ADD_FAILURE() << "looprd neither refused nor started within 30 s:\n" << log();
  return stop(SIGKILL);
}

std::optional<int> DaemonHarness::wait_exit(std::chrono::milliseconds wait) {
  const auto deadline = Clock::now() + wait;
  do {
    int status = 0;
    if (::waitpid(pid_, &status, WNOHANG) == pid_) {
      pid_ = -1;
      return status;
    }
    std::this_thread::sleep_for(std::chrono::milliseconds(10));  // waiting on a process
  } while (Clock::now() < deadline);
  return std::nullopt;
}

int DaemonHarness::stop(int signal) {
  if (pid_ <= 0) return -1;
  ::kill(pid_, signal);
  if (auto status = wait_exit(std::chrono::seconds(20))) return *status;
  ::kill(pid_, SIGKILL);
  int status = 0;
  ::waitpid(pid_, &status, 0);
  pid_ = -1;
  ADD_FAILURE() << "looprd did not stop within 20 s of signal " << signal;
  return status;
}

std::string DaemonHarness::log() const {
  std::ifstream in(log_path_);
  std::stringstream text;
  text << in.rdbuf();
  return text.str();
}

client::ControlClient DaemonHarness::client() const {
  auto opened = client::ControlClient::open(socket_path_);
  if (!opened) throw std::runtime_error("cannot open a client: " + opened.error().message);
  return std::move(*opened);
}

nlohmann::json DaemonHarness::call(const std::string& method, nlohmann::json params) const {
  auto c = client();
  auto result = c.call(method, std::move(params), std::chrono::seconds(60));
  if (!result) {
    ADD_FAILURE() << method << " failed: " << result.error().to_json().dump();
    return nullptr;
  }
  return *result;
}

nlohmann::json DaemonHarness::tool(const std::string& tool, nlohmann::json args,
                                   std::optional<std::string> loop_id) const {
  nlohmann::json params = {{"tool", tool}, {"args", std::move(args)}, {"worktree", worktree_}};
  if (loop_id) params["loop_id"] = *loop_id;
  return call("tool.call", std::move(params));
}

RawConnection::RawConnection(const std::string& socket_path)
    : fd_(::socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0)) {
  sockaddr_un address{};
  address.sun_family = AF_UNIX;
  socket_path.copy(address.sun_path, sizeof address.sun_path - 1);
  if (::connect(fd_.get(), reinterpret_cast<sockaddr*>(&address), sizeof address) != 0) {
    ADD_FAILURE() << "cannot connect to " << socket_path;
  }
}

void RawConnection::send(std::string_view bytes) {
  while (!bytes.empty()) {
    const ssize_t n = ::send(fd_.get(), bytes.data(), bytes.size(), MSG_NOSIGNAL);
    if (n <= 0) return;
    bytes.remove_prefix(static_cast<std::size_t>(n));
  }
}

std::optional<nlohmann::json> RawConnection::receive(std::chrono::milliseconds wait) {
  const auto deadline = Clock::now() + wait;
  for (;;) {
    auto next = reader_.next();
    if (!next) return std::nullopt;
    if (*next) return **next;
    const auto left =
        std::chrono::duration_cast<std::chrono::milliseconds>(deadline - Clock::now());
    if (left.count() <= 0) return std::nullopt;
    pollfd p{fd_.get(), POLLIN, 0};
    if (::poll(&p, 1, static_cast<int>(left.count())) <= 0) return std::nullopt;
    char buffer[65536];
    const ssize_t n = ::recv(fd_.get(), buffer, sizeof buffer, 0);
    if (n <= 0) return std::nullopt;
    reader_.feed(std::string_view(buffer, static_cast<std::size_t>(n)));
  }
}

bool RawConnection::closed_by_peer(std::chrono::milliseconds wait) {
  const auto deadline = Clock::now() + wait;
  char buffer[65536];
  while (Clock::now() < deadline) {
    pollfd p{fd_.get(), POLLIN, 0};
    const auto left =
        std::chrono::duration_cast<std::chrono::milliseconds>(deadline - Clock::now());
    if (::poll(&p, 1, static_cast<int>(std::max<std::int64_t>(left.count(), 1))) <= 0) continue;
    const ssize_t n = ::recv(fd_.get(), buffer, sizeof buffer, 0);
    if (n == 0) return true;
    if (n < 0 && errno != EINTR && errno != EAGAIN) return true;  // ECONNRESET
  }
  return false;
}

nlohmann::json request_line_json(std::int64_t id, const std::string& method,
                                 nlohmann::json params) {
  return {{"id", id}, {"method", method}, {"params", std::move(params)}};
}

std::string request_line(std::int64_t id, const std::string& method, nlohmann::json params) {
  return request_line_json(id, method, std::move(params)).dump() + "\n";
}

std::string fake_runner(TempTree& tree, const std::string& name, const std::string& body) {
  tree.write(name, "#!/bin/sh\n" + body);
  ::chmod(tree.path(name).c_str(), 0755);
  return tree.path(name);
}

}  // namespace loopr::test
