// looprd under load (issues 4 and 12, DESIGN.md §9), timed side by side in
// one run:
//   one     one persistent client: sequential tool.call read_file of a 4 KiB
//           file (no-net lane): p50/p90/p99/max latency and calls/s
//   eight   8 clients, one thread each, the same call: aggregate calls/s
//   grep    the persistent client: grep of a literal over a 200-file tree
//   glob    the persistent client: glob **/*.c over the same tree
//   edit    the persistent client: read_file then edit_file of one file,
//           flipping one string back and forth (the edit is timed; the read
//           is what read-before-edit asks of the connection's session)
//   cold    the persistent client: read_file of a 4 KiB file in a worktree
//           no call has used yet (a warm worker must start for it)
//   noworker  the same first calls in fresh worktrees through a second
//           looprd whose no-net lane has warm_workers = 0: a sandboxed
//           process per call, as before issue 12 (what a cold call must not
//           be slower than)
//   fork    plain fork+exec of `loopr-tool read_file` per call (no sandbox)
//   bwrap   `bwrap --unshare-all ... cat FILE` per call
//   mcp     the MCP reference filesystem server reading the same file, driven
//           by the official SDK client on one stdio session
//           (bench/mcp_reference_read.mjs; skipped without its npm packages)
//   looprmcp  the same read through `looprctl mcp` (loopr's MCP server, a
//           client of this looprd), same client script, same file, same run
// and looprd's RSS idle, after the load, and while a job prints 10 GB.
// --runs N repeats all of it (a new looprd and temporary folder each time),
// prints each run and then the median of every figure.
// Run by hand (bench/README.md), never as a timed test:
//   build/bin/daemon_load_bench [--calls N] [--runs N] [--slots N] [--bin-dir DIR]
//       [--output-gb G] [--mcp-node-modules DIR] [--mcp-driver FILE]
#include <fcntl.h>
#include <signal.h>
#include <spawn.h>
#include <stdlib.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <array>
#include <atomic>
#include <cerrno>
#include <chrono>
#include <cmath>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <functional>
#include <iostream>
#include <optional>
#include <sstream>
#include <string>
#include <thread>
#include <vector>

#include "bench/sample_stats.hpp"
#include "client/control_client.hpp"

extern char** environ;

