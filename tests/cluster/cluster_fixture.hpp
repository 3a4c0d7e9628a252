// Helpers for the cluster tests (issue 28): a real nats-server with
// JetStream on loopback with its own temporary store, and real workers
// (`loopr-runner --join`) as separate processes with their own state
// folders. As root, each worker runs in a network namespace of its own that
// reaches nothing but the NATS port, through a bridge (nats_bridge.py) over
// a Unix socket: nothing is shared with looprd but what NATS carries.
#pragma once

#include <sys/types.h>

#include <chrono>
#include <functional>
#include <memory>
#include <nlohmann/json.hpp>
#include <optional>
#include <string>
#include <vector>

#include "tests/support/temp_tree.hpp"

namespace loopr::test {

// A child process whose stdout and stderr go to a log file.
class Child {
 public:
  Child(std::vector<std::string> argv, std::string log_path);
  ~Child();  // SIGKILL and reap
  Child(const Child&) = delete;
  Child& operator=(const Child&) = delete;
  pid_t pid() const { return pid_; }
  void signal(int number) const;
  // The exit status (or 128 + signal), once it exits within `wait`.
  std::optional<int> wait_exit(std::chrono::milliseconds wait);
  std::string log() const;

 private:
  pid_t pid_ = -1;
  std::string log_path_;
};

class NatsServer {
 public:
  // `config`: a nats-server configuration to add (authorization, ...).
  explicit NatsServer(TempTree& tree, std::string config = {});
  // Starts it and waits until it accepts connections.
  void start();
  // SIGTERM, and waits for it to exit.
  void stop();
  std::string url() const { return "nats://127.0.0.1:" + std::to_string(port_); }
  int port() const { return port_; }

 private:
  TempTree& tree_;
  std::string config_;
  int port_ = 0;
  std::unique_ptr<Child> process_;
};

struct WorkerSpec {
  WorkerSpec(std::string id_, std::vector<std::string> labels_ = {}, std::string creds_ = {})
      : id(std::move(id_)), labels(std::move(labels_)), creds(std::move(creds_)) {}
  std::string id;
  std::vector<std::string> labels;
  std::string creds;  // absolute path, or empty
  int slots = 1;
};

class Worker {
 public:
  Worker(TempTree& tree, const NatsServer& nats, WorkerSpec spec);
  const std::string& id() const { return spec_.id; }
  const std::string& state() const { return state_; }
  Child& process() { return *process_; }
  std::string log() const { return process_->log(); }
  // Whether it runs in a network namespace of its own (as root).
  bool isolated() const { return bridge_ != nullptr; }

 private:
  WorkerSpec spec_;
  std::string state_;
  std::unique_ptr<Child> bridge_;  // the host side of the NATS bridge
  std::unique_ptr<Child> process_;
};

// Polls `check` every 50 ms until it holds; false after `wait`.
bool eventually(const std::function<bool()>& check,
                std::chrono::milliseconds wait = std::chrono::seconds(30));

// A free TCP port on 127.0.0.1 (bound, then released).
int free_port();

}  // namespace loopr::test
