// looprctl daemon start | stop | status.
//
// start and stop wait for an external process (looprd coming up or going
// away) by polling the socket at a short interval within a bounded wait.
#include <chrono>
#include <ostream>
#include <thread>

#include "client/commands.hpp"
#include "client/daemon_process.hpp"
#include "client/metrics_view.hpp"
#include "client/text_format.hpp"
#include "common/private_folder.hpp"

namespace loopr::client {
namespace {

using nlohmann::json;
using Clock = std::chrono::steady_clock;

constexpr Milliseconds kPollInterval{50};
constexpr std::size_t kLogTailLines = 20;
constexpr std::size_t kLogTailBytes = 16 * 1024;
constexpr const char* kLogName = "looprd.log";

// Short limits for one probe of the socket while looprd starts or stops.
ClientTimeouts probe_timeouts() {
  return ClientTimeouts{Milliseconds(500), Milliseconds(1000)};
}

bool is_unreachable(const Error& error) {
  return error.code == failure::daemon_unreachable;
}

// Connects, initializes and pings once.
Result<ControlClient> probe(const std::string& socket_path, const ClientTimeouts& timeouts) {
  auto client = ControlClient::open(socket_path, timeouts);
  if (!client) return client;
  auto pong = client->call("ping");
  if (!pong) return std::move(pong).error();
  return client;
}

// `text` indented, every line made printable: the log is looprd's own
// output, but may hold whatever a misbehaving process wrote.
std::string indented_printable(const std::string& text) {
  std::string out;
  std::size_t start = 0;
  while (start < text.size()) {
    std::size_t end = text.find('\n', start);
    if (end == std::string::npos) end = text.size();
    out += "  " + printable(std::string_view(text).substr(start, end - start)) + '\n';
    start = end + 1;
  }
  return out;
}

std::string log_path(const CommandContext& context) {
  return context.paths.state_dir + "/" + kLogName;
}

void print_log_tail(const CommandContext& context, const std::string& log, std::uint64_t from) {
  const std::string tail = file_tail(log, from, kLogTailLines, kLogTailBytes);
  if (tail.empty()) {
    context.err << "(looprd wrote nothing to " << log << ")\n";
    return;
  }
  context.err << "last lines of " << log << ":\n" << indented_printable(tail);
}

std::vector<std::string> looprd_argv(const CommandContext& context, const std::string& binary) {
  std::vector<std::string> argv = {binary, "--foreground", "--socket", context.paths.socket_path};
  if (!context.path_flags.config_dir.empty()) {
    argv.insert(argv.end(), {"--config-dir", context.paths.config_dir});
  }
  if (!context.path_flags.state_dir.empty()) {
    argv.insert(argv.end(), {"--state-dir", context.paths.state_dir});
  }
  return argv;
}

int report_running(const CommandContext& context, const ControlClient& client, bool started,
                   std::optional<pid_t> pid) {
  const auto& session = *client.session();
  if (context.json) {
    json out = {{"running", true},
                {"started", started},
                {"socket", context.paths.socket_path},
                {"daemon_version", session.daemon_version},
                {"protocol", session.protocol}};
    if (pid) out["pid"] = *pid;
    if (started) out["log"] = log_path(context);
    context.print_json(out);
  } else if (started) {
    context.out << "looprd " << printable(session.daemon_version) << " started (pid " << *pid
                << "), listening on " << context.paths.socket_path << "; log: " << log_path(context)
                << '\n';
  } else {
    context.out << "looprd " << printable(session.daemon_version) << " is already running on "
                << context.paths.socket_path << '\n';
  }
  return to_int(ExitStatus::ok);
}

}  // namespace

int run_daemon_start(const CommandContext& context, const DaemonStartOptions& options) {
  const std::string& socket = context.paths.socket_path;
  if (auto running = probe(socket, probe_timeouts())) {
    return report_running(context, *running, false, std::nullopt);
  } else if (!is_unreachable(running.error())) {
    // Something answers but not as a compatible looprd, or not in time.
    return context.fail(running.error());
  }

  auto binary = locate_looprd(options.looprd);
  if (!binary) return context.fail(binary.error());
  if (auto made = make_private_folders(context.paths.state_dir); !made) {
    return context.fail(made.error());
  }
  const std::string log = log_path(context);
  const std::uint64_t log_start = file_size(log);
  auto pid = spawn_detached(looprd_argv(context, *binary), log);
  if (!pid) return context.fail(pid.error());

  const auto deadline = Clock::now() + options.wait;
  Error last = make_error(failure::daemon_unreachable, "looprd has not answered yet");
  while (true) {
    auto answered = probe(socket, probe_timeouts());
    if (answered) return report_running(context, *answered, true, *pid);
    last = std::move(answered).error();
    if (exit_status_for(last) == ExitStatus::protocol) {
      print_log_tail(context, log, log_start);
      return context.fail(last);
    }
    if (const auto exited = exit_description(*pid)) {
      context.err << "looprctl: looprd " << *exited << " before it answered on " << socket << '\n';
      print_log_tail(context, log, log_start);
      return to_int(ExitStatus::call_failed);
    }
    if (Clock::now() >= deadline) break;
    std::this_thread::sleep_for(kPollInterval);
  }
  context.err << "looprctl: looprd (pid " << *pid << ") is running but did not answer on " << socket
              << " within " << format_duration_ms(options.wait.count())
              << " (last attempt: " << last.message << ")\n";
  print_log_tail(context, log, log_start);
  context.err << "hint: see " << log << "; stop it with: kill " << *pid << '\n';
  return to_int(ExitStatus::call_failed);
}

int run_daemon_stop(const CommandContext& context, Milliseconds wait) {
  const std::string& socket = context.paths.socket_path;
  {
    auto client = context.open();
    if (!client) {
      if (!is_unreachable(client.error())) return context.fail(client.error());
      if (context.json) {
        context.print_json({{"running", false}, {"stopped", false}, {"socket", socket}});
      } else {
        context.out << "looprd is not running (nothing answers on " << socket << ")\n";
      }
      return to_int(ExitStatus::ok);
    }
    auto reply = client->call("daemon.shutdown");
    // looprd may close the connection before its reply is read: it is stopping.
    if (!reply && !is_unreachable(reply.error())) return context.fail(reply.error());
  }  // the connection is closed before polling

  const auto deadline = Clock::now() + wait;
  while (true) {
    auto connected = ControlClient::connect(socket, probe_timeouts());
    if (!connected && is_unreachable(connected.error())) break;
    if (Clock::now() >= deadline) {
      context.err << "looprctl: looprd still accepts connections on " << socket << " "
                  << format_duration_ms(wait.count()) << " after it was asked to stop\n"
                  << "hint: see " << log_path(context) << "\n";
      return to_int(ExitStatus::call_failed);
    }
    std::this_thread::sleep_for(kPollInterval);
  }
  if (context.json) {
    context.print_json({{"running", false}, {"stopped", true}, {"socket", socket}});
  } else {
    context.out << "looprd stopped\n";
  }
  return to_int(ExitStatus::ok);
}

int run_daemon_status(const CommandContext& context) {
  const std::string& socket = context.paths.socket_path;
  auto client = context.open();
  if (!client) {
    if (context.json && is_unreachable(client.error())) {
      context.print_json({{"running", false}, {"socket", socket}});
    }
    return context.fail(client.error());
  }
  auto pong = client->call("ping");
  if (!pong) return context.fail(pong.error());
  auto metrics = client->call("metrics.get");
  // An error reply (an older looprd without metrics) still leaves a status.
  if (!metrics && metrics.error().code != failure::rpc_error) {
    return context.fail(metrics.error());
  }
  const auto& session = *client->session();
  const json uptime = pong->is_object() ? pong->value("uptime_ms", json()) : json();

  if (context.json) {
    json out = {{"running", true},
                {"socket", socket},
                {"daemon_version", session.daemon_version},
                {"protocol", session.protocol},
                {"uptime_ms", uptime}};
    if (metrics) {
      out["metrics"] = *metrics;
    } else {
      out["metrics_error"] = metrics.error().message;
    }
    context.print_json(out);
    return to_int(ExitStatus::ok);
  }
  context.out << "looprd " << printable(session.daemon_version) << " is running on " << socket
              << " (protocol " << session.protocol << "), up " << format_duration_ms(uptime)
              << '\n';
  if (!metrics) {
    context.out << "lanes: unknown (metrics.get failed: " << printable(metrics.error().message)
                << ")\n";
    return to_int(ExitStatus::ok);
  }
  if (auto printed = print_lanes(*metrics, context.out); !printed) {
    return context.fail(printed.error());
  }
  if (auto printed = print_cluster(*metrics, context.out); !printed) {
    return context.fail(printed.error());
  }
  return to_int(ExitStatus::ok);
}

}  // namespace loopr::client
