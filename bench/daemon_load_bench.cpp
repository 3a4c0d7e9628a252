// looprd under load (issue 4, DESIGN.md §9), timed side by side in one run:
//   one     one persistent client: sequential tool.call read_file of a 4 KiB
//           file (no-net lane): p50/p90/p99/max latency and calls/s
//   eight   8 clients, one thread each, the same call: aggregate calls/s
//   fork    plain fork+exec of `loopr-tool read_file` per call (no sandbox)
//   bwrap   `bwrap --unshare-all ... cat FILE` per call
// and looprd's RSS idle, after the load, and while a job prints 10 GB.
// Run by hand (bench/README.md), never as a timed test:
//   build/bin/daemon_load_bench [--calls N] [--bin-dir DIR] [--output-gb G]
#include <fcntl.h>
#include <signal.h>
#include <spawn.h>
#include <stdlib.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <chrono>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <iostream>
#include <sstream>
#include <string>
#include <thread>
#include <vector>

#include "bench/sample_stats.hpp"
#include "client/control_client.hpp"

extern char** environ;

namespace {

using Clock = std::chrono::steady_clock;
using loopr::client::ControlClient;
using nlohmann::json;

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

// Runs argv to completion with stdin from `input_file` (or /dev/null) and
// stdout to /dev/null; returns the wall time in ms.
double run_once(const std::vector<std::string>& args, const std::string& input_file) {
  std::vector<char*> argv;
  for (const auto& a : args)
    argv.push_back(const_cast<char*>(a.c_str()));
  argv.push_back(nullptr);
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

json read_call(const std::string& worktree) {
  return {{"tool", "read_file"}, {"args", {{"path", "file.txt"}}}, {"worktree", worktree}};
}

}  // namespace

int main(int argc, char** argv) {
  int calls = 2000;
  double output_gb = 10;
  std::string bin_dir = std::filesystem::canonical("/proc/self/exe").parent_path();
  for (int i = 1; i + 1 < argc; i += 2) {
    const std::string flag = argv[i];
    if (flag == "--calls") calls = std::atoi(argv[i + 1]);
    if (flag == "--bin-dir") bin_dir = argv[i + 1];
    if (flag == "--output-gb") output_gb = std::atof(argv[i + 1]);
  }
  char pattern[] = "/tmp/loopr-bench-XXXXXX";
  const std::string base = ::mkdtemp(pattern);
  const std::string worktree = base + "/work/repo";
  std::filesystem::create_directories(worktree);
  std::filesystem::create_directories(base + "/config");
  std::ofstream(worktree + "/file.txt") << std::string(4095, 'x') << '\n';
  std::ofstream(base + "/config/loopr.toml")
      << "[sandbox]\nworktree_roots = [\"" << base << "/work\"]\n"
      << "[lanes.no-net]\nslots = 2\n";
  std::ofstream(base + "/args.json") << R"({"path": "file.txt"})";
  const std::string socket = base + "/run/looprd.sock";

  std::vector<std::string> daemon_args = {
      bin_dir + "/looprd", "--foreground", "--socket",      socket,        "--config-dir",
      base + "/config",    "--state-dir",  base + "/state", "--log-level", "warn"};
  std::vector<char*> dargv;
  for (auto& a : daemon_args)
    dargv.push_back(a.data());
  dargv.push_back(nullptr);
  pid_t daemon = -1;
  if (::posix_spawn(&daemon, dargv[0], nullptr, nullptr, dargv.data(), environ) != 0) {
    std::cerr << "cannot start " << dargv[0] << "\n";
    return 1;
  }
  std::optional<ControlClient> client;
  for (int i = 0; i < 400 && !client; ++i) {
    if (auto c = ControlClient::open(socket))
      client.emplace(std::move(*c));
    else
      std::this_thread::sleep_for(std::chrono::milliseconds(25));  // waiting for start
  }
  if (!client) {
    std::cerr << "looprd did not answer\n";
    return 1;
  }
  for (int i = 0; i < 200; ++i)
    (void)client->call("tool.call", read_call(worktree));  // warm-up
  const std::uint64_t rss_idle = rss_kb(daemon);

  // (a) one persistent connection
  std::vector<double> one;
  const auto one_start = Clock::now();
  int errors = 0;
  for (int i = 0; i < calls; ++i) {
    const auto t = Clock::now();
    auto r = client->call("tool.call", read_call(worktree));
    one.push_back(ms_since(t));
    if (!r || (*r)["ok"] != true) ++errors;
  }
  const double one_rate = calls / (ms_since(one_start) / 1000);

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
          errors8 += calls / 8;
          return;
        }
        for (int i = 0; i < calls / 8; ++i) {
          const auto s = Clock::now();
          auto r = c->call("tool.call", read_call(worktree));
          per_thread[static_cast<std::size_t>(t)].push_back(ms_since(s));
          if (!r || (*r)["ok"] != true) ++errors8;
        }
      });
    }
  }
  const double eight_rate = (calls / 8 * 8) / (ms_since(eight_start) / 1000);
  std::vector<double> eight;
  for (auto& v : per_thread)
    eight.insert(eight.end(), v.begin(), v.end());
  const std::uint64_t rss_after = rss_kb(daemon);

  // (c) baselines, fewer calls: each is a process
  const int spawn_calls = std::max(50, calls / 5);
  std::vector<double> fork_exec, bwrap;
  for (int i = 0; i < spawn_calls; ++i) {
    fork_exec.push_back(run_once({bin_dir + "/loopr-tool", "read_file", "--worktree", worktree},
                                 base + "/args.json"));
    bwrap.push_back(
        run_once({"bwrap", "--unshare-all", "--die-with-parent", "--new-session", "--ro-bind", "/",
                  "/", "--dev", "/dev", "--proc", "/proc", "cat", worktree + "/file.txt"},
                 ""));
  }

  // (d) RSS while a job prints output_gb GB
  std::atomic<bool> done{false};
  std::uint64_t rss_peak = 0;
  json flood_result;
  const auto bytes = static_cast<long long>(output_gb * 1e9);
  std::jthread flood([&] {
    auto c = ControlClient::open(socket);
    if (c) {
      auto r = c->call(
          "tool.call",
          {{"tool", "run_command_isolated"},
           {"args", {{"command", "head -c " + std::to_string(bytes) + " /dev/zero | tr '\\0' x"}}},
           {"worktree", worktree}},
          std::chrono::minutes(10));
      if (r) flood_result = *r;
    }
    done = true;
  });
  const auto flood_start = Clock::now();
  while (!done) {
    rss_peak = std::max(rss_peak, rss_kb(daemon));
    std::this_thread::sleep_for(std::chrono::milliseconds(100));  // sampling interval
  }
  flood.join();
  const double flood_s = ms_since(flood_start) / 1000;

  ::kill(daemon, SIGTERM);
  ::waitpid(daemon, nullptr, 0);
  std::filesystem::remove_all(base);

  const loopr::bench::SampleStats s1 = loopr::bench::stats_of(one),
                                  s8 = loopr::bench::stats_of(eight),
                                  sf = loopr::bench::stats_of(fork_exec),
                                  sb = loopr::bench::stats_of(bwrap);
  std::printf("looprd tool.call read_file (4 KiB, no-net lane); %d calls, %d spawned\n", calls,
              spawn_calls);
  std::printf("%-28s %8s %8s %8s %8s %10s\n", "way", "p50 ms", "p90 ms", "p99 ms", "max ms",
              "calls/s");
  std::printf("%-28s %8.3f %8.3f %8.3f %8.3f %10.0f  errors %d\n", "looprd, 1 connection", s1.p50,
              s1.p90, s1.p99, s1.max, one_rate, errors);
  std::printf("%-28s %8.3f %8.3f %8.3f %8.3f %10.0f  errors %d\n", "looprd, 8 connections", s8.p50,
              s8.p90, s8.p99, s8.max, eight_rate, errors8.load());
  std::printf("%-28s %8.3f %8.3f %8.3f %8.3f\n", "fork+exec loopr-tool", sf.p50, sf.p90, sf.p99,
              sf.max);
  std::printf("%-28s %8.3f %8.3f %8.3f %8.3f\n", "bwrap --unshare-all cat", sb.p50, sb.p90, sb.p99,
              sb.max);
  std::printf("bwrap p50 / looprd p50 = %.2fx (target >= 6x); looprd p50 / fork+exec p50 = %.2fx\n",
              sb.p50 / s1.p50, s1.p50 / sf.p50);
  std::printf(
      "looprd RSS: idle %.1f MB, after load %.1f MB, peak while a job printed %.1f GB "
      "in %.1f s: %.1f MB (call status %s, truncated %s)\n",
      static_cast<double>(rss_idle) / 1024.0, static_cast<double>(rss_after) / 1024.0, output_gb,
      flood_s, static_cast<double>(rss_peak) / 1024.0,
      flood_result.value("status", std::string("?")).c_str(),
      flood_result.value("truncated", false) ? "yes" : "no");
  return 0;
}
