// RunnerHarness: starts the real loopr-runner for one lane on a socketpair
// (its end inherited as --fd 3), plays the daemon's side of the runner
// protocol, and runs jobs. The worktree root is a TempTree; the attack probe
// is copied into it so jobs can run it whatever folder the build lives in.
#pragma once

#include <sys/types.h>

#include <chrono>
#include <functional>
#include <map>
#include <memory>
#include <nlohmann/json.hpp>
#include <optional>
#include <string>
#include <vector>

#include "common/unique_fd.hpp"
#include "egress/egress_proxy.hpp"
#include "proto/frame_codec.hpp"
#include "proto/runner_messages.hpp"
#include "tests/support/temp_tree.hpp"

namespace loopr::test {

struct RunnerOptions {
  std::string lane = "no-net";
  bool network = false;
  int slots = 2;
  bool stream_output = false;
  int term_grace_ms = 300;
  std::vector<std::string> extra_args;
  bool handshake = true;  // send handshake_ack after the runner's handshake
  // Variables set (or replaced) in the runner's environment, e.g. HOME.
  std::map<std::string, std::string> env;
  // A lane with network: the policy of the egress proxy the harness serves
  // the runner's egress listener with, as looprd would ([egress] in
  // loopr.toml): allowed networks, and the lane's domain lists.
  std::vector<std::string> allowed_networks;
  std::vector<std::string> allow_domains;
  std::vector<std::string> deny_domains;
  // Answers the proxy's name lookups instead of DNS (class 22); empty: DNS.
  std::function<Result<std::vector<IpAddress>>(const std::string& host)> resolve;
};

// The options looprd would run `lane` with: network for net and heavy,
// streamed output for heavy.
RunnerOptions lane_options(const std::string& lane);

class RunnerHarness {
 public:
  explicit RunnerHarness(RunnerOptions options = {});
  ~RunnerHarness();

  TempTree& tree() { return tree_; }
  // The worktree jobs run in (a folder of tree()).
  const std::string& worktree() const { return worktree_; }
  pid_t pid() const { return pid_; }

  void send(const proto::RunnerMessage& message);
  // Writes bytes as they are, for malformed-input tests.
  void send_raw(std::string_view bytes);
  // Next message from the runner, or nullopt if none came within `wait`
  // (the link closed or the runner is busy) — a bound, not a sleep.
  std::optional<proto::RunnerMessage> receive(
      std::chrono::milliseconds wait = std::chrono::seconds(30));
  // Next message of type T, skipping others (job_ack, output_chunk...).
  template <class T>
  std::optional<T> receive_a(std::chrono::milliseconds wait = std::chrono::seconds(30)) {
    for (;;) {
      auto message = receive(wait);
      if (!message) return std::nullopt;
      if (auto* wanted = std::get_if<T>(&*message)) return *wanted;
    }
  }

  proto::Job job(const std::string& id, const std::string& tool, nlohmann::json args,
                 std::uint64_t timeout_ms = 30'000, std::uint64_t max_output = 1'000'000) const;
  // Sends a job and waits for its result.
  proto::JobResult run(const std::string& tool, nlohmann::json args,
                       std::uint64_t timeout_ms = 30'000, std::uint64_t max_output = 1'000'000);
  // run_command with `command`; returns loopr-tool's JSON result.
  nlohmann::json shell(const std::string& command, std::uint64_t timeout_ms = 30'000);
  // Runs the attack probe inside a job and returns its one line.
  std::string probe(const std::string& attack_and_args);

  // The connections the lane's egress proxy reported so far (network lanes).
  std::vector<egress::NetConnection> connections() const;

  // Waits for the runner process to exit and returns its wait status.
  int wait_exit();
  std::string runner_stderr();

 private:
  RunnerOptions options_;
  TempTree tree_;
  std::string worktree_;
  UniqueFd link_;
  UniqueFd stderr_pipe_;
  struct Egress;  // the proxy and its io thread, for network lanes
  std::unique_ptr<Egress> egress_;
  pid_t pid_ = -1;
  proto::FrameReader reader_;
  int next_id_ = 0;
  bool exited_ = false;
  int exit_status_ = 0;
};

}  // namespace loopr::test
