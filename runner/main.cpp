// loopr-runner --lane NAME (--fd N | --socket PATH) --tool PATH --root DIR...
//
// One process per lane. Builds the lane's sandbox once (contain.hpp), then
// serves the runner protocol on the link: an fd inherited from looprd, or,
// for tests and debugging, the first connection accepted on a Unix socket
// path. Every fd it opens is O_CLOEXEC. Exit status: 0 after a clean
// shutdown, 1 on a protocol error, 3 when the sandbox cannot be built (fail
// closed: no job runs), 2 on a usage error.
#include <fcntl.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/un.h>
#include <unistd.h>

#include <CLI/CLI.hpp>
#include <cctype>
#include <cstdlib>
#include <cstring>
#include <iostream>

#include "cluster/cluster_messages.hpp"
#include "cluster/nkey.hpp"
#include "cluster/worker.hpp"
#include "config/settings.hpp"
#include "runner/contain.hpp"
#include "runner/lane_runner.hpp"

namespace {

using loopr::UniqueFd;

constexpr int kExitSandboxFailed = 3;

loopr::Result<UniqueFd> listen_on(const std::string& path) {
  sockaddr_un address{};
  if (path.size() >= sizeof address.sun_path) {
    return loopr::make_error(loopr::errc::invalid_arguments, "socket path too long: " + path);
  }
  address.sun_family = AF_UNIX;
  path.copy(address.sun_path, path.size());
  UniqueFd fd(::socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0));
  if (!fd) return loopr::errno_error(errno, "socket", path);
  ::unlink(path.c_str());
  if (::bind(fd.get(), reinterpret_cast<sockaddr*>(&address), sizeof address) != 0) {
    return loopr::errno_error(errno, "bind", path);
  }
  if (::listen(fd.get(), 1) != 0) return loopr::errno_error(errno, "listen", path);
  return fd;
}

// Hidden whatever loopr.toml says; their origins name the variable they
// come from.
void add_default_hidden_paths(loopr::runner::LaneFilesystemSpec& filesystem) {
  filesystem.hidden_paths = {"/home", "/root", "/run", "/var/run", "/var/lib/loopr"};
  for (const char* name : {"HOME", "XDG_RUNTIME_DIR", "XDG_STATE_HOME", "XDG_CONFIG_HOME"}) {
    const char* value = std::getenv(name);
    if (value == nullptr || value[0] != '/') continue;
    filesystem.hidden_paths.emplace_back(value);
    filesystem.hidden_origins.emplace(value,
                                      std::string("$") + name + " (hidden from jobs by default)");
  }
  filesystem.hidden_paths.push_back("/tmp/loopr-" + std::to_string(::getuid()));
}

int write_new_nkey(const std::string& path) {
  auto seed = loopr::cluster::new_user_seed();
  if (!seed) {
    std::cerr << "loopr-runner: " << seed.error().message << "\n";
    return 1;
  }
  auto public_key = loopr::cluster::user_public_key(*seed);
  if (!public_key) {
    std::cerr << "loopr-runner: " << public_key.error().message << "\n";
    return 1;
  }
  loopr::UniqueFd fd(::open(path.c_str(), O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, 0600));
  const std::string text = *seed + "\n";
  if (!fd || ::write(fd.get(), text.data(), text.size()) != static_cast<ssize_t>(text.size())) {
    std::cerr << "loopr-runner: cannot write " << path << " (" << std::strerror(errno)
              << "); it must not exist yet\n";
    return 1;
  }
  std::cout << *public_key << "\n";
  return 0;
}

