#include "daemon/daemon.hpp"

#include <signal.h>
#include <spdlog/spdlog.h>

#include <asio/co_spawn.hpp>
#include <asio/detached.hpp>
#include <asio/post.hpp>
#include <filesystem>

#include "daemon/hook_lane.hpp"
#include "daemon/hosted_tools.hpp"
#include "daemon/systemd_notify.hpp"

namespace loopr::daemon {

std::shared_ptr<const CompiledCatalog> load_catalog(const config::Paths& paths,
                                                    const config::Settings& settings) {
  config::Catalog catalog = config::Catalog::load({paths.user_catalog_file()});
  settings.validate_against(catalog);
  return CompiledCatalog::build(std::move(catalog));
}

namespace {

// The policy of the lanes' egress proxy, from settings load() has checked.
egress::EgressPolicy egress_policy(const config::Settings& settings) {
  // [web_fetch] and [web_search] allowed_networks are those tools' own: the
  // router grants them per call (ToolRouter, EgressProxy::attribute).
  const std::vector<std::string>& allowed = settings.egress.allowed_networks;
  std::map<std::string, egress::LaneDomainRules> lanes;
  for (const auto& [lane, rules] : settings.egress.lanes) {
    const std::string key = "egress.lanes." + lane;
    lanes[lane] = {DomainList::parse(rules.allow_domains, key + ".allow_domains").value(),
                   DomainList::parse(rules.deny_domains, key + ".deny_domains").value()};
  }
  return egress::EgressPolicy(egress::AddressPolicy::from_strings(allowed).value(),
                              std::move(lanes));
}

}  // namespace

Daemon::Daemon(DaemonOptions options)
    : options_(std::move(options)),
      signals_(io_, SIGTERM, SIGINT),
      reload_signal_(io_, SIGHUP),
      store_(Store::open(options_.paths.state_dir)),
      approvals_(io_.get_executor(), events_),
      started_(std::chrono::steady_clock::now()) {
  const config::Settings& settings = options_.settings;
  auto catalog = load_catalog(options_.paths, settings);
  if (settings.sandbox.mode == config::SandboxMode::off) {
    spdlog::critical(
        "sandbox = \"off\" in loopr.toml: tool calls run WITHOUT any isolation from this machine; "
        "privileged tools will ask for approval");
  }
  if (settings.sandbox.worktree_roots.empty()) {
    spdlog::warn(
        "no [sandbox] worktree_roots in loopr.toml: tool calls have nowhere to write; "
        "add the folders that hold your repositories");
  }

  egress_ = std::make_unique<egress::EgressProxy>(
      io_, egress_policy(settings),
      [this](const egress::NetConnection& connection) { publish_connection(connection); });
  ToolRouter::Lanes lane_map;
  for (std::string_view lane : config::kRunnerLanes) {
    const config::LaneSettings& lane_settings = settings.lanes.at(std::string(lane));
    LaneConfig config;
    config.lane = std::string(lane);
    config.argv = runner_argv(config.lane, lane_settings);
    config.slots = static_cast<std::uint32_t>(lane_settings.slots);
    config.heartbeat_interval = std::chrono::milliseconds(settings.daemon.heartbeat_interval_ms);
    config.first_restart_delay =
        std::chrono::milliseconds(settings.daemon.runner_restart_backoff_ms);
    if (uses_egress_proxy(lane_settings)) {
      config.on_egress_listener = [this, name = config.lane](UniqueFd listener) {
        egress_->serve(name, std::move(listener));
      };
    }
    auto link = std::make_unique<RunnerLink>(
        io_, std::move(config), metrics_,
        [this](const proto::OutputChunk& chunk) { publish_output(chunk); });
    lane_map.emplace(link->lane(), link.get());
    lanes_.push_back(std::move(link));
  }
  router_ =
      std::make_unique<ToolRouter>(io_, options_.settings, std::move(catalog), std::move(lane_map),
                                   approvals_, events_, metrics_, store_, reads_);
  router_->set_egress_proxy(egress_.get());
  if (options_.settings.cluster.configured()) {
    cluster_ = std::make_unique<cluster::ClusterLink>(
        io_, options_.settings.cluster, options_.paths.state_dir + "/cluster",
        [this](const proto::OutputChunk& chunk) { publish_output(chunk); });
    router_->set_cluster(cluster_.get());
  }
  notebook_ = std::make_unique<memory::Notebook>(store_, options_.settings.memory);
  host_memory_tools(*router_, *notebook_);
  host_oracle(*router_, reads_, options_.settings,
              [this](const std::string& name) { return providers_->get(name); });
  providers_ = std::make_unique<ProviderRegistry>(io_, options_.settings, config::process_env());
  loop_tools_ = std::make_unique<LoopTools>(*router_, reads_);
  loops_ = std::make_unique<loops::LoopEngine>(loops::LoopEngineServices{
      io_, options_.settings, store_, *loop_tools_,
      [this](const std::string& name) { return providers_->get(name); },
      [this](std::string_view event, nlohmann::json data) {
        events_.publish(event, std::move(data));
      },
      [this](std::string_view event) { return events_.has_subscribers(event); },
      options_.paths.state_dir});
  if (options_.settings.notify.configured()) {
    notifier_ = std::make_unique<notify::WebhookNotifier>(io_, options_.settings.notify);
    listen(notify::WebhookNotifier::kTopics,
           [this](const std::string& event, const nlohmann::json& data) {
             notifier_->on_event(event, data);
           });
  }
  if (options_.settings.notify.desktop) {
    desktop_ = std::make_unique<notify::DesktopNotifier>(io_, options_.settings.notify);
    listen(notify::DesktopNotifier::kTopics,
           [this](const std::string& event, const nlohmann::json& data) {
             desktop_->on_event(event, data);
           });
  }
  if (!options_.settings.hooks.empty()) start_hooks(lane_named(config::lanes::no_net));
  std::vector<RunnerLink*> lanes;
  for (auto& lane : lanes_)
    lanes.push_back(lane.get());
  methods_ = std::make_unique<MethodRegistry>(DaemonServices{
      *router_, *loops_, approvals_, events_, metrics_, lanes,
      [this] { return server_ ? server_->client_count() : 0; },
      [this] { request_shutdown("daemon.shutdown"); }, started_, [this] { return shutting_down_; },
      *notebook_, store_, options_.settings, cluster_.get()});
  server_ = std::make_unique<ControlServer>(
      io_, options_.paths.socket_path,
      [this](ClientSession& session, proto::Request request) {
        return methods_->dispatch(session, std::move(request));
      },
      static_cast<std::size_t>(settings.daemon.max_client_queue_bytes));
  server_->on_session = [this](ClientSession& session) {
    session.on_close = [this](ClientSession& closed) {
      if (closed.subscription) events_.unsubscribe(*closed.subscription);
      reads_.forget_session(closed.name());
      // No one is left to read their results.
      if (const std::size_t cancelled = router_->cancel_calls_of_client(closed.id())) {
        spdlog::info("{} went away: {} of its calls cancelled", closed.name(), cancelled);
      }
    };
  };
  if (options_.activation_socket) {
    server_->adopt(std::move(*options_.activation_socket));
    options_.activation_socket.reset();
  } else {
    server_->listen();
  }
}

Daemon::~Daemon() = default;

void Daemon::listen(std::span<const char* const> topics,
                    std::function<void(const std::string&, const nlohmann::json&)> handle) {
  events_.subscribe(
      {topics.begin(), topics.end()}, [handle = std::move(handle)](const std::string& line) {
        const nlohmann::json event = nlohmann::json::parse(line, nullptr, false);
        if (!event.is_object() || !event.contains("event") || !event["event"].is_string()) {
          return;
        }
        handle(event["event"].get<std::string>(), event.value("data", nlohmann::json::object()));
      });
}

RunnerLink& Daemon::lane_named(std::string_view name) {
  for (auto& lane : lanes_) {
    if (lane->lane() == name) return *lane;
  }
  throw std::logic_error("no lane " + std::string(name));
}

void Daemon::start_hooks(RunnerLink& sandbox_lane) {
  hooks_ = std::make_unique<hooks::HookRunner>(
      io_, options_.settings.hooks, hooks_in_lane(sandbox_lane),
      [this](const nlohmann::json& failure) {
        spdlog::warn("hook {} on {} failed: {}", failure.value("hook", ""),
                     failure.value("event", ""), failure.value("reason", ""));
        events_.publish("hook.failed", failure);
      });
  router_->set_hooks(hooks_.get());
  listen(hooks::HookRunner::kTopics, [this](const std::string& event, const nlohmann::json& data) {
    hooks_->on_event(event, data);
  });
  spdlog::info("{} hook(s) from [[hooks]]", options_.settings.hooks.size());
}

std::vector<std::string> Daemon::runner_argv(const std::string& lane,
                                             const config::LaneSettings& lane_settings) const {
  const config::Settings& settings = options_.settings;
  std::vector<std::string> argv = {options_.runner_binary,
                                   "--lane",
                                   lane,
                                   "--fd",
                                   "3",
                                   "--tool",
                                   options_.tool_binary,
                                   "--slots",
                                   std::to_string(lane_settings.slots),
                                   "--tmp-size-mb",
                                   std::to_string(settings.sandbox.tmp_size_mb),
                                   "--sandbox",
                                   std::string(config::to_string(settings.sandbox.mode))};
  if (lane_settings.network) argv.push_back("--network");
  if (uses_egress_proxy(lane_settings)) {
    argv.insert(argv.end(),
                {"--egress-fd", "4", "--egress-port", std::to_string(settings.egress.port)});
  }
  if (lane == config::lanes::heavy) argv.push_back("--stream-output");
  argv.insert(argv.end(),
              {"--warm-workers", std::to_string(lane_settings.warm_workers),
               "--warm-worker-idle-ms", std::to_string(lane_settings.warm_worker_idle_s * 1000)});
  if (lane_settings.memory_mb.value_or(0) > 0) {
    argv.push_back("--memory-mb");
    argv.push_back(std::to_string(*lane_settings.memory_mb));
  }
  if (lane_settings.address_space_mb.value_or(0) > 0) {
    argv.push_back("--address-space-mb");
    argv.push_back(std::to_string(*lane_settings.address_space_mb));
  }
  if (lane_settings.pids_max) {
    argv.push_back("--max-processes");
    argv.push_back(std::to_string(*lane_settings.pids_max));
  }
  for (const std::string& root : settings.sandbox.worktree_roots) {
    argv.push_back("--root");
    argv.push_back(root);
  }
  // The daemon's own places: jobs must not even reach them by path.
  const std::string socket_folder =
      std::filesystem::path(options_.paths.socket_path).parent_path().string();
  // Passed apart from sandbox.hidden_paths so that an error names the folder.
  for (const auto& [kind, hidden] :
       {std::pair<const char*, const std::string&>{"runtime", socket_folder},
        {"state", options_.paths.state_dir},
        {"config", options_.paths.config_dir}}) {
    argv.push_back("--hide-daemon-folder");
    argv.push_back(std::string(kind) + "=" + hidden);
  }
  for (const std::string& hidden : settings.sandbox.hidden_paths) {
    argv.push_back("--hide");
    argv.push_back(hidden);
  }
  // Readable by jobs beyond the system folders and their own worktree, even
  // under a root or a hidden path (the daemon's own places stay hidden).
  for (const std::string& path : settings.sandbox.read_paths) {
    argv.push_back("--read-path");
    argv.push_back(path);
  }
  return argv;
}

bool Daemon::uses_egress_proxy(const config::LaneSettings& lane_settings) const {
  return lane_settings.network && options_.settings.sandbox.mode == config::SandboxMode::on;
}

void Daemon::publish_connection(const egress::NetConnection& connection) {
  const std::uint64_t bytes = connection.bytes_sent + connection.bytes_received;
  metrics_.record_connection(connection.lane, connection.allowed, connection.rule, bytes);
  if (connection.allowed && connection.rule == "allowed") {
    spdlog::debug("egress {}: {}:{} ({}) {} bytes", connection.lane, connection.host,
                  connection.port, connection.address, bytes);
  } else {
    spdlog::info("egress {}: {}", connection.lane, connection.message);
  }
  if (!events_.has_subscribers("net.connect")) return;
  nlohmann::json data = {{"lane", connection.lane},
                         {"call_id", connection.call_id},
                         {"host", connection.host},
                         {"port", connection.port},
                         {"address", connection.address},
                         {"allowed", connection.allowed},
                         {"rule", connection.rule},
                         {"bytes", bytes},
                         {"bytes_sent", connection.bytes_sent},
                         {"bytes_received", connection.bytes_received}};
  if (!connection.message.empty()) data["message"] = connection.message;
  if (!connection.call_id.empty()) {
    if (std::string loop_id = router_->loop_of_call(connection.call_id); !loop_id.empty()) {
      data["loop_id"] = std::move(loop_id);
    }
  }
  events_.publish("net.connect", std::move(data));
}

void Daemon::publish_output(const proto::OutputChunk& chunk) {
  // A streaming job's stderr is the live copy of what its command prints
  // (loopr-tool run_command, LOOPR_STREAM_OUTPUT); its stdout is the tool's
  // JSON result, which arrives whole in the call's reply.
  if (chunk.stream != proto::OutputStream::standard_error) return;
  if (!events_.has_subscribers("tool.output")) return;
  nlohmann::json data = {{"call_id", chunk.job_id}, {"data", chunk.data}};
  if (std::string loop_id = router_->loop_of_call(chunk.job_id); !loop_id.empty()) {
    data["loop_id"] = std::move(loop_id);
  }
  events_.publish("tool.output", std::move(data));
}

bool Daemon::reload_catalog() {
  try {
    router_->set_catalog(load_catalog(options_.paths, options_.settings));
    spdlog::info("catalog reloaded from {}", options_.paths.user_catalog_file());
    return true;
  } catch (const ConfigError& e) {
    spdlog::error("catalog not reloaded, the old one stays in force: {}", e.what());
  } catch (const std::exception& e) {
    spdlog::error("catalog not reloaded, the old one stays in force: {}", e.what());
  }
  return false;
}

void Daemon::watch_signals() {
  signals_.async_wait([this](const std::error_code& ec, int signal) {
    if (ec) return;
    request_shutdown(signal == SIGINT ? "SIGINT" : "SIGTERM");
  });
  watch_reload();
}

void Daemon::watch_reload() {
  reload_signal_.async_wait([this](const std::error_code& ec, int) {
    if (ec) return;
    reload_catalog();
    if (!shutting_down_) watch_reload();
  });
}

void Daemon::request_shutdown(const std::string& why) {
  if (shutting_down_) return;
  shutting_down_ = true;
  spdlog::info("shutting down ({})", why);
  notify_systemd("STOPPING=1");
  asio::co_spawn(io_, shut_down(), asio::detached);
}

// Order: no new clients or requests; pending approvals withdrawn; the lanes
// stop in parallel (queued calls are cancelled, running ones stopped, each
// answered with a shutdown error); then every session closes once its
// replies are written. A client that does not read gets a second.
asio::awaitable<void> Daemon::shut_down() {
  server_->stop_accepting();
  // Loops stop where they are, their status unchanged: the next start
  // resumes them from the store.
  co_await loops_->stop();
  approvals_.close("looprd is shutting down");
  if (cluster_) cluster_->stop();
  std::size_t lanes_running = lanes_.size();
  Wakeup lanes_stopped(io_.get_executor());
  for (auto& lane : lanes_) {
    asio::co_spawn(io_, lane->stop(std::chrono::seconds(2)), [&](std::exception_ptr) {
      if (--lanes_running == 0) lanes_stopped.notify();
    });
  }
  if (lanes_running > 0) co_await lanes_stopped.wait();
  server_->close_sessions();
  std::error_code ignored;
  signals_.cancel(ignored);
  reload_signal_.cancel(ignored);
  const auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(1);
  asio::steady_timer tick(io_);
  while (server_->client_count() > 0 && std::chrono::steady_clock::now() < deadline) {
    tick.expires_after(std::chrono::milliseconds(5));
    co_await tick.async_wait(asio::redirect_error(asio::use_awaitable, ignored));
  }
  io_.stop();
}

int Daemon::run() {
  for (auto& lane : lanes_)
    lane->start();
  if (cluster_) cluster_->start();
  if (auto resumed = loops_->start(); !resumed) {
    spdlog::error("cannot resume the loops in the store: {}", resumed.error().message);
  }
  server_->start_accepting();
  watch_signals();
  spdlog::info("looprd {} listening on {} (state {}, {} lanes)", kDaemonVersion,
               options_.paths.socket_path, options_.paths.state_dir, lanes_.size());
  notify_systemd("READY=1");
  if (options_.on_ready) options_.on_ready();
  io_.run();
  spdlog::info("looprd stopped");
  return 0;
}

}  // namespace loopr::daemon
