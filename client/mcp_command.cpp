#include "client/mcp_command.hpp"

#include <fcntl.h>
#include <pthread.h>
#include <signal.h>
#include <sys/random.h>
#include <sys/stat.h>
#include <unistd.h>

#include <atomic>
#include <cerrno>
#include <chrono>
#include <filesystem>
#include <random>
#include <sstream>
#include <thread>
#include <utility>
#include <vector>

#include "client/mcp_daemon_link.hpp"
#include "common/private_folder.hpp"
#include "common/unique_fd.hpp"
#include "mcp/http_server.hpp"
#include "mcp/session.hpp"
#include "mcp/stdio_server.hpp"
#include "mcp/tool_listing.hpp"

namespace loopr::client {

namespace {

std::vector<std::string> split_tools(const std::string& list) {
  std::vector<std::string> names;
  std::stringstream stream(list);
  std::string name;
  while (std::getline(stream, name, ',')) {
    const auto first = name.find_first_not_of(" \t");
    if (first == std::string::npos) continue;
    const auto last = name.find_last_not_of(" \t");
    names.push_back(name.substr(first, last - first + 1));
  }
  return names;
}

// A name for this server's read-before-edit scope in looprd: unique per
// process and start.
std::string session_scope() {
  std::random_device random;
  std::ostringstream out;
  out << "mcp-" << ::getpid() << '-' << std::hex << random() << random();
  return out.str();
}

Result<std::string> existing_folder(const std::string& path) {
  std::error_code error;
  const auto absolute = std::filesystem::absolute(path, error);
  if (error || !std::filesystem::is_directory(absolute, error)) {
    return make_error(errc::not_found, "--worktree " + path + " is not a folder",
                      "pass the folder of the repository the MCP host works on");
  }
  return absolute.lexically_normal().string();
}

// HOST:PORT of --http; [::1]:PORT for IPv6.
Result<std::pair<std::string, int>> host_and_port(const std::string& text) {
  const auto colon = text.rfind(':');
  const auto bad = [&] {
    return make_error(errc::invalid_arguments, "--http " + text + " is not HOST:PORT",
                      "e.g. --http 127.0.0.1:8765 (port 0: any free one)");
  };
  if (colon == std::string::npos || colon == 0 || colon + 1 == text.size()) return bad();
  const std::string port_text = text.substr(colon + 1);
  if (port_text.size() > 5 || port_text.find_first_not_of("0123456789") != std::string::npos) {
    return bad();
  }
  const int port = std::stoi(port_text);
  if (port > 65535) return bad();
  return std::make_pair(text.substr(0, colon), port);
}

// A fresh token in a new 0600 file at `path` (replacing one there).
Result<std::string> write_token(const std::string& path) {
  std::string token;
  {
    unsigned char raw[32];
    std::size_t got = 0;
    while (got < sizeof raw) {
      const ssize_t n = ::getrandom(raw + got, sizeof raw - got, 0);
      if (n > 0) got += static_cast<std::size_t>(n);
    }
    static constexpr char kDigits[] = "0123456789abcdef";
    for (unsigned char c : raw) {
      token += kDigits[c >> 4];
      token += kDigits[c & 15];
    }
  }
  // Unlinked first: an existing file (or a link planted there) is replaced,
  // never written through.
  ::unlink(path.c_str());
  UniqueFd fd(::open(path.c_str(), O_WRONLY | O_CREAT | O_EXCL | O_NOFOLLOW | O_CLOEXEC, 0600));
  if (!fd.valid()) return errno_error(errno, "create the token file", path);
  const std::string line = token + "\n";
  if (::fchmod(fd.get(), 0600) != 0 ||
      ::write(fd.get(), line.data(), line.size()) != static_cast<ssize_t>(line.size())) {
    return errno_error(errno, "write the token file", path);
  }
  return token;
}

int serve_http(const CommandContext& context, const McpOptions& options, McpDaemonLink& link,
               const mcp::SessionOptions& session) {
  auto address = host_and_port(options.http);
  if (!address) return context.fail(address.error());
  std::string token;
  std::string token_file;
  if (options.insecure_no_token) {
    context.err << "looprctl mcp: WARNING: --insecure-no-token: any process on this machine that "
                   "reaches the port can run loopr's tools as you. Use it only for tests.\n";
  } else {
    token_file = options.token_file.empty() ? context.paths.state_dir + "/mcp-http.token"
                                            : options.token_file;
    if (options.token_file.empty()) {
      if (auto made = make_private_folders(context.paths.state_dir); !made) {
        return context.fail(made.error());
      }
    }
    auto written = write_token(token_file);
    if (!written) return context.fail(written.error());
    token = *written;
  }
  mcp::HttpOptions http;
  http.host = address->first;
  http.port = address->second;
  http.token = token;
  http.new_session = [&link, session] {
    mcp::SessionOptions fresh = session;
    fresh.scope = session_scope();
    return std::make_unique<mcp::McpSession>(link, std::move(fresh));
  };
  // SIGINT and SIGTERM stop the server from a thread of their own; blocked
  // here, before any thread starts, so that every thread inherits the mask.
  sigset_t stop_signals;
  sigemptyset(&stop_signals);
  sigaddset(&stop_signals, SIGINT);
  sigaddset(&stop_signals, SIGTERM);
  pthread_sigmask(SIG_BLOCK, &stop_signals, nullptr);
  auto server = mcp::HttpServer::bind(std::move(http));
  if (!server) return context.fail(server.error());
  context.err << "loopr mcp: listening on " << (*server)->url() << '\n';
  if (!token_file.empty()) context.err << "loopr mcp: token in " << token_file << '\n';
  context.err.flush();
  mcp::HttpServer* raw = server->get();
  std::atomic<bool> served_out{false};
  std::thread watcher([raw, stop_signals, &served_out] {
    int signal = 0;
    sigwait(&stop_signals, &signal);
    // A stop() before serve() listens is lost: repeat it until serve() returns.
    while (!served_out) {
      raw->stop();
      std::this_thread::sleep_for(std::chrono::milliseconds(20));
    }
  });
  const bool served = (*server)->serve();
  served_out = true;
  // Wake the watcher if the server ended by itself (a signal already taken
  // stays pending, blocked, and dies with the process).
  ::kill(::getpid(), SIGTERM);
  watcher.join();
  return served ? 0 : to_int(ExitStatus::call_failed);
}

}  // namespace

int run_mcp(const CommandContext& context, const McpOptions& options) {
  if (options.http.empty() && (!options.token_file.empty() || options.insecure_no_token)) {
    context.err << "looprctl mcp: --token-file and --insecure-no-token go with --http\n";
    return to_int(ExitStatus::usage);
  }
  mcp::SessionOptions session;
  if (!options.worktree.empty()) {
    auto folder = existing_folder(options.worktree);
    if (!folder) return context.fail(folder.error());
    session.worktree = *folder;
  }
  session.tools = split_tools(options.tools);
  session.elicit_approvals = options.elicit_approvals;
  session.server_version = options.server_version;
  session.scope = session_scope();

  // Nothing but MCP may reach stdout: daemon start reports on stderr.
  CommandContext quiet{context.paths, context.path_flags, false,      context.timeouts,
                       context.in,    context.err,        context.err};
  if (!ControlClient::open(context.paths.socket_path, context.timeouts)) {
    const int started = run_daemon_start(quiet, DaemonStartOptions{});
    if (started != 0) return started;
  }
  McpDaemonLink link(context.paths.socket_path, context.timeouts);
  // A --tools name looprd does not offer is a mistake to report now, not at
  // the host's first tools/list.
  auto listed = link.request("tool.list", nlohmann::json::object());
  if (!listed) return context.fail(listed.error());
  if (auto published = mcp::publish_tools(listed->value("tools", nlohmann::json()), session.tools);
      !published) {
    return context.fail(published.error());
  }

  ::signal(SIGPIPE, SIG_IGN);  // a host that goes away is an EOF, not a signal
  if (!options.http.empty()) return serve_http(context, options, link, session);
  mcp::McpSession mcp_session(link, std::move(session));
  return mcp::serve_stdio(mcp_session, STDIN_FILENO, STDOUT_FILENO);
}

}  // namespace loopr::client
