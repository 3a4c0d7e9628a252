// DaemonHarness: starts the real looprd in the foreground with its own
// temporary config, state, socket and worktree root, waits for its sd_notify
// READY=1 (the harness is its NOTIFY_SOCKET: no polling, no sleeps), and
// stops it at the end. RawConnection speaks bytes to the control socket for
// tests of malformed input and pipelining.
#pragma once

#include <sys/types.h>

#include <chrono>
#include <nlohmann/json.hpp>
#include <optional>
#include <string>
#include <vector>

#include "client/control_client.hpp"
#include "common/unique_fd.hpp"
#include "proto/line_codec.hpp"
#include "tests/support/temp_tree.hpp"

namespace loopr::test {

struct DaemonOptions {
  // Appended to the generated loopr.toml (which sets worktree_roots, slots,
  // and a short approval timeout).
  std::string extra_toml;
  std::string catalog_toml;  // config/catalog.toml, when not empty
  std::vector<std::string> extra_args;
};

class DaemonHarness {
 public:
  explicit DaemonHarness(DaemonOptions options = {});
  ~DaemonHarness();

  // Starts looprd and waits (bounded) for READY=1; fails the test otherwise.
  void start();
  // Starts looprd expecting it to refuse to start: returns its exit status
  // (fails the test if it reports READY=1 or runs past 30 s).
  int start_expecting_refusal();
  // Sends `signal` and waits for the exit status (bounded: SIGKILL after 20 s).
  int stop(int signal = 15);
  // Waits for looprd to exit by itself; nullopt if it did not within `wait`.
  std::optional<int> wait_exit(std::chrono::milliseconds wait);
  bool running() const { return pid_ > 0; }

  client::ControlClient client() const;
  // One call on a fresh client; fails the test on a transport error.
  nlohmann::json call(const std::string& method,
                      nlohmann::json params = nlohmann::json::object()) const;
  // tool.call with this harness's worktree.
  nlohmann::json tool(const std::string& tool, nlohmann::json args,
                      std::optional<std::string> loop_id = std::nullopt) const;

  pid_t pid() const { return pid_; }
  // Socket activation played as systemd does it, for the next start():
  // `fd` becomes looprd's fd 3, with LISTEN_FDS=listen_fds and
  // LISTEN_PID=listen_pid, or looprd's own pid when listen_pid is empty (set
  // by `sh -c 'export LISTEN_PID=$$; exec looprd ...'`, which keeps the pid).
  void activate_with(int fd, std::string listen_fds = "1", std::string listen_pid = "") {
    activation_fd_ = fd;
    listen_fds_ = std::move(listen_fds);
    listen_pid_ = std::move(listen_pid);
  }
  TempTree& tree() { return tree_; }
  const std::string& socket_path() const { return socket_path_; }
  const std::string& config_dir() const { return config_dir_; }
  const std::string& state_dir() const { return state_dir_; }
  // The repository jobs work in, beneath the configured worktree root.
  const std::string& worktree() const { return worktree_; }
  std::string log() const;  // looprd's stderr so far

 private:
  DaemonOptions options_;
  TempTree tree_;
  std::string config_dir_, state_dir_, socket_path_, root_, worktree_, log_path_;
  pid_t pid_ = -1;
  int activation_fd_ = -1;
  std::string listen_fds_, listen_pid_;

  // Spawns looprd with `notify_path` as its NOTIFY_SOCKET.
  void spawn(const std::string& notify_path);
};

// A raw connection: bytes out, lines in.
class RawConnection {
 public:
  explicit RawConnection(const std::string& socket_path);
  void send(std::string_view bytes);
  // The next JSON line, or nullopt on EOF or after `wait`.
  std::optional<nlohmann::json> receive(std::chrono::milliseconds wait = std::chrono::seconds(30));
  // True once the daemon closed the connection (EOF) within `wait`.
  bool closed_by_peer(std::chrono::milliseconds wait);
  int fd() const { return fd_.get(); }

 private:
  UniqueFd fd_;
  proto::LineReader reader_;
};

nlohmann::json request_line_json(std::int64_t id, const std::string& method,
                                 nlohmann::json params = nlohmann::json::object());
std::string request_line(std::int64_t id, const std::string& method,
                         nlohmann::json params = nlohmann::json::object());

// A stand-in for loopr-runner (for looprd --runner): an executable shell
// script `name` in `tree` running `body`, so the daemon's side of the runner
// link can be tested against a runner that misbehaves. Returns its path.
std::string fake_runner(TempTree& tree, const std::string& name, const std::string& body);

}  // namespace loopr::test
