// Per-job latency of the lane runner (issue 3, DESIGN.md §9): a trivial
// read_file of a 4 KiB file, timed three ways side by side in one run,
// interleaved so machine noise hits all three alike:
//   runner  a job through loopr-runner's protocol on one persistent link
//           (the lane sandbox built once; per job: PID+mount namespace,
//           Landlock, capabilities, rlimits, seccomp, exec of loopr-tool)
//   fork    plain fork + exec of the same loopr-tool call, no sandbox
//   bwrap   bwrap --unshare-all --die-with-parent --new-session
//           --ro-bind / / --dev /dev --proc /proc around the same call
// It prints median, p90, p99 and mean per way, and the ratios of medians.
// Run by hand (bench/README.md), never as a timed test:
//   build/bin/runner_latency_bench [--iterations N] [--bin-dir DIR] [--only WAY]
// (--only runner|fork+exec|bwrap times one way alone, for profiling; the
// runner's pid is printed so strace/perf can attach.)
#include <fcntl.h>
#include <poll.h>
#include <signal.h>
#include <spawn.h>
#include <stdlib.h>
#include <sys/socket.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <functional>
#include <iostream>
#include <stdexcept>
#include <string>
#include <thread>
#include <vector>

#include "proto/frame_codec.hpp"
#include "proto/runner_messages.hpp"

extern char** environ;

namespace {

namespace proto = loopr::proto;
using Clock = std::chrono::steady_clock;
using nlohmann::json;

[[noreturn]] void die(const std::string& message) {
  std::cerr << "runner_latency_bench: " << message << "\n";
  std::exit(1);
}

// The loopr-runner of the no-net lane, on a socketpair (its end is fd 3).
class Runner {
 public:
  Runner(const std::string& bin_dir, const std::string& root, const std::string& worktree)
      : worktree_(worktree) {
    int pair[2];
    if (::socketpair(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0, pair) != 0) die("socketpair");
    link_ = pair[0];
    std::vector<std::string> args = {
        bin_dir + "/loopr-runner", "--lane", "no-net", "--fd",    "3", "--tool",
        bin_dir + "/loopr-tool",   "--root", root,     "--slots", "1"};
    std::vector<char*> argv;
    for (auto& arg : args)
      argv.push_back(arg.data());
    argv.push_back(nullptr);
    posix_spawn_file_actions_t actions;
    posix_spawn_file_actions_init(&actions);
    posix_spawn_file_actions_adddup2(&actions, pair[1], 3);
    if (::posix_spawn(&pid_, argv[0], &actions, nullptr, argv.data(), environ) != 0) {
      die("cannot start " + args[0]);
    }
    posix_spawn_file_actions_destroy(&actions);
    ::close(pair[1]);
    if (!std::holds_alternative<proto::Handshake>(receive())) die("no handshake from the runner");
    proto::HandshakeAck ack;
    ack.accepted = true;
    ack.slots = 1;
    send(ack);
  }

  pid_t pid() const { return pid_; }

  ~Runner() {
    send(proto::Shutdown{});
    ::close(link_);
    ::waitpid(pid_, nullptr, 0);
  }

  // One read_file job, start to result.
  std::string read(const std::string& path) {
    proto::Job job;
    job.job_id = std::to_string(++next_id_);
    job.tool = "read_file";
    job.args = {{"path", path}};
    job.worktree = worktree_;
    job.cwd = worktree_;
    job.timeout_ms = 10'000;
    job.max_output_bytes = 100'000;
    send(job);
    for (;;) {
      auto message = receive();
      if (auto* result = std::get_if<proto::JobResult>(&message)) {
        if (result->status != proto::JobStatus::success) {
          die("runner job failed: " + result->output + result->error.value_or(""));
        }
        return result->output;
      }
    }
  }

 private:
  void send(const proto::RunnerMessage& message) {
    auto frame = proto::encode_frame(proto::to_json(message));
    if (!frame) die("encode: " + frame.error().message);
    std::size_t done = 0;
    while (done < frame->size()) {
      const ssize_t n = ::send(link_, frame->data() + done, frame->size() - done, MSG_NOSIGNAL);
      if (n <= 0) die("the runner closed the link");
      done += static_cast<std::size_t>(n);
    }
  }

  proto::RunnerMessage receive() {
    for (;;) {
      auto frame = reader_.next();
      if (!frame) die("bad frame: " + frame.error().message);
      if (*frame) {
        auto message = proto::parse_runner_message(**frame);
        if (!message) die("bad message: " + message.error().message);
        return std::move(*message);
      }
      char buffer[65536];
      const ssize_t n = ::read(link_, buffer, sizeof buffer);
      if (n <= 0) die("the runner closed the link");
      reader_.feed(std::string_view(buffer, static_cast<std::size_t>(n)));
    }
  }