int run_as_worker(const std::string& url, loopr::cluster::WorkerOptions worker,
                  const std::string& tool_binary, unsigned slots, const std::string& sandbox) {
  if (worker.state.empty() || worker.state[0] != '/') {
    std::cerr << "loopr-runner: --join needs --state, an absolute folder of the worker's own\n";
    return 2;
  }
  if (tool_binary.empty() || tool_binary[0] != '/') {
    std::cerr << "loopr-runner: --join needs --tool, the absolute path of loopr-tool\n";
    return 2;
  }
  if (worker.id.empty()) {
    char host[256] = {};
    ::gethostname(host, sizeof host - 1);
    worker.id = host;
    for (char& c : worker.id)
      if (!std::isalnum(static_cast<unsigned char>(c)) && c != '-' && c != '_') c = '-';
  }
  for (const std::string& label : worker.labels) {
    if (!loopr::config::cluster_label_valid(label)) {
      std::cerr << "loopr-runner: --labels: \"" << label
                << "\" is not a label: 1-64 letters, digits, '_', '-' or '='\n";
      return 2;
    }
  }
  if (worker.labels.size() > loopr::cluster::kMaxWorkerLabels) {
    std::cerr << "loopr-runner: --labels: at most " << loopr::cluster::kMaxWorkerLabels
              << " labels\n";
    return 2;
  }
  if (::mkdir(worker.state.c_str(), 0700) != 0 && errno != EEXIST) {
    std::cerr << "loopr-runner: cannot make --state " << worker.state << ": "
              << std::strerror(errno) << "\n";
    return 2;
  }
  if (char* real = ::realpath(worker.state.c_str(), nullptr)) {
    worker.state = real;
    std::free(real);
  }
  char self[4096] = {};
  const ssize_t length = ::readlink("/proc/self/exe", self, sizeof self - 1);
  if (length <= 0) {
    std::cerr << "loopr-runner: cannot find its own binary (/proc/self/exe)\n";
    return 1;
  }
  // Jobs must not read the worker's credentials: a folder of their own is
  // hidden from jobs (under --state, the sandbox covers it anyway).
  std::string creds_folder;
  if (!worker.creds_file.empty()) {
    if (worker.creds_file[0] != '/') {
      std::cerr << "loopr-runner: --creds must be an absolute path\n";
      return 2;
    }
    creds_folder = worker.creds_file.substr(0, worker.creds_file.rfind('/'));
    for (const char* shared : {"", "/etc", "/usr", "/var", "/opt", "/tmp", "/srv"}) {
      if (creds_folder == shared) {
        std::cerr << "loopr-runner: --creds " << worker.creds_file
                  << ": put the credentials in a folder of their own (such as " << worker.state
                  << "/nats.seed): jobs could read " << (creds_folder.empty() ? "/" : creds_folder)
                  << "\n";
        return 2;
      }
    }
  }
  worker.nats_url = url;
  worker.slots = slots;
  worker.lanes = {"heavy"};
  worker.runner_argv = {std::string(self, static_cast<std::size_t>(length)),
                        "--lane",
                        "heavy",
                        "--tool",
                        tool_binary,
                        "--slots",
                        std::to_string(slots),
                        "--stream-output",
                        "--sandbox",
                        sandbox};
  if (!creds_folder.empty()) {
    worker.runner_argv.push_back("--hide-daemon-folder");
    worker.runner_argv.push_back("credentials=" + creds_folder);
  }
  return loopr::cluster::run_worker(worker);
}

}  // namespace