namespace {

using Clock = std::chrono::steady_clock;
using loopr::bench::SampleStats;
using loopr::client::ControlClient;
using nlohmann::json;

constexpr int kWarmupCalls = 200;
constexpr int kTreeFolders = 10;
constexpr int kTreeFilesPerFolder = 20;  // 200 files, half of them .c
constexpr const char* kGrepLiteral = "loopr_bench_needle";

struct Options {
  int calls = 2000;
  int runs = 1;
  int slots = 2;          // the no-net lane's
  double output_gb = 10;  // 0: no flood, no RSS-during figure
  std::string bin_dir;
  std::string mcp_node_modules;  // empty: the MCP row is skipped
  std::string mcp_driver;
  std::string mcp_install;  // the command that installs the packages
};

enum RowId : std::size_t {
  kOne,
  kEight,
  kGrep,
  kGlob,
  kEdit,
  kCold,
  kNoWorker,
  kFork,
  kBwrap,
  kMcp,
  kLooprMcp,
  kRowCount
};

constexpr std::array<const char*, kRowCount> kRowNames = {
    "looprd read_file, 1 conn",     "looprd read_file, 8 conns", "looprd grep, 1 conn",
    "looprd glob, 1 conn",          "looprd edit_file, 1 conn",  "looprd read, cold worktree",
    "looprd read, cold, no worker", "fork+exec loopr-tool",      "bwrap --unshare-all cat",
    "MCP reference read",           "looprctl mcp read_file"};

struct Row {
  bool present = false;
  SampleStats stats;
  double rate = -1;  // calls/s; < 0: not measured for this row
  int errors = -1;   // < 0: not counted for this row
};

struct LoadAverage {
  double one = 0, five = 0, fifteen = 0;
};

struct RunFigures {
  std::array<Row, kRowCount> rows;
  double rss_idle_mb = 0, rss_after_mb = 0, rss_peak_mb = 0, flood_s = 0;
  bool flooded = false;
  std::string flood_status, mcp_note, loopr_mcp_note;
  bool flood_truncated = false;
  LoadAverage load_start, load_end;
};

double ms_since(Clock::time_point start) {
  return std::chrono::duration<double, std::milli>(Clock::now() - start).count();
}

std::uint64_t rss_kb(pid_t pid) {
  std::ifstream status("/proc/" + std::to_string(pid) + "/status");
  std::string line;
  while (std::getline(status, line)) {
    if (line.rfind("VmRSS:", 0) == 0) return std::stoull(line.substr(6));
  }
  return 0;
}

double mb_of_kb(std::uint64_t kb) {
  return static_cast<double>(kb) / 1024.0;
}

LoadAverage load_average() {
  LoadAverage load;
  std::ifstream("/proc/loadavg") >> load.one >> load.five >> load.fifteen;
  return load;
}

std::vector<char*> argv_of(const std::vector<std::string>& args) {
  std::vector<char*> argv;
  for (const auto& a : args)
    argv.push_back(const_cast<char*>(a.c_str()));
  argv.push_back(nullptr);
  return argv;
}

// Runs argv to completion with stdin from `input_file` (or /dev/null) and
// stdout to /dev/null; returns the wall time in ms.
double run_once(const std::vector<std::string>& args, const std::string& input_file) {
  std::vector<char*> argv = argv_of(args);
  posix_spawn_file_actions_t actions;
  posix_spawn_file_actions_init(&actions);
  posix_spawn_file_actions_addopen(
      &actions, 0, input_file.empty() ? "/dev/null" : input_file.c_str(), O_RDONLY, 0);
  posix_spawn_file_actions_addopen(&actions, 1, "/dev/null", O_WRONLY, 0);
  posix_spawn_file_actions_addopen(&actions, 2, "/dev/null", O_WRONLY, 0);
  const auto start = Clock::now();
  pid_t pid = -1;
  if (::posix_spawnp(&pid, argv[0], &actions, nullptr, argv.data(), environ) != 0) {
    posix_spawn_file_actions_destroy(&actions);
    return -1;
  }
  int status = 0;
  ::waitpid(pid, &status, 0);
  posix_spawn_file_actions_destroy(&actions);
  return ms_since(start);
}

// Runs argv (stdin /dev/null, stderr inherited) and returns its stdout, or
// nullopt if it could not start or did not exit 0 (its stdout is still
// returned through `out` for the error message).
std::optional<std::string> run_capture(const std::vector<std::string>& args, std::string& out) {
  int fds[2];
  if (::pipe2(fds, O_CLOEXEC) != 0) return std::nullopt;
  std::vector<char*> argv = argv_of(args);
  posix_spawn_file_actions_t actions;
  posix_spawn_file_actions_init(&actions);
  posix_spawn_file_actions_addopen(&actions, 0, "/dev/null", O_RDONLY, 0);
  posix_spawn_file_actions_adddup2(&actions, fds[1], 1);
  pid_t pid = -1;
  const int spawned = ::posix_spawnp(&pid, argv[0], &actions, nullptr, argv.data(), environ);
  posix_spawn_file_actions_destroy(&actions);
  ::close(fds[1]);
  if (spawned != 0) {
    ::close(fds[0]);
    return std::nullopt;
  }
  char buf[65536];
  for (;;) {
    const ssize_t n = ::read(fds[0], buf, sizeof buf);
    if (n > 0) {
      out.append(buf, static_cast<std::size_t>(n));
    } else if (n == 0 || errno != EINTR) {
      break;
    }
  }
  ::close(fds[0]);
  int status = 0;
  ::waitpid(pid, &status, 0);
  if (!WIFEXITED(status) || WEXITSTATUS(status) != 0) return std::nullopt;
  return out;
}

json tool_call(const std::string& worktree, const std::string& tool, json args) {
  return {{"tool", tool}, {"args", std::move(args)}, {"worktree", worktree}};
}

json read_call(const std::string& worktree) {
  return tool_call(worktree, "read_file", {{"path", "file.txt"}});
}

bool call_ok(ControlClient& client, const json& params) {
  auto r = client.call("tool.call", params);
  return r && (*r)["ok"] == true;
}

// `calls` sequential calls of make(i) on one connection (after `warmup`
// untimed ones): each call's latency, calls/s over the timed loop, errors.
Row time_calls(ControlClient& client, int calls, int warmup, const std::function<json(int)>& make) {
  for (int i = 0; i < warmup; ++i)
    (void)client.call("tool.call", make(i));
  std::vector<double> samples;
  samples.reserve(static_cast<std::size_t>(calls));
  Row row;
  row.present = true;
  row.errors = 0;
  const auto start = Clock::now();
  for (int i = 0; i < calls; ++i) {
    const json params = make(warmup + i);
    const auto t = Clock::now();
    auto r = client.call("tool.call", params);
    samples.push_back(ms_since(t));
    if (!r || (*r)["ok"] != true) ++row.errors;
  }
  row.rate = calls / (ms_since(start) / 1000);
  row.stats = loopr::bench::stats_of(std::move(samples));
  return row;
}

// 200 small C-like files in worktree/tree/dNN/, every tenth holding
// kGrepLiteral once.
void write_tree(const std::string& worktree) {
  for (int d = 0; d < kTreeFolders; ++d) {
    const std::string folder = worktree + "/tree/d" + std::to_string(d);
    std::filesystem::create_directories(folder);
    for (int f = 0; f < kTreeFilesPerFolder; ++f) {
      const int n = d * kTreeFilesPerFolder + f;
      std::ofstream out(folder + "/f" + std::to_string(f) + (f % 2 == 0 ? ".c" : ".h"));
      for (int line = 0; line < 60; ++line) {
        out << "static int value_" << n << "_" << line << "(int x) { return x * " << line << " + "
            << n << "; }\n";
        if (n % 10 == 0 && line == 30) out << "/* " << kGrepLiteral << " */\n";
      }
    }
  }
}

// Read before every edit, as a model's session does; only the edit is timed.
// The file flips between "bench_value = 0;" and "bench_value = 1;", so every
// edit has exactly one match.
Row time_edits(ControlClient& client, const std::string& worktree, int calls) {
  const json read = tool_call(worktree, "read_file", {{"path", "edit.c"}});
  int state = 0;
  auto edit = [&] {
    const std::string from = "bench_value = " + std::to_string(state) + ";";
    const std::string to = "bench_value = " + std::to_string(1 - state) + ";";
    return tool_call(worktree, "edit_file",
                     {{"path", "edit.c"}, {"old_string", from}, {"new_string", to}});
  };
  Row row;
  row.present = true;
  row.errors = 0;
  std::vector<double> samples;
  for (int i = 0; i < kWarmupCalls / 10 + calls; ++i) {
    const bool timed = i >= kWarmupCalls / 10;
    if (!call_ok(client, read) && timed) ++row.errors;
    const json params = edit();
    const auto t = Clock::now();
    auto r = client.call("tool.call", params);
    if (timed) samples.push_back(ms_since(t));
    if (r && (*r)["ok"] == true) {
      state = 1 - state;
    } else if (timed) {
      ++row.errors;
      if (row.errors == 1)
        std::cerr << "edit_file failed: " << (r ? r->dump() : "no reply") << "\n";
    }
  }
  row.stats = loopr::bench::stats_of(std::move(samples));
  return row;
}

// A row timed by bench/mcp_reference_read.mjs: the MCP reference server's,
// or with `extra` = {--looprctl PATH, --socket S} looprctl mcp's; or why it
// has none (in `note`).
Row time_mcp_driver(const Options& opt, const std::string& worktree,
                    const std::vector<std::string>& extra, std::string& note) {
  Row row;
  std::error_code ec;
  if (opt.mcp_node_modules.empty() ||
      !std::filesystem::is_directory(opt.mcp_node_modules + "/@modelcontextprotocol", ec)) {
    note = "skipped: no @modelcontextprotocol packages in " +
           (opt.mcp_node_modules.empty() ? std::string("(none given)") : opt.mcp_node_modules) +
           "; install them with: " + opt.mcp_install;
    return row;
  }
  if (!std::filesystem::is_regular_file(opt.mcp_driver, ec)) {
    note = "skipped: no driver at " + opt.mcp_driver + " (--mcp-driver FILE)";
    return row;
  }
  std::string out;
  std::vector<std::string> args = {"node",           opt.mcp_driver,
                                   "--node-modules", opt.mcp_node_modules,
                                   "--root",         worktree,
                                   "--file",         worktree + "/file.txt",
                                   "--calls",        std::to_string(opt.calls),
                                   "--warmup",       std::to_string(kWarmupCalls)};
  args.insert(args.end(), extra.begin(), extra.end());
  const auto got = run_capture(args, out);
  const json reply = json::parse(out, nullptr, false);
  if (!got || reply.is_discarded() || !reply.contains("samples_ms")) {
    note = "failed: " + (reply.is_object() && reply.contains("error")
                             ? reply["error"].get<std::string>()
                             : "node " + opt.mcp_driver + " printed: " + out.substr(0, 300));
    return row;
  }
  row.present = true;
  row.errors = 0;
  row.stats = loopr::bench::stats_of(reply["samples_ms"].get<std::vector<double>>());
  note = reply.value("server", std::string("?")) + ", tool " +
         reply.value("tool", std::string("?")) +
         ", one stdio session, timed in node around client.callTool";
  return row;
}

// One whole measurement: a fresh temporary folder and looprd, every row.
// A looprd in the foreground with its own config, state and socket under
// base/NAME (NAME from `extra_toml`'s hash, so two can run side by side);
// worktree root base/work, no-net lane with --slots slots and the keys of
// `extra_toml` in its table.
struct Looprd {
  pid_t pid = -1;
  std::string socket;
  std::optional<ControlClient> client;
  void stop() {
    client.reset();
    ::kill(pid, SIGTERM);
    ::waitpid(pid, nullptr, 0);
  }
};

std::optional<Looprd> start_looprd(const Options& opt, const std::string& base,
                                   const std::string& extra_toml) {
  const std::string home = base + "/d" + std::to_string(std::hash<std::string>{}(extra_toml) % 997);
  std::filesystem::create_directories(home + "/config");
  std::ofstream(home + "/config/loopr.toml")
      << "[sandbox]\nworktree_roots = [\"" << base << "/work\"]\n"
      << "[lanes.no-net]\nslots = " << opt.slots << "\n"
      << extra_toml;
  Looprd daemon;
  daemon.socket = home + "/run/looprd.sock";
  const std::vector<std::string> args = {
      opt.bin_dir + "/looprd", "--foreground", "--socket",      daemon.socket, "--config-dir",
      home + "/config",        "--state-dir",  home + "/state", "--log-level", "warn"};
  std::vector<char*> argv = argv_of(args);
  if (::posix_spawn(&daemon.pid, argv[0], nullptr, nullptr, argv.data(), environ) != 0) {
    std::cerr << "cannot start " << argv[0] << "\n";
    return std::nullopt;
  }
  for (int i = 0; i < 400 && !daemon.client; ++i) {
    if (auto c = ControlClient::open(daemon.socket))
      daemon.client.emplace(std::move(*c));
    else
      std::this_thread::sleep_for(std::chrono::milliseconds(25));  // waiting for start
  }
  if (!daemon.client) {
    std::cerr << "looprd did not answer\n";
    daemon.stop();
    return std::nullopt;
  }
  return daemon;
}

std::optional<RunFigures> measure(const Options& opt) {
  RunFigures fig;
  fig.load_start = load_average();
  char pattern[] = "/tmp/loopr-bench-XXXXXX";
  const std::string base = ::mkdtemp(pattern);
  const std::string worktree = base + "/work/repo";
  std::filesystem::create_directories(worktree);
  std::filesystem::create_directories(base + "/config");
  std::ofstream(worktree + "/file.txt") << std::string(4095, 'x') << '\n';
  {
    std::ofstream edit(worktree + "/edit.c");
    edit << "int bench_value = 0;\n";
    for (int line = 0; edit.tellp() < 4096; ++line)
      edit << "int other_" << line << " = " << line << ";\n";
  }
  write_tree(worktree);
  std::ofstream(base + "/args.json") << R"({"path": "file.txt"})";

  auto daemon = start_looprd(opt, base, "");
  if (!daemon) {
    std::filesystem::remove_all(base);
    return std::nullopt;
  }
  auto stop_daemon = [&] {
    daemon->stop();
    std::filesystem::remove_all(base);
  };
  std::optional<ControlClient>& client = daemon->client;
  const std::string& socket = daemon->socket;
  for (int i = 0; i < kWarmupCalls; ++i)
    (void)client->call("tool.call", read_call(worktree));  // warm-up
  fig.rss_idle_mb = mb_of_kb(rss_kb(daemon->pid));

  // (a) one persistent connection
  fig.rows[kOne] = time_calls(*client, opt.calls, 0, [&](int) { return read_call(worktree); });

  // (b) eight connections
  std::vector<std::vector<double>> per_thread(8);
  std::atomic<int> errors8{0};
  const auto eight_start = Clock::now();
  {
    std::vector<std::jthread> threads;
    for (int t = 0; t < 8; ++t) {
      threads.emplace_back([&, t] {
        auto c = ControlClient::open(socket);
        if (!c) {
          errors8 += opt.calls / 8;
          return;
        }
        for (int i = 0; i < opt.calls / 8; ++i) {
          const auto s = Clock::now();
          auto r = c->call("tool.call", read_call(worktree));
          per_thread[static_cast<std::size_t>(t)].push_back(ms_since(s));
          if (!r || (*r)["ok"] != true) ++errors8;
        }
      });
    }
  }
  Row& eight = fig.rows[kEight];
  eight.present = true;
  eight.rate = (opt.calls / 8 * 8) / (ms_since(eight_start) / 1000);
  eight.errors = errors8.load();
  std::vector<double> all8;
  for (auto& v : per_thread)
    all8.insert(all8.end(), v.begin(), v.end());
  eight.stats = loopr::bench::stats_of(std::move(all8));
  fig.rss_after_mb = mb_of_kb(rss_kb(daemon->pid));

  // (c) the other file tools, on the persistent connection
  fig.rows[kGrep] = time_calls(*client, opt.calls, kWarmupCalls / 10, [&](int) {
    return tool_call(worktree, "grep", {{"pattern", kGrepLiteral}, {"path", "tree"}});
  });
  fig.rows[kGlob] = time_calls(*client, opt.calls, kWarmupCalls / 10, [&](int) {
    return tool_call(worktree, "glob", {{"pattern", "**/*.c"}, {"path", "tree"}});
  });
  fig.rows[kEdit] = time_edits(*client, worktree, opt.calls);

  // (d) baselines, fewer calls: each is a process
  const int spawn_calls = std::max(50, opt.calls / 5);
  {
    // A fresh worktree per call: each first call starts a worker (and, past
    // the lane's cap, stops the least recently used one).
    std::vector<double> cold;
    int cold_errors = 0;
    for (int i = 0; i < spawn_calls; ++i) {
      const std::string fresh = base + "/work/cold" + std::to_string(i);
      std::filesystem::create_directories(fresh);
      std::ofstream(fresh + "/file.txt") << std::string(4095, 'x') << '\n';
      const auto t = Clock::now();
      if (!call_ok(*client, read_call(fresh))) ++cold_errors;
      cold.push_back(ms_since(t));
    }
    fig.rows[kCold] = {true, loopr::bench::stats_of(cold), -1, cold_errors};
    // The same first calls through a looprd without warm workers: a
    // sandboxed process per call, as before issue 12.
    auto plain = start_looprd(opt, base, "warm_workers = 0\n");
    if (plain) {
      for (int i = 0; i < kWarmupCalls / 10; ++i)
        (void)plain->client->call("tool.call", read_call(worktree));
      std::vector<double> first;
      int first_errors = 0;
      for (int i = 0; i < spawn_calls; ++i) {
        const std::string fresh = base + "/work/plain" + std::to_string(i);
        std::filesystem::create_directories(fresh);
        std::ofstream(fresh + "/file.txt") << std::string(4095, 'x') << '\n';
        const auto t = Clock::now();
        if (!call_ok(*plain->client, read_call(fresh))) ++first_errors;
        first.push_back(ms_since(t));
      }
      fig.rows[kNoWorker] = {true, loopr::bench::stats_of(first), -1, first_errors};
      plain->stop();
    }
  }
  std::vector<double> fork_exec, bwrap;
  for (int i = 0; i < spawn_calls; ++i) {
    fork_exec.push_back(run_once({opt.bin_dir + "/loopr-tool", "read_file", "--worktree", worktree},
                                 base + "/args.json"));
    bwrap.push_back(
        run_once({"bwrap", "--unshare-all", "--die-with-parent", "--new-session", "--ro-bind", "/",
                  "/", "--dev", "/dev", "--proc", "/proc", "cat", worktree + "/file.txt"},
                 ""));
  }
  fig.rows[kFork] = {true, loopr::bench::stats_of(fork_exec), -1, -1};
  fig.rows[kBwrap] = {true, loopr::bench::stats_of(bwrap), -1, -1};

  // (e) the MCP reference server, same file, same number of calls; then the
  // same client through looprctl mcp and this looprd
  fig.rows[kMcp] = time_mcp_driver(opt, worktree, {}, fig.mcp_note);
  fig.rows[kLooprMcp] =
      time_mcp_driver(opt, worktree, {"--looprctl", opt.bin_dir + "/looprctl", "--socket", socket},
                      fig.loopr_mcp_note);

  // (f) RSS while a job prints output_gb GB
  if (opt.output_gb > 0) {
    std::atomic<bool> done{false};
    std::uint64_t rss_peak = 0;
    json flood_result;
    const auto bytes = static_cast<long long>(opt.output_gb * 1e9);
    std::jthread flood([&] {
      auto c = ControlClient::open(socket);
      if (c) {
        auto r = c->call("tool.call",
                         tool_call(worktree, "run_command_isolated",
                                   {{"command", "head -c " + std::to_string(bytes) +
                                                    " /dev/zero | tr '\\0' x"}}),
                         std::chrono::minutes(10));
        if (r) flood_result = *r;
      }
      done = true;
    });
    const auto flood_start = Clock::now();
    while (!done) {
      rss_peak = std::max(rss_peak, rss_kb(daemon->pid));
      std::this_thread::sleep_for(std::chrono::milliseconds(100));  // sampling interval
    }
    flood.join();
    fig.flooded = true;
    fig.flood_s = ms_since(flood_start) / 1000;
    fig.rss_peak_mb = mb_of_kb(rss_peak);
    fig.flood_status = flood_result.value("status", std::string("?"));
    fig.flood_truncated = flood_result.value("truncated", false);
  }

  stop_daemon();
  fig.load_end = load_average();
  return fig;
}

double median(std::vector<double> values) {
  if (values.empty()) return NAN;
  std::sort(values.begin(), values.end());
  const std::size_t n = values.size();
  return n % 2 == 1 ? values[n / 2] : (values[n / 2 - 1] + values[n / 2]) / 2;
}

struct Ratios {
  double bwrap_over_looprd = NAN, mcp_over_looprd = NAN, looprd_over_fork = NAN;
  double calls_per_s_8 = NAN;
  double cold_over_noworker = NAN;
  double loopr_mcp_over_reference = NAN;
};

Ratios ratios_of(const RunFigures& fig) {
  Ratios r;
  const double looprd = fig.rows[kOne].stats.p50;
  r.bwrap_over_looprd = fig.rows[kBwrap].stats.p50 / looprd;
  r.looprd_over_fork = looprd / fig.rows[kFork].stats.p50;
  if (fig.rows[kMcp].present) r.mcp_over_looprd = fig.rows[kMcp].stats.p50 / looprd;
  r.calls_per_s_8 = fig.rows[kEight].rate;
  if (fig.rows[kNoWorker].present) {
    r.cold_over_noworker = fig.rows[kCold].stats.p50 / fig.rows[kNoWorker].stats.p50;
  }
  if (fig.rows[kMcp].present && fig.rows[kLooprMcp].present) {
    r.loopr_mcp_over_reference = fig.rows[kLooprMcp].stats.p50 / fig.rows[kMcp].stats.p50;
  }
  return r;
}

void print_table(const std::array<Row, kRowCount>& rows, const char* errors_label) {
  std::printf("%-28s %8s %8s %8s %8s %10s\n", "way", "p50 ms", "p90 ms", "p99 ms", "max ms",
              "calls/s");
  for (std::size_t i = 0; i < kRowCount; ++i) {
    const Row& row = rows[i];
    if (!row.present) {
      std::printf("%-28s %8s\n", kRowNames[i], "-");
      continue;
    }
    std::printf("%-28s %8.3f %8.3f %8.3f %8.3f", kRowNames[i], row.stats.p50, row.stats.p90,
                row.stats.p99, row.stats.max);
    if (row.rate >= 0) std::printf(" %10.0f", row.rate);
    if (row.errors >= 0)
      std::printf("%s  %s %d", row.rate >= 0 ? "" : "           ", errors_label, row.errors);
    std::printf("\n");
  }
}

void print_ratios(const Ratios& r) {
  std::printf(
      "bwrap p50 / looprd read_file p50 = %.2fx (target >= 15x); "
      "looprd p50 / fork+exec p50 = %.2fx\n",
      r.bwrap_over_looprd, r.looprd_over_fork);
  if (std::isnan(r.mcp_over_looprd))
    std::printf("MCP reference p50 / looprd read_file p50 = - (no MCP row)\n");
  else
    std::printf("MCP reference p50 / looprd read_file p50 = %.2fx (target > 1x: looprd faster)\n",
                r.mcp_over_looprd);
  std::printf("looprd read_file with 8 clients: %.0f calls/s (target >= 5000, no errors)\n",
              r.calls_per_s_8);
  std::printf(
      "cold-worktree read p50 / no-warm-worker read p50 = %.2fx (target <= 1x: a first call no "
      "slower than a process per call)\n",
      r.cold_over_noworker);
  if (std::isnan(r.loopr_mcp_over_reference))
    std::printf("looprctl mcp p50 / MCP reference p50 = - (a row is missing)\n");
  else
    std::printf("looprctl mcp p50 / MCP reference p50 = %.2fx (< 1x: loopr's server faster)\n",
                r.loopr_mcp_over_reference);
}

void print_rss(double idle, double after, bool flooded, double output_gb, double flood_s,
               double peak, const std::string& status, bool truncated) {
  if (!flooded) {
    std::printf("looprd RSS: idle %.1f MB, after load %.1f MB (no output flood: --output-gb 0)\n",
                idle, after);
    return;
  }
  std::printf(
      "looprd RSS: idle %.1f MB, after load %.1f MB, peak while a job printed %.1f GB "
      "in %.1f s: %.1f MB (call status %s, truncated %s)\n",
      idle, after, output_gb, flood_s, peak, status.c_str(), truncated ? "yes" : "no");
}

void print_run(const Options& opt, int run, const RunFigures& fig) {
  std::printf("\n== run %d of %d: load average at start %.2f %.2f %.2f, at end %.2f %.2f %.2f\n",
              run, opt.runs, fig.load_start.one, fig.load_start.five, fig.load_start.fifteen,
              fig.load_end.one, fig.load_end.five, fig.load_end.fifteen);
  std::printf("looprd tool.call (no-net lane); %d calls a row, %d spawned\n", opt.calls,
              std::max(50, opt.calls / 5));
  print_table(fig.rows, "errors");
  std::printf("MCP reference: %s\n", fig.mcp_note.c_str());
  std::printf("looprctl mcp: %s\n", fig.loopr_mcp_note.c_str());
  print_ratios(ratios_of(fig));
  print_rss(fig.rss_idle_mb, fig.rss_after_mb, fig.flooded, opt.output_gb, fig.flood_s,
            fig.rss_peak_mb, fig.flood_status, fig.flood_truncated);
  std::fflush(stdout);
}

// The median of every figure over the runs (a row counts where it was
// measured); errors are summed over the runs.
void print_median(const Options& opt, const std::vector<RunFigures>& runs) {
  std::array<Row, kRowCount> rows;
  for (std::size_t i = 0; i < kRowCount; ++i) {
    std::vector<double> p50, p90, p99, max, rate;
    int errors = -1;
    for (const RunFigures& fig : runs) {
      const Row& row = fig.rows[i];
      if (!row.present) continue;
      p50.push_back(row.stats.p50);
      p90.push_back(row.stats.p90);
      p99.push_back(row.stats.p99);
      max.push_back(row.stats.max);
      rate.push_back(row.rate);
      if (row.errors >= 0) errors = std::max(errors, 0) + row.errors;
    }
    if (p50.empty()) continue;
    rows[i] = {true,
               {p50.size(), median(p50), median(p90), median(p99), median(max)},
               median(rate),
               errors};
  }
  std::printf("\n== median of %d runs (each figure's median; errors summed over the runs)\n",
              opt.runs);
  print_table(rows, "errors, all runs");
  std::vector<double> bwrap, mcp, fork, rate8, cold, loopr_mcp;
  for (const RunFigures& fig : runs) {
    const Ratios r = ratios_of(fig);
    bwrap.push_back(r.bwrap_over_looprd);
    fork.push_back(r.looprd_over_fork);
    if (!std::isnan(r.mcp_over_looprd)) mcp.push_back(r.mcp_over_looprd);
    rate8.push_back(r.calls_per_s_8);
    if (!std::isnan(r.cold_over_noworker)) cold.push_back(r.cold_over_noworker);
    if (!std::isnan(r.loopr_mcp_over_reference)) loopr_mcp.push_back(r.loopr_mcp_over_reference);
  }
  std::printf("ratios: median of the per-run ratios\n");
  print_ratios(
      {median(bwrap), median(mcp), median(fork), median(rate8), median(cold), median(loopr_mcp)});
  auto median_of = [&](double RunFigures::*field) {
    std::vector<double> v;
    for (const RunFigures& fig : runs)
      v.push_back(fig.*field);
    return median(v);
  };
  const RunFigures& last = runs.back();
  print_rss(median_of(&RunFigures::rss_idle_mb), median_of(&RunFigures::rss_after_mb), last.flooded,
            opt.output_gb, median_of(&RunFigures::flood_s), median_of(&RunFigures::rss_peak_mb),
            last.flood_status, last.flood_truncated);
}

void usage(const char* argv0) {
  std::cerr << "usage: " << argv0
            << " [--calls N] [--runs N] [--slots N] [--bin-dir DIR] [--output-gb G]\n"
               "       [--mcp-node-modules DIR] [--mcp-driver FILE]\n";
}

}  // namespace