  std::string worktree_;
  int link_ = -1;
  pid_t pid_ = -1;
  proto::FrameReader reader_;
  int next_id_ = 0;
};

// fork + exec of argv with `input` on stdin; returns stdout. The arguments
// are small, so writing them before reading cannot deadlock.
std::string fork_exec(const std::vector<std::string>& args, const std::string& input) {
  int in_pipe[2], out_pipe[2];
  if (::pipe2(in_pipe, O_CLOEXEC) != 0 || ::pipe2(out_pipe, O_CLOEXEC) != 0) die("pipe2");
  std::vector<char*> argv;
  for (const auto& arg : args)
    argv.push_back(const_cast<char*>(arg.c_str()));
  argv.push_back(nullptr);
  const pid_t pid = ::fork();
  if (pid < 0) die("fork");
  if (pid == 0) {
    ::dup2(in_pipe[0], 0);
    ::dup2(out_pipe[1], 1);
    ::execve(argv[0], argv.data(), environ);
    ::_exit(127);
  }
  ::close(in_pipe[0]);
  ::close(out_pipe[1]);
  if (::write(in_pipe[1], input.data(), input.size()) != static_cast<ssize_t>(input.size())) {
    die("write to the child");
  }
  ::close(in_pipe[1]);
  std::string output;
  char buffer[65536];
  ssize_t n;
  while ((n = ::read(out_pipe[0], buffer, sizeof buffer)) > 0)
    output.append(buffer, static_cast<std::size_t>(n));
  ::close(out_pipe[0]);
  int status = 0;
  ::waitpid(pid, &status, 0);
  if (!WIFEXITED(status) || WEXITSTATUS(status) != 0) {
    die(args[0] + " failed (wait status " + std::to_string(status) + "): " + output);
  }
  return output;
}

struct Way {
  std::string name;
  std::function<std::string()> run;
  std::vector<double> ms;
};

double percentile(std::vector<double> values, double p) {
  std::sort(values.begin(), values.end());
  const auto index = static_cast<std::size_t>(p * static_cast<double>(values.size() - 1) + 0.5);
  return values[std::min(index, values.size() - 1)];
}

double mean(const std::vector<double>& values) {
  double sum = 0;
  for (double v : values)
    sum += v;
  return sum / static_cast<double>(values.size());
}

}  // namespace

int main(int argc, char** argv) {
  int iterations = 1000;
  std::string only;
  const char* env_bin = std::getenv("LOOPR_BIN_DIR");
  std::string bin_dir = env_bin && *env_bin ? env_bin : "build/bin";
  for (int i = 1; i < argc; ++i) {
    const std::string arg = argv[i];
    if (arg == "--iterations" && i + 1 < argc) {
      iterations = std::max(10, std::atoi(argv[++i]));
    } else if (arg == "--bin-dir" && i + 1 < argc) {
      bin_dir = argv[++i];
    } else if (arg == "--only" && i + 1 < argc) {
      only = argv[++i];
    } else {
      std::cerr << "usage: runner_latency_bench [--iterations N] [--bin-dir DIR] [--only WAY]\n";
      return 2;
    }
  }
  bin_dir = std::filesystem::absolute(bin_dir).string();
  const std::string tool = bin_dir + "/loopr-tool";

  const char* tmp = std::getenv("TMPDIR");
  std::string root = std::string(tmp && *tmp ? tmp : "/tmp") + "/loopr-bench-XXXXXX";
  if (::mkdtemp(root.data()) == nullptr) die("mkdtemp");
  root = std::filesystem::canonical(root).string();
  const std::string worktree = root + "/wt";
  std::filesystem::create_directory(worktree);
  {
    std::ofstream file(worktree + "/file.txt");
    for (int line = 0; file.tellp() < 4096 - 64; ++line)
      file << "line " << line << " of a 4 KiB file read by the runner latency bench\n";
  }
  const std::string args = json{{"path", "file.txt"}}.dump();

  {
    Runner runner(bin_dir, root, worktree);
    std::vector<Way> ways;
    ways.push_back({"runner", [&] { return runner.read("file.txt"); }, {}});
    ways.push_back({"fork+exec",
                    [&] {
                      return fork_exec({tool, "read_file", "--worktree", worktree}, args);
                    },
                    {}});
    ways.push_back({"bwrap",
                    [&] {
                      return fork_exec(
                          {"/usr/bin/bwrap", "--unshare-all", "--die-with-parent", "--new-session",
                           "--ro-bind", "/", "/", "--dev", "/dev", "--proc", "/proc", tool,
                           "read_file", "--worktree", worktree},
                          args);
                    },
                    {}});
    // Every way must return the same answer; then warm up.
    const std::string expected = ways[1].run();
    if (!only.empty()) {
      std::erase_if(ways, [&](const Way& way) { return way.name != only; });
      if (ways.empty()) die("--only takes runner, fork+exec or bwrap");
    }
    for (auto& way : ways) {
      if (way.run() != expected) die(way.name + " returned something else than fork+exec");
      for (int i = 0; i < 20; ++i)
        way.run();
    }
    if (!only.empty()) {
      std::fprintf(stderr, "runner pid %d\n", runner.pid());
      std::this_thread::sleep_for(std::chrono::seconds(1));  // time to attach a profiler
    }
    for (int i = 0; i < iterations; ++i) {
      for (std::size_t k = 0; k < ways.size(); ++k) {
        Way& way = ways[(k + static_cast<std::size_t>(i)) % ways.size()];  // rotate the order
        const auto start = Clock::now();
        way.run();
        way.ms.push_back(std::chrono::duration<double, std::milli>(Clock::now() - start).count());
      }
    }
    std::printf("read_file of a 4 KiB file, %d interleaved iterations each (ms)\n", iterations);
    std::printf("%-10s %8s %8s %8s %8s\n", "way", "median", "p90", "p99", "mean");
    for (const auto& way : ways) {
      std::printf("%-10s %8.3f %8.3f %8.3f %8.3f\n", way.name.c_str(), percentile(way.ms, 0.5),
                  percentile(way.ms, 0.9), percentile(way.ms, 0.99), mean(way.ms));
    }
    if (ways.size() == 3) {
      const double runner_median = percentile(ways[0].ms, 0.5);
      const double fork_median = percentile(ways[1].ms, 0.5);
      const double bwrap_median = percentile(ways[2].ms, 0.5);
      std::printf("runner / fork+exec = %.2fx (target <= 1.5x)\n", runner_median / fork_median);
      std::printf("bwrap / runner     = %.2fx\n", bwrap_median / runner_median);
    }
  }
  std::filesystem::remove_all(root);
  return 0;
}
