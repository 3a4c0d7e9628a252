#include "tests/runner/runner_harness.hpp"

#include <fcntl.h>
#include <gtest/gtest.h>
#include <poll.h>
#include <signal.h>
#include <spawn.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include <asio/executor_work_guard.hpp>
#include <asio/io_context.hpp>
#include <asio/post.hpp>
#include <filesystem>
#include <mutex>
#include <thread>

#include "common/fd_passing.hpp"
#include "config/catalog.hpp"
#include "daemon/job_traits.hpp"

extern char** environ;

namespace loopr::test {

// looprd's egress proxy, on an io thread of the harness's own.
struct RunnerHarness::Egress {
  explicit Egress(const RunnerOptions& options)
      : proxy(
            io, policy_of(options),
            [this](const egress::NetConnection& connection) {
              std::lock_guard lock(mutex);
              seen.push_back(connection);
            },
            egress::EgressProxyOptions{.resolve = options.resolve}) {
    thread = std::thread([this] { io.run(); });
  }
  ~Egress() {
    asio::post(io, [this] {
      proxy.stop();
      work.reset();
    });
    thread.join();
  }
  static egress::EgressPolicy policy_of(const RunnerOptions& options) {
    std::map<std::string, egress::LaneDomainRules> lanes;
    lanes[options.lane] = {DomainList::parse(options.allow_domains, "allow").value(),
                           DomainList::parse(options.deny_domains, "deny").value()};
    return egress::EgressPolicy(
        egress::AddressPolicy::from_strings(options.allowed_networks).value(), std::move(lanes));
  }
  void serve(const std::string& lane, UniqueFd listener) {
    auto shared = std::make_shared<UniqueFd>(std::move(listener));
    asio::post(io, [this, lane, shared] { proxy.serve(lane, std::move(*shared)); });
  }