int main(int argc, char** argv) {
  const std::filesystem::path exe_dir = std::filesystem::canonical("/proc/self/exe").parent_path();
  Options opt;
  opt.bin_dir = exe_dir;
  // BUILD/bin/daemon_load_bench → BUILD/npm/node_modules
  // (scripts/install-bench-npm.sh BUILD puts the packages there).
  opt.mcp_node_modules = (exe_dir.parent_path() / "npm" / "node_modules").string();
  const std::filesystem::path source_dir = LOOPR_BENCH_SOURCE_DIR;
  opt.mcp_driver = (source_dir / "mcp_reference_read.mjs").string();
  opt.mcp_install = (source_dir.parent_path() / "scripts" / "install-bench-npm.sh").string() + " " +
                    exe_dir.parent_path().string();
  for (int i = 1; i < argc; i += 2) {
    const std::string flag = argv[i];
    if (i + 1 >= argc) {
      usage(argv[0]);
      return 2;
    }
    const char* value = argv[i + 1];
    if (flag == "--calls") {
      opt.calls = std::atoi(value);
    } else if (flag == "--runs") {
      opt.runs = std::atoi(value);
    } else if (flag == "--slots") {
      opt.slots = std::max(1, std::atoi(value));
    } else if (flag == "--bin-dir") {
      opt.bin_dir = value;
    } else if (flag == "--output-gb") {
      opt.output_gb = std::atof(value);
    } else if (flag == "--mcp-node-modules") {
      opt.mcp_node_modules = value;
    } else if (flag == "--mcp-driver") {
      opt.mcp_driver = value;
    } else {
      usage(argv[0]);
      return 2;
    }
  }
  if (opt.calls < 8 || opt.runs < 1) {
    usage(argv[0]);
    return 2;
  }
  std::error_code ec;
  if (!std::filesystem::is_directory(opt.mcp_node_modules + "/@modelcontextprotocol", ec)) {
    std::printf(
        "MCP reference row will be skipped: no packages in %s; install them with\n"
        "  %s\n"
        "or pass --mcp-node-modules DIR\n",
        opt.mcp_node_modules.c_str(), opt.mcp_install.c_str());
  }

  std::vector<RunFigures> runs;
  for (int run = 1; run <= opt.runs; ++run) {
    auto fig = measure(opt);
    if (!fig) return 1;
    print_run(opt, run, *fig);
    runs.push_back(std::move(*fig));
  }
  if (opt.runs > 1) print_median(opt, runs);
  return 0;
}
