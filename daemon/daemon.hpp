// Daemon: looprd put together. Owns the io_context (one thread, C++20
// coroutines), the store, the catalog, the lane runners, the ToolRouter and
// the control socket, and runs them until SIGTERM/SIGINT or daemon.shutdown.
// SIGHUP reloads catalog.toml; a bad catalog is refused and the old one kept.
//
// Construction does all the work that can fail for reasons the user must fix
// (config, state folder, socket) and throws ConfigError / StartupError; run()
// does not throw.
#pragma once

#include <asio/io_context.hpp>
#include <asio/signal_set.hpp>
#include <chrono>
#include <functional>
#include <memory>
#include <optional>
#include <span>
#include <string>
#include <vector>

#include "common/unique_fd.hpp"
#include "config/paths.hpp"
#include "config/settings.hpp"
#include "daemon/approval_gate.hpp"
#include "daemon/control_server.hpp"
#include "daemon/event_bus.hpp"
#include "daemon/loop_tools.hpp"
#include "daemon/methods.hpp"
#include "daemon/metrics.hpp"
#include "daemon/provider_registry.hpp"
#include "daemon/read_tracker.hpp"
#include "daemon/runner_link.hpp"
#include "daemon/tool_router.hpp"
#include "egress/egress_proxy.hpp"
#include "hooks/hook_runner.hpp"
#include "loops/loop_engine.hpp"
#include "memory/notebook.hpp"
#include "notify/desktop_notifier.hpp"
#include "notify/webhook_notifier.hpp"
#include "store/store.hpp"

namespace loopr::daemon {

struct DaemonOptions {
  config::Paths paths;
  config::Settings settings;
  std::string runner_binary;  // loopr-runner
  std::string tool_binary;    // loopr-tool
  // The control socket systemd passed (socket activation), bound to
  // paths.socket_path; absent, looprd binds that path itself.
  std::optional<UniqueFd> activation_socket;
  // Called once the socket listens (before the first client is served).
  std::function<void()> on_ready;
};

class Daemon {
 public:
  explicit Daemon(DaemonOptions options);
  ~Daemon();

  // Serves until shut down; returns the process exit status.
  int run();
  void request_shutdown(const std::string& why);
  // Reloads catalog.toml; false (and the old catalog kept) if it is wrong.
  bool reload_catalog();

 private:
  // Whether the lane's jobs reach the network through the egress proxy (a
  // lane with network and the sandbox on; off, they share the host's).
  bool uses_egress_proxy(const config::LaneSettings& lane_settings) const;
  // A connection the proxy reports: metrics, log, event net.connect.
  void publish_connection(const egress::NetConnection& connection);
  std::vector<std::string> runner_argv(const std::string& lane,
                                       const config::LaneSettings& settings) const;
  asio::awaitable<void> shut_down();
  void watch_signals();
  RunnerLink& lane_named(std::string_view name);
  // Subscribes `handle` to `topics` of the event bus, with each event's name
  // and data.
  void listen(std::span<const char* const> topics,
              std::function<void(const std::string&, const nlohmann::json&)> handle);
  // Starts the [[hooks]]: sandboxed ones run on `sandbox_lane`.
  void start_hooks(RunnerLink& sandbox_lane);
  void watch_reload();
  void publish_output(const proto::OutputChunk& chunk);

  DaemonOptions options_;
  asio::io_context io_;
  asio::signal_set signals_;
  asio::signal_set reload_signal_;
  Store store_;
  EventBus events_;
  Metrics metrics_;
  ReadTracker reads_;
  ApprovalGate approvals_;
  std::unique_ptr<egress::EgressProxy> egress_;  // serves the lanes with network
  std::vector<std::unique_ptr<RunnerLink>> lanes_;
  // [[hooks]] set: the user's hooks; the router and the event bus call them.
  std::unique_ptr<hooks::HookRunner> hooks_;
  // Workers on other machines ([cluster]); null without one. Outlives the
  // router, which holds it.
  std::unique_ptr<cluster::ClusterLink> cluster_;
  std::unique_ptr<ToolRouter> router_;
  std::unique_ptr<memory::Notebook> notebook_;
  std::unique_ptr<ProviderRegistry> providers_;
  // [notify] webhook_url set: told of the events a person is needed for.
  // Declared before loops_, so it outlives the engine's last events.
  std::unique_ptr<notify::WebhookNotifier> notifier_;
  // [notify] desktop = true: the same, on the desktop (D-Bus).
  std::unique_ptr<notify::DesktopNotifier> desktop_;
  std::unique_ptr<LoopTools> loop_tools_;
  std::unique_ptr<loops::LoopEngine> loops_;
  std::unique_ptr<MethodRegistry> methods_;
  std::unique_ptr<ControlServer> server_;
  std::chrono::steady_clock::time_point started_;
  bool shutting_down_ = false;
};

// Loads the catalog (built-in, then the user's catalog.toml) and checks the
// settings against it. Throws ConfigError.
std::shared_ptr<const CompiledCatalog> load_catalog(const config::Paths& paths,
                                                    const config::Settings& settings);

}  // namespace loopr::daemon