  asio::io_context io;
  asio::executor_work_guard<asio::io_context::executor_type> work{io.get_executor()};
  egress::EgressProxy proxy;
  mutable std::mutex mutex;
  std::vector<egress::NetConnection> seen;
  std::thread thread;
};

RunnerHarness::RunnerHarness(RunnerOptions options) : options_(std::move(options)) {
  worktree_ = tree_.path("wt");
  tree_.mkdir("wt");
  std::filesystem::copy_file(bin_path("loopr-attack-probe"), worktree_ + "/.probe");
  ::chmod((worktree_ + "/.probe").c_str(), 0755);

  int pair[2];
  if (::socketpair(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0, pair) != 0) {
    throw std::runtime_error("socketpair");
  }
  link_.reset(pair[0]);
  int err_pipe[2];
  if (::pipe2(err_pipe, O_CLOEXEC) != 0) throw std::runtime_error("pipe2");
  stderr_pipe_.reset(err_pipe[0]);

  int egress_pair[2] = {-1, -1};
  if (options_.network && ::socketpair(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0, egress_pair) != 0) {
    throw std::runtime_error("socketpair");
  }
  std::vector<std::string> args = {bin_path("loopr-runner"),
                                   "--lane",
                                   options_.lane,
                                   "--fd",
                                   "3",
                                   "--tool",
                                   bin_path("loopr-tool"),
                                   "--root",
                                   tree_.root(),
                                   "--slots",
                                   std::to_string(options_.slots),
                                   "--term-grace-ms",
                                   std::to_string(options_.term_grace_ms)};
  if (options_.network) args.insert(args.end(), {"--network", "--egress-fd", "4"});
  if (options_.stream_output) args.push_back("--stream-output");
  args.insert(args.end(), options_.extra_args.begin(), options_.extra_args.end());
  std::vector<char*> argv;
  for (auto& arg : args)
    argv.push_back(arg.data());
  argv.push_back(nullptr);

  std::vector<std::string> env_entries;
  for (char** entry = environ; *entry != nullptr; ++entry) {
    const std::string text = *entry;
    if (!options_.env.contains(text.substr(0, text.find('=')))) env_entries.push_back(text);
  }
  for (const auto& [name, value] : options_.env)
    env_entries.push_back(name + "=" + value);
  std::vector<char*> envp;
  for (auto& entry : env_entries)
    envp.push_back(entry.data());
  envp.push_back(nullptr);

  posix_spawn_file_actions_t actions;
  posix_spawn_file_actions_init(&actions);
  posix_spawn_file_actions_adddup2(&actions, pair[1], 3);
  posix_spawn_file_actions_adddup2(&actions, err_pipe[1], 2);
  if (options_.network) posix_spawn_file_actions_adddup2(&actions, egress_pair[1], 4);
  const int rc = ::posix_spawn(&pid_, argv[0], &actions, nullptr, argv.data(), envp.data());
  posix_spawn_file_actions_destroy(&actions);
  ::close(pair[1]);
  ::close(err_pipe[1]);
  if (options_.network) ::close(egress_pair[1]);
  if (rc != 0) throw std::runtime_error("cannot spawn loopr-runner");
  if (options_.network) {
    // The runner passes its listener while it builds the sandbox; one that
    // fails first closes the link, and its jobs then have no way out.
    UniqueFd egress_link(egress_pair[0]);
    egress_ = std::make_unique<Egress>(options_);
    if (auto listener = receive_fd(egress_link.get())) {
      egress_->serve(options_.lane, std::move(*listener));
    }
  }

  if (options_.handshake) {
    auto hello = receive_a<proto::Handshake>();
    if (!hello) {
      ADD_FAILURE() << "no handshake from loopr-runner; its stderr: " << runner_stderr();
      return;
    }
    EXPECT_EQ(hello->lane, options_.lane);
    proto::HandshakeAck ack;
    ack.accepted = true;
    ack.slots = static_cast<std::uint32_t>(options_.slots);
    send(ack);
  }
}

RunnerOptions lane_options(const std::string& lane) {
  RunnerOptions options;
  options.lane = lane;
  options.network = lane == "net" || lane == "heavy";
  options.stream_output = lane == "heavy";
  return options;
}

std::vector<egress::NetConnection> RunnerHarness::connections() const {
  if (!egress_) return {};
  std::lock_guard lock(egress_->mutex);
  return egress_->seen;
}

RunnerHarness::~RunnerHarness() {
  if (!exited_) {
    ::kill(pid_, SIGKILL);
    ::waitpid(pid_, nullptr, 0);
  }
}

void RunnerHarness::send(const proto::RunnerMessage& message) {
  auto frame = proto::encode_frame(proto::to_json(message));
  ASSERT_TRUE(frame.ok()) << frame.error().message;
  send_raw(*frame);
}

void RunnerHarness::send_raw(std::string_view bytes) {
  std::size_t done = 0;
  while (done < bytes.size()) {
    const ssize_t n = ::send(link_.get(), bytes.data() + done, bytes.size() - done, MSG_NOSIGNAL);
    if (n <= 0) return;  // the runner is gone; receive() will say so
    done += static_cast<std::size_t>(n);
  }
}

std::optional<proto::RunnerMessage> RunnerHarness::receive(std::chrono::milliseconds wait) {
  const auto deadline = std::chrono::steady_clock::now() + wait;
  for (;;) {
    auto frame = reader_.next();
    if (!frame) {
      ADD_FAILURE() << "bad frame from loopr-runner: " << frame.error().message;
      return std::nullopt;
    }
    if (*frame) {
      auto message = proto::parse_runner_message(**frame);
      if (!message) {
        ADD_FAILURE() << "bad message from loopr-runner: " << message.error().message;
        return std::nullopt;
      }
      return std::move(*message);
    }
    const auto left = std::chrono::duration_cast<std::chrono::milliseconds>(
                          deadline - std::chrono::steady_clock::now())
                          .count();
    if (left <= 0) return std::nullopt;
    pollfd p{link_.get(), POLLIN, 0};
    if (::poll(&p, 1, static_cast<int>(left)) <= 0) return std::nullopt;
    char buffer[65536];
    const ssize_t n = ::read(link_.get(), buffer, sizeof buffer);
    if (n <= 0) return std::nullopt;
    reader_.feed(std::string_view(buffer, static_cast<std::size_t>(n)));
  }
}

proto::Job RunnerHarness::job(const std::string& id, const std::string& tool, nlohmann::json args,
                              std::uint64_t timeout_ms, std::uint64_t max_output) const {
  proto::Job job;
  job.job_id = id;
  job.tool = tool;
  job.args = std::move(args);
  job.worktree = worktree_;
  job.cwd = worktree_;
  job.timeout_ms = timeout_ms;
  job.max_output_bytes = max_output;
  // As looprd does, from the built-in catalog; a name it lacks (a test of an
  // unknown tool) keeps the cautious defaults.
  static const config::Catalog catalog = config::Catalog::builtin();
  if (const config::ToolSpec* spec = catalog.find(tool)) job.traits = daemon::job_traits(*spec);
  if (egress_) {
    // As looprd does: the job's connections name its call.
    job.egress_token = "token-" + id;
    egress_->proxy.attribute(job.egress_token, id);
  }
  return job;
}

proto::JobResult RunnerHarness::run(const std::string& tool, nlohmann::json args,
                                    std::uint64_t timeout_ms, std::uint64_t max_output) {
  const std::string id = "job-" + std::to_string(++next_id_);
  send(job(id, tool, std::move(args), timeout_ms, max_output));
  for (;;) {
    auto result = receive_a<proto::JobResult>(std::chrono::milliseconds(timeout_ms + 30'000));
    if (!result) {
      ADD_FAILURE() << "no result for " << tool << "; runner stderr: " << runner_stderr();
      return {};
    }
    if (result->job_id == id) return *result;
  }
}

nlohmann::json RunnerHarness::shell(const std::string& command, std::uint64_t timeout_ms) {
  const auto result = run("run_command", {{"command", command}}, timeout_ms + 10'000);
  EXPECT_EQ(result.status, proto::JobStatus::success)
      << (result.error ? *result.error : "") << " " << result.output << result.stderr_bytes;
  auto parsed = nlohmann::json::parse(result.output, nullptr, false);
  return parsed.is_discarded() ? nlohmann::json() : parsed;
}

std::string RunnerHarness::probe(const std::string& attack_and_args) {
  const auto out = shell("./.probe " + attack_and_args);
  std::string line = out.value("stdout", "");
  while (!line.empty() && line.back() == '\n')
    line.pop_back();
  return line;
}

int RunnerHarness::wait_exit() {
  if (!exited_) {
    ::waitpid(pid_, &exit_status_, 0);
    exited_ = true;
  }
  return exit_status_;
}

std::string RunnerHarness::runner_stderr() {
  std::string out;
  ::fcntl(stderr_pipe_.get(), F_SETFL, O_NONBLOCK);
  char buffer[4096];
  ssize_t n;
  while ((n = ::read(stderr_pipe_.get(), buffer, sizeof buffer)) > 0) {
    out.append(buffer, static_cast<std::size_t>(n));
  }
  return out;
}

}  // namespace loopr::test
