#include "tests/cluster/cluster_fixture.hpp"

#include <fcntl.h>
#include <gtest/gtest.h>
#include <netinet/in.h>
#include <signal.h>
#include <spawn.h>
#include <sys/socket.h>
#include <sys/wait.h>
#include <unistd.h>

#include <fstream>
#include <sstream>
#include <thread>

extern char** environ;

namespace loopr::test {

using Clock = std::chrono::steady_clock;

Child::Child(std::vector<std::string> argv, std::string log_path) : log_path_(std::move(log_path)) {
  std::vector<char*> args;
  for (std::string& arg : argv)
    args.push_back(arg.data());
  args.push_back(nullptr);
  posix_spawn_file_actions_t actions;
  posix_spawn_file_actions_init(&actions);
  posix_spawn_file_actions_addopen(&actions, 0, "/dev/null", O_RDONLY, 0);
  posix_spawn_file_actions_addopen(&actions, 1, log_path_.c_str(), O_WRONLY | O_CREAT | O_APPEND,
                                   0600);
  posix_spawn_file_actions_adddup2(&actions, 1, 2);
  const int rc = ::posix_spawnp(&pid_, args[0], &actions, nullptr, args.data(), environ);
  posix_spawn_file_actions_destroy(&actions);
  if (rc != 0) {
    pid_ = -1;
    ADD_FAILURE() << "cannot start " << argv[0];
  }
}

Child::~Child() {
  if (pid_ > 0) {
    ::kill(pid_, SIGCONT);
    ::kill(pid_, SIGKILL);
    ::waitpid(pid_, nullptr, 0);
  }
}

void Child::signal(int number) const {
  if (pid_ > 0) ::kill(pid_, number);
}

std::optional<int> Child::wait_exit(std::chrono::milliseconds wait) {
  if (pid_ <= 0) return std::nullopt;
  const auto deadline = Clock::now() + wait;
  while (Clock::now() < deadline) {
    int status = 0;
    if (::waitpid(pid_, &status, WNOHANG) == pid_) {
      pid_ = -1;
      return WIFEXITED(status) ? WEXITSTATUS(status) : 128 + WTERMSIG(status);
    }
    std::this_thread::sleep_for(std::chrono::milliseconds(20));
  }
  return std::nullopt;
}

std::string Child::log() const {
  std::ifstream in(log_path_);
  std::stringstream text;
  text << in.rdbuf();
  return text.str();
}

int free_port() {
  const int fd = ::socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
  sockaddr_in address{};
  address.sin_family = AF_INET;
  address.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  address.sin_port = 0;
  socklen_t length = sizeof address;
  if (::bind(fd, reinterpret_cast<sockaddr*>(&address), sizeof address) != 0 ||
      ::getsockname(fd, reinterpret_cast<sockaddr*>(&address), &length) != 0) {
    ::close(fd);
    return 0;
  }
  ::close(fd);
  return ntohs(address.sin_port);
}

namespace {

bool accepts_connections(int port) {
  const int fd = ::socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
  sockaddr_in address{};
  address.sin_family = AF_INET;
  address.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  address.sin_port = htons(static_cast<std::uint16_t>(port));
  const bool ok = ::connect(fd, reinterpret_cast<sockaddr*>(&address), sizeof address) == 0;
  ::close(fd);
  return ok;
}

}  // namespace

bool eventually(const std::function<bool()>& check, std::chrono::milliseconds wait) {
  const auto deadline = Clock::now() + wait;
  while (Clock::now() < deadline) {
    if (check()) return true;
    std::this_thread::sleep_for(std::chrono::milliseconds(50));
  }
  return check();
}

NatsServer::NatsServer(TempTree& tree, std::string config)
    : tree_(tree), config_(std::move(config)), port_(free_port()) {
  tree_.mkdir("nats/store");
  tree_.write("nats/server.conf",
              "jetstream { store_dir: \"" + tree_.path("nats/store") + "\" }\n" + config_);
}

// Debian puts it in /usr/sbin, which an ordinary user's PATH may lack.
std::string nats_server_binary() {
  for (const char* path :
       {"/usr/sbin/nats-server", "/usr/bin/nats-server", "/usr/local/bin/nats-server"}) {
    if (::access(path, X_OK) == 0) return path;
  }
  return "nats-server";
}

void NatsServer::start() {
  process_ = std::make_unique<Child>(
      std::vector<std::string>{nats_server_binary(), "-c", tree_.path("nats/server.conf"), "-a",
                               "127.0.0.1", "-p", std::to_string(port_)},
      tree_.path("nats/server.log"));
  ASSERT_TRUE(eventually([this] { return accepts_connections(port_); }))
      << "nats-server did not start:\n"
      << process_->log();
}

void NatsServer::stop() {
  if (!process_) return;
  process_->signal(SIGTERM);
  if (!process_->wait_exit(std::chrono::seconds(10))) process_->signal(SIGKILL);
  process_.reset();
}

Worker::Worker(TempTree& tree, const NatsServer& nats, WorkerSpec spec) : spec_(std::move(spec)) {
  state_ = tree.path("workers/" + spec_.id);
  tree.mkdir("workers/" + spec_.id);
  std::vector<std::string> command = {bin_path("loopr-runner"),
                                      "--join",
                                      nats.url(),
                                      "--state",
                                      state_,
                                      "--id",
                                      spec_.id,
                                      "--tool",
                                      bin_path("loopr-tool"),
                                      "--slots",
                                      std::to_string(spec_.slots)};
  if (!spec_.labels.empty()) {
    std::string labels;
    for (const std::string& label : spec_.labels)
      labels += (labels.empty() ? "" : ",") + label;
    command.push_back("--labels");
    command.push_back(labels);
  }
  if (!spec_.creds.empty()) {
    command.push_back("--creds");
    command.push_back(spec_.creds);
  }
  const std::string log = tree.path("workers/" + spec_.id + ".log");
  if (::geteuid() != 0) {
    process_ = std::make_unique<Child>(command, log);
    return;
  }
  // As root: a network namespace of its own, where 127.0.0.1:PORT is a
  // bridge to a Unix socket whose other end reaches the real server.
  const std::string socket_path = tree.path("workers/" + spec_.id + ".nats.sock");
  const std::string bridge = std::string(LOOPR_CLUSTER_TEST_DIR) + "/nats_bridge.py";
  bridge_ = std::make_unique<Child>(
      std::vector<std::string>{"python3", bridge, "host", socket_path, std::to_string(nats.port())},
      tree.path("workers/" + spec_.id + ".bridge.log"));
  eventually([&] { return ::access(socket_path.c_str(), F_OK) == 0; }, std::chrono::seconds(10));
  std::string exec_line = "exec";
  for (const std::string& arg : command)
    exec_line += " '" + arg + "'";
  const std::string script = "ip link set lo up && { python3 '" + bridge + "' inside " +
                             std::to_string(nats.port()) + " '" + socket_path + "' & } && " +
                             exec_line;
  process_ = std::make_unique<Child>(
      std::vector<std::string>{"unshare", "--net", "--", "/bin/sh", "-c", script}, log);
}

}  // namespace loopr::test