int main(int argc, char** argv) {
  CLI::App app{"loopr-runner: runs one lane's tool jobs inside its sandbox"};
  loopr::runner::LaneSandboxSpec spec;
  loopr::runner::LaneRunnerOptions options;
  int link_fd = -1;
  std::string socket_path;
  std::string tool_binary;
  std::string sandbox_mode = "on";
  std::vector<std::string> extra_hidden;
  int grace_ms = 500;
  app.add_option("--lane", spec.lane, "lane name (no-net, net, heavy)");
  // A worker on another machine (docs/cluster.md): the same runner, fed by
  // NATS JetStream instead of looprd's link.
  loopr::cluster::WorkerOptions worker;
  std::string join_url;
  std::string new_nkey;
  app.add_option("--join", join_url,
                 "be a worker: take jobs from looprd through NATS at this URL (nats://HOST:4222)");
  app.add_option("--state", worker.state, "worker: its own folder (repositories, worktrees)");
  app.add_option("--id", worker.id, "worker: its id in every result (default: the host name)");
  app.add_option("--labels", worker.labels, "worker: its labels (gpu, arch=arm64, ...)")
      ->delimiter(',');
  app.add_option("--creds", worker.creds_file,
                 "worker: its NATS credentials, a .creds file or an nkey seed file");
  app.add_option("--tls-ca", worker.tls_ca_file, "worker: CA certificates for tls:// NATS");
  app.add_option("--tls-cert", worker.tls_cert_file, "worker: client certificate");
  app.add_option("--tls-key", worker.tls_key_file, "worker: client certificate's key");
  app.add_option("--stream", worker.stream, "worker: the JetStream stream ([cluster] stream)");
  app.add_option("--new-nkey", new_nkey,
                 "write a new NATS user nkey seed to this file (0600) and print its public key");
  app.add_option("--fd", link_fd, "inherited socket to the daemon");
  app.add_option("--socket", socket_path, "listen on this Unix socket path (tests, debugging)");
  app.add_option("--egress-fd", spec.egress_link,
                 "inherited socket over which a lane with --network passes looprd its egress "
                 "listener");
  app.add_option("--egress-port", spec.egress_port,
                 "port of the egress proxy inside the lane (127.0.0.1)")
      ->check(CLI::Range(1, 65535));
  app.add_option("--tool", tool_binary, "path of the loopr-tool binary");
  std::string fetch_binary;
  app.add_option("--fetch-tool", fetch_binary,
                 "path of the loopr-fetch binary (web_fetch; default: next to --tool)");
  app.add_option("--root", spec.filesystem.writable_roots, "writable worktree root (repeatable)");
  app.add_option("--hide", extra_hidden,
                 "another path to hide from jobs, from sandbox.hidden_paths (repeatable)");
  std::vector<std::string> daemon_folders;
  app.add_option("--hide-daemon-folder", daemon_folders,
                 "KIND=PATH: a folder of looprd's own (runtime, state, config), hidden from jobs "
                 "(repeatable)")
      ->check([](const std::string& value) {
        const auto equals = value.find('=');
        return equals == std::string::npos || equals == 0 || equals + 1 == value.size()
                   ? std::string("expected KIND=PATH")
                   : std::string();
      });
  app.add_option("--read-path", spec.filesystem.read_paths,
                 "a folder or file jobs may read, even under a hidden path or a root (repeatable)");
  app.add_option("--slots", options.slots, "jobs run at once")->check(CLI::Range(1, 256));
  app.add_flag("--network", spec.network,
               "network through looprd's egress proxy (net and heavy lanes; needs --egress-fd)");
  app.add_flag("--stream-output", options.stream_output, "send output_chunk frames (heavy lane)");
  app.add_option("--tmp-size-mb", spec.filesystem.tmp_size_mb, "size cap of the job /tmp");
  app.add_option("--memory-mb", spec.job_memory_mb,
                 "memory limit per job, a cgroup limit where the machine delegates one (0 = none)");
  app.add_option("--address-space-mb", spec.limits.max_address_space_mb,
                 "address-space limit per job process (RLIMIT_AS; 0 = none, the default)");
  std::uint64_t max_file_mb = spec.limits.max_file_bytes >> 20;
  app.add_option("--max-file-mb", max_file_mb, "largest file a job may write (RLIMIT_FSIZE)")
      ->check(CLI::Range(1, 1 << 20));
  app.add_option("--max-processes", spec.limits.max_processes,
                 "processes per job (RLIMIT_NPROC), and per slot in the lane's pids cgroup");
  app.add_option("--term-grace-ms", grace_ms, "TERM to KILL grace")->check(CLI::Range(0, 60000));
  app.add_option("--warm-workers", options.warm_workers.max_workers,
                 "resident workers for the file tools, at most this many (0: a process per call)")
      ->check(CLI::Range(0, 256));
  int worker_idle_ms = static_cast<int>(options.warm_workers.idle_timeout.count());
  app.add_option("--warm-worker-idle-ms", worker_idle_ms,
                 "a warm worker without a call for this long is stopped")
      ->check(CLI::Range(100, 86'400'000));
  app.add_option("--sandbox", sandbox_mode, "on, or off (no isolation at all)")
      ->check(CLI::IsMember({"on", "off"}));
  std::vector<std::string> injectable(loopr::runner::kInjectableLaneSteps.begin(),
                                      loopr::runner::kInjectableLaneSteps.end());
  injectable.insert(injectable.end(), loopr::runner::kInjectableJobSteps.begin(),
                    loopr::runner::kInjectableJobSteps.end());
  app.add_option("--inject-failure", spec.inject_failure,
                 "tests only: make this sandbox step fail (it can only stop jobs from running)")
      ->check(CLI::IsMember(injectable))
      ->group("");  // not in --help: it is a test hook
  CLI11_PARSE(app, argc, argv);
  if (!new_nkey.empty()) return write_new_nkey(new_nkey);
  if (!join_url.empty()) {
    return run_as_worker(join_url, worker, tool_binary, static_cast<unsigned>(options.slots),
                         sandbox_mode);
  }
  if (spec.lane.empty() || tool_binary.empty()) {
    std::cerr << "loopr-runner: --lane and --tool are required (or --join to be a worker)\n";
    return 2;
  }
  if ((link_fd < 0) == socket_path.empty()) {
    std::cerr << "loopr-runner: give exactly one of --fd or --socket\n";
    return 2;
  }
  spec.limits.max_file_bytes = max_file_mb << 20;
  options.writable_roots = spec.filesystem.writable_roots;
  options.term_grace = std::chrono::milliseconds(grace_ms);
  options.warm_workers.idle_timeout = std::chrono::milliseconds(worker_idle_ms);
  add_default_hidden_paths(spec.filesystem);
  for (const std::string& folder : daemon_folders) {
    const auto equals = folder.find('=');
    const std::string path = folder.substr(equals + 1);
    spec.filesystem.hidden_paths.push_back(path);
    spec.filesystem.hidden_origins[path] = "looprd's " + folder.substr(0, equals) + " folder";
  }
  for (const std::string& path : extra_hidden) {
    spec.filesystem.hidden_paths.push_back(path);
    spec.filesystem.hidden_origins[path] = "sandbox.hidden_paths in loopr.toml";
  }
  spec.sandbox_off = sandbox_mode == "off";
  // Every job of the lane counts against one cgroup: each slot's processes,
  // plus a little for the runner itself.
  spec.lane_pids_max = spec.limits.max_processes * static_cast<std::uint64_t>(options.slots) + 16;
  spec.job_slots = options.slots;
  if (spec.sandbox_off) {
    std::cerr << "loopr-runner: WARNING: lane " << spec.lane
              << " runs with sandbox = \"off\": jobs are NOT isolated from this machine\n";
  }

  UniqueFd listener;
  UniqueFd link;
  if (!socket_path.empty()) {
    auto bound = listen_on(socket_path);
    if (!bound) {
      std::cerr << "loopr-runner: " << bound.error().message << "\n";
      return 2;
    }
    listener = std::move(*bound);
  } else {
    link.reset(link_fd);
  }

  if (fetch_binary.empty()) {
    const auto slash = tool_binary.rfind('/');
    fetch_binary = (slash == std::string::npos ? std::string() : tool_binary.substr(0, slash + 1)) +
                   "loopr-fetch";
  }
  // A root that cannot be one is a setting to change, whatever the sandbox.
  auto sandbox = [&]() -> loopr::Result<loopr::runner::LaneSandbox> {
    if (auto roots = loopr::runner::check_writable_roots(spec.filesystem.writable_roots); !roots) {
      return std::move(roots).error();
    }
    return loopr::runner::LaneSandbox::contain(spec, tool_binary, fetch_binary);
  }();
  if (!sandbox) {
    // One line: looprd shows the runner's last line to the user (the lane's
    // last_error, the calls it fails), and the message says what to change.
    std::cerr << "loopr-runner: lane " << spec.lane << ": " << sandbox.error().message << "; "
              << sandbox.error().hint << "\n";
    return kExitSandboxFailed;
  }
  if (listener) {
    link.reset(::accept4(listener.get(), nullptr, nullptr, SOCK_CLOEXEC));
    if (!link) {
      std::cerr << "loopr-runner: accept failed\n";
      return 1;
    }
    listener.reset();
  }
  if (!spec.sandbox_off) {
    std::cerr << "loopr-runner: lane " << spec.lane << ": " << sandbox->cgroup().description
              << "\n";
    std::cerr << "loopr-runner: lane " << spec.lane << ": "
              << sandbox->memory_cgroups()->description() << "\n";
  }
  loopr::runner::LaneRunner runner(*sandbox, std::move(link), options);
  return runner.serve();
}
