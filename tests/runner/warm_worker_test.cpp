// Warm workers (runner/warm_workers.hpp) through the real loopr-runner: the
// file tools are served by one resident, confined `loopr-tool --serve` per
// worktree, with results byte-identical to a process per call; timeouts,
// cancels and deaths kill or replace the worker and say so.
#include <fcntl.h>
#include <gtest/gtest.h>
#include <signal.h>
#include <sys/prctl.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <unistd.h>

#include <fstream>
#include <sstream>
#include <thread>

#include "runner/seccomp_filter.hpp"
#include "tests/runner/process_scan.hpp"
#include "tests/runner/runner_harness.hpp"

namespace loopr::test {
namespace {

using nlohmann::json;
using proto::JobStatus;
using namespace std::chrono_literals;

std::string worker_marker(const RunnerHarness& runner) {
  return "--serve --worktree " + runner.worktree() + " ";
}

std::vector<int> workers_of(const RunnerHarness& runner) {
  return processes_with(worker_marker(runner));
}

// The value of `field` in /proc/PID/status ("" if absent).
std::string status_field(int pid, const std::string& field) {
  std::ifstream in("/proc/" + std::to_string(pid) + "/status");
  std::string line;
  while (std::getline(in, line)) {
    if (line.rfind(field + ":", 0) == 0) {
      const auto value = line.find_first_not_of(" \t", field.size() + 1);
      return value == std::string::npos ? "" : line.substr(value);
    }
  }
  return "";
}

// Writes wt/NAME, reads it through the runner, and returns the workers of
// the worktree then (one, unless something is wrong; callers assert it).
std::vector<int> warm_up(RunnerHarness& runner, const std::string& name,
                         const std::string& content) {
  runner.tree().write("wt/" + name, content);
  const auto read = runner.run("read_file", {{"path", name}});
  EXPECT_EQ(read.status, JobStatus::success) << read.output << read.error.value_or("");
  return workers_of(runner);
}

RunnerOptions with_args(std::vector<std::string> args, RunnerOptions options = {}) {
  options.extra_args.insert(options.extra_args.end(), args.begin(), args.end());
  return options;
}

TEST(WarmWorker, FileToolsAreServedByOneResidentConfinedWorkerPerWorktree) {
  RunnerHarness runner;
  runner.tree().write("wt/a.txt", "alpha\n");
  ASSERT_TRUE(workers_of(runner).empty());
  ASSERT_EQ(runner.run("read_file", {{"path", "a.txt"}}).status, JobStatus::success);
  const auto first = workers_of(runner);
  ASSERT_EQ(first.size(), 1u) << "the first file-tool call starts a worker that stays";
  for (const char* tool : {"read_file", "list_directory", "grep", "glob"}) {
    json args = {{"path", "."}};
    if (std::string(tool) == "read_file") args = {{"path", "a.txt"}};
    if (std::string(tool) == "grep") args["pattern"] = "alpha";
    if (std::string(tool) == "glob") args = {{"pattern", "*.txt"}};
    const auto result = runner.run(tool, args);
    EXPECT_EQ(result.status, JobStatus::success) << tool << ": " << result.output;
  }
  EXPECT_EQ(workers_of(runner), first) << "every call went to the same worker";

  // Confined as a job is, plus its own filter: two seccomp filters stacked
  // (the lane's and the one against new processes), no privileges.
  const int pid = first.front();
  EXPECT_EQ(status_field(pid, "Seccomp"), "2");
  EXPECT_EQ(status_field(pid, "Seccomp_filters"), "2");
  EXPECT_EQ(status_field(pid, "NoNewPrivs"), "1");
  EXPECT_EQ(status_field(pid, "CapEff"), "0000000000000000");
  EXPECT_EQ(status_field(pid, "CapPrm"), "0000000000000000");
  // PID 1 of a namespace of its own.
  EXPECT_EQ(status_field(pid, "NSpid").substr(status_field(pid, "NSpid").rfind('\t') + 1), "1");
}

TEST(WarmWorker, ResultsAreByteIdenticalToAProcessPerCall) {
  RunnerHarness warm;
  RunnerHarness cold(with_args({"--warm-workers", "0"}));
  for (RunnerHarness* runner : {&warm, &cold}) {
    runner->tree().write("wt/src/main.c", "int main(void) {\n  return 0;\n}\n");
    runner->tree().write("wt/src/util.c", "int util;\n\xff\xfe binary-ish\n");
    runner->tree().write("wt/notes.md", std::string(5000, 'x') + "\nneedle\n");
    // 19 MB of read_file page: more than a worker's reply frame could
    // hold, were the page not cut to fit the cap in the worker.
    std::string wide;
    for (int i = 0; i < 10'000; ++i)
      wide += std::string(1900, static_cast<char>('a' + i % 26)) + "\n";
    runner->tree().write("wt/wide.txt", wide);
    // The same times in both trees: glob lists newest first, and two files
    // written within one tick of the file system's clock tie (then go by
    // path) in one tree but not in the other.
    int age = 0;
    for (const char* file : {"wt/src/main.c", "wt/src/util.c", "wt/notes.md", "wt/wide.txt"}) {
      const timespec at{1'700'000'000 + 60 * age++, 0};
      const timespec times[2] = {at, at};
      ASSERT_EQ(::utimensat(AT_FDCWD, runner->tree().path(file).c_str(), times, 0), 0) << file;
    }
  }
  const std::vector<std::pair<std::string, json>> calls = {
      {"read_file", {{"path", "src/main.c"}}},
      {"read_file", {{"path", "notes.md"}, {"offset", 2}}},
      {"read_file", {{"path", "missing.c"}}},
      {"read_file", {{"path", "../outside"}}},
      {"list_directory", {{"path", "."}, {"recursive", true}}},
      {"glob", {{"pattern", "**/*.c"}}},
      {"grep", {{"pattern", "needle|main"}, {"path", "."}}},
      {"grep", {{"pattern", "("}}},
      {"read_file", {{"path", "notes.md"}}},
  };
  for (const auto& [tool, args] : calls) {
    // A small output cap, so the truncation marker is compared too.
    const auto a = warm.run(tool, args, 30'000, 300);
    const auto b = cold.run(tool, args, 30'000, 300);
    EXPECT_EQ(a.status, b.status) << tool << " " << args.dump();
    EXPECT_EQ(a.exit_code, b.exit_code) << tool << " " << args.dump();
    EXPECT_EQ(a.output, b.output) << tool << " " << args.dump();
    EXPECT_EQ(a.truncated, b.truncated) << tool << " " << args.dump();
  }
  for (const json& args : {json{{"path", "wide.txt"}, {"limit", 10'000}}}) {
    const auto a = warm.run("read_file", args, 60'000, 1'000'000);
    const auto b = cold.run("read_file", args, 60'000, 1'000'000);
    EXPECT_EQ(a.status, JobStatus::success) << a.error.value_or("");
    // Cut at a whole line to fit the cap (loopr-tool/output_fit.hpp), not
    // by the runner.
    EXPECT_FALSE(a.truncated);
    EXPECT_LE(a.output.size(), 1'000'000u);
    const json page = json::parse(a.output, nullptr, false);
    ASSERT_TRUE(page.is_object()) << a.output.substr(0, 200);
    EXPECT_EQ(page["more"], true);
    EXPECT_GT(page["lines_returned"], 400);
    EXPECT_EQ(page["next_offset"], 1 + page["lines_returned"].get<int>());
    EXPECT_EQ(a.status, b.status);
    EXPECT_EQ(a.exit_code, b.exit_code);
    EXPECT_EQ(a.truncated, b.truncated);
    EXPECT_EQ(a.output, b.output);
  }
  EXPECT_EQ(workers_of(warm).size(), 1u);
  EXPECT_TRUE(workers_of(cold).empty()) << "--warm-workers 0 runs a process per call";
}

// Which calls a worker takes is the job's warm_worker trait, not its tool's
// name: a read_file job whose traits say otherwise runs as a process, and
// the same call with the catalog's traits starts a worker.
TEST(WarmWorker, TheJobsTraitNotItsToolNameDecidesWhetherAWorkerServesIt) {
  RunnerHarness runner;
  runner.tree().write("wt/a.txt", "a\n");
  proto::Job job = runner.job("cold-1", "read_file", {{"path", "a.txt"}});
  ASSERT_TRUE(job.traits.warm_worker) << "the built-in catalog marks read_file for warm workers";
  job.traits.warm_worker = false;
  runner.send(job);
  const auto cold = runner.receive_a<proto::JobResult>();
  ASSERT_TRUE(cold.has_value()) << runner.runner_stderr();
  EXPECT_EQ(cold->status, JobStatus::success) << cold->output << cold->error.value_or("");
  EXPECT_TRUE(workers_of(runner).empty()) << "a job not marked warm_worker ran on a worker";
  const auto warm = runner.run("read_file", {{"path", "a.txt"}});
  EXPECT_EQ(warm.status, JobStatus::success);
  EXPECT_EQ(warm.output, cold->output);
  EXPECT_EQ(workers_of(runner).size(), 1u);
}

// Nothing is cached across calls: what a command job changes between two
// calls is what the second call sees.
TEST(WarmWorker, SeesWhatACommandJobChangedBetweenCalls) {
  RunnerHarness runner;
  runner.tree().write("wt/f.txt", "before\n");
  auto first = json::parse(runner.run("read_file", {{"path", "f.txt"}}).output);
  EXPECT_EQ(first["content"], "     1|before\n");
  runner.shell("printf 'after\\nmore\\n' > f.txt && rm -f gone.txt && mkdir -p d && touch d/new");
  auto second = json::parse(runner.run("read_file", {{"path", "f.txt"}}).output);
  EXPECT_EQ(second["content"], "     1|after\n     2|more\n");
  EXPECT_NE(first["content_hash"], second["content_hash"]);
  const auto listing = runner.run("list_directory", {{"path", "d"}});
  EXPECT_NE(listing.output.find("new"), std::string::npos) << listing.output;
  EXPECT_EQ(workers_of(runner).size(), 1u);
}

TEST(WarmWorker, AWriteThroughTheWorkerLandsInTheWorktree) {
  RunnerHarness runner;
  const auto written =
      runner.run("write_file", {{"path", "new/dir/out.txt"}, {"content", "written\n"}});
  ASSERT_EQ(written.status, JobStatus::success) << written.output;
  EXPECT_EQ(runner.tree().read("wt/new/dir/out.txt"), "written\n");
  ASSERT_EQ(runner.run("read_file", {{"path", "new/dir/out.txt"}}).status, JobStatus::success);
  const auto edited = runner.run(
      "edit_file", {{"path", "new/dir/out.txt"}, {"old_string", "written"}, {"new_string", "ok"}});
  ASSERT_EQ(edited.status, JobStatus::success) << edited.output;
  EXPECT_EQ(runner.tree().read("wt/new/dir/out.txt"), "ok\n");
  ASSERT_EQ(runner.run("file_delete", {{"path", "new"}, {"recursive", true}}).status,
            JobStatus::success);
  EXPECT_FALSE(runner.tree().exists("wt/new"));
  EXPECT_EQ(workers_of(runner).size(), 1u);
}

// The worker sees only its own worktree, like a job: another worktree under
// the same root is neither readable nor listed.
TEST(WarmWorker, SeesOnlyItsOwnWorktree) {
  RunnerHarness runner;
  runner.tree().write("other/secret.txt", "secret\n");
  runner.tree().write("wt/a.txt", "a\n");
  const auto read = runner.run("read_file", {{"path", runner.tree().path("other/secret.txt")}});
  EXPECT_EQ(read.status, JobStatus::failed);
  EXPECT_EQ(read.output.find("secret\\n"), std::string::npos) << read.output;
  const auto grep = runner.run("grep", {{"pattern", "secret"}, {"path", "."}});
  EXPECT_EQ(grep.output.find("secret.txt"), std::string::npos) << grep.output;
  EXPECT_EQ(workers_of(runner).size(), 1u);
}

TEST(WarmWorker, ACallOverItsTimeoutKillsTheWorkerAndTheNextCallGetsANewOne) {
  RunnerHarness runner;
  for (int i = 0; i < 300; ++i)
    runner.tree().write("wt/t/f" + std::to_string(i) + ".txt", std::string(20000, 'y') + "\n");
  ASSERT_EQ(runner.run("read_file", {{"path", "t/f1.txt"}}).status, JobStatus::success);
  const auto before = workers_of(runner);
  ASSERT_EQ(before.size(), 1u);
  // Stop the worker so the call cannot finish before its deadline.
  ASSERT_EQ(::kill(before.front(), SIGSTOP), 0);
  const auto timed_out = runner.run("grep", {{"pattern", "zzz"}, {"path", "."}}, 300);
  EXPECT_EQ(timed_out.status, JobStatus::timeout) << timed_out.error.value_or("");
  EXPECT_NE(timed_out.error.value_or("").find("timeout of 300 ms"), std::string::npos)
      << timed_out.error.value_or("");
  // The result comes once the worker is reaped: killed, threads and all.
  EXPECT_EQ(::kill(before.front(), 0), -1) << "the stopped worker is gone";
  EXPECT_EQ(runner.run("read_file", {{"path", "t/f2.txt"}}).status, JobStatus::success);
  const auto after = workers_of(runner);
  ASSERT_EQ(after.size(), 1u);
  EXPECT_NE(after, before);
}

TEST(WarmWorker, ACancelledCallKillsItsWorker) {
  RunnerHarness runner;
  const auto before = warm_up(runner, "a.txt", "a\n");
  ASSERT_EQ(before.size(), 1u);
  ASSERT_EQ(::kill(before.front(), SIGSTOP), 0);
  runner.send(runner.job("c1", "read_file", {{"path", "a.txt"}}));
  ASSERT_TRUE(runner.receive_a<proto::JobAck>());
  runner.send(proto::Cancel{"c1"});
  const auto ack = runner.receive_a<proto::CancelAck>();
  ASSERT_TRUE(ack);
  EXPECT_TRUE(ack->found);
  const auto result = runner.receive_a<proto::JobResult>();
  ASSERT_TRUE(result);
  EXPECT_EQ(result->status, JobStatus::cancelled);
  EXPECT_TRUE(processes_with_after(worker_marker(runner), 5s).empty());
}

// A worker that dies during a read-only call: the call is retried once on a
// fresh worker. During a side-effecting call: a clear error, never a retry.
TEST(WarmWorker, AWorkerThatDiesDuringACallIsReplaced) {
  RunnerHarness runner;
  runner.tree().write("wt/a.txt", "a\n");
  ASSERT_EQ(runner.run("read_file", {{"path", "a.txt"}}).status, JobStatus::success);

  auto doomed = workers_of(runner);
  ASSERT_EQ(doomed.size(), 1u);
  ASSERT_EQ(::kill(doomed.front(), SIGSTOP), 0);
  runner.send(runner.job("r1", "read_file", {{"path", "a.txt"}}));
  ASSERT_TRUE(runner.receive_a<proto::JobAck>());
  ASSERT_EQ(::kill(doomed.front(), SIGKILL), 0);
  const auto retried = runner.receive_a<proto::JobResult>();
  ASSERT_TRUE(retried);
  EXPECT_EQ(retried->status, JobStatus::success) << retried->error.value_or("");
  EXPECT_NE(retried->output.find("     1|a"), std::string::npos);
  EXPECT_NE(runner.runner_stderr().find("retrying it once on a fresh worker"), std::string::npos);

  doomed = workers_of(runner);
  ASSERT_EQ(doomed.size(), 1u);
  ASSERT_EQ(::kill(doomed.front(), SIGSTOP), 0);
  runner.send(runner.job("w1", "write_file", {{"path", "b.txt"}, {"content", "b"}}));
  ASSERT_TRUE(runner.receive_a<proto::JobAck>());
  ASSERT_EQ(::kill(doomed.front(), SIGKILL), 0);
  const auto failed = runner.receive_a<proto::JobResult>();
  ASSERT_TRUE(failed);
  EXPECT_EQ(failed->status, JobStatus::error);
  EXPECT_NE(failed->error.value_or("").find("ended during write_file (killed by signal 9)"),
            std::string::npos)
      << failed->error.value_or("");
  EXPECT_NE(failed->error.value_or("").find("read the file again"), std::string::npos)
      << failed->error.value_or("");
  // And the lane goes on with a fresh worker.
  EXPECT_EQ(runner.run("read_file", {{"path", "a.txt"}}).status, JobStatus::success);
}

TEST(WarmWorker, IdleWorkersStopAndTheCapEvictsTheLeastRecentlyUsed) {
  {
    RunnerHarness runner(with_args({"--warm-worker-idle-ms", "200"}));
    runner.tree().write("wt/a.txt", "a\n");
    ASSERT_EQ(runner.run("read_file", {{"path", "a.txt"}}).status, JobStatus::success);
    EXPECT_TRUE(processes_with_after(worker_marker(runner), 10s).empty())
        << "an idle worker stops after --warm-worker-idle-ms";
    EXPECT_EQ(runner.run("read_file", {{"path", "a.txt"}}).status, JobStatus::success);
  }
  RunnerHarness runner(with_args({"--warm-workers", "1"}));
  runner.tree().write("wt/a.txt", "a\n");
  runner.tree().write("wt2/b.txt", "b\n");
  const std::string second = runner.tree().path("wt2");
  for (int round = 0; round < 3; ++round) {
    auto a = runner.job("a" + std::to_string(round), "read_file", {{"path", "a.txt"}});
    auto b = runner.job("b" + std::to_string(round), "read_file", {{"path", "b.txt"}});
    b.worktree = second;
    b.cwd = second;
    for (const auto& job : {a, b}) {
      runner.send(job);
      const auto result = runner.receive_a<proto::JobResult>();
      ASSERT_TRUE(result);
      EXPECT_EQ(result->status, JobStatus::success) << result->error.value_or("") << result->output;
      // An evicted worker is killed at once; its exit may take a moment.
      const auto deadline = std::chrono::steady_clock::now() + 5s;
      std::size_t live = 0;
      do {
        live =
            workers_of(runner).size() + processes_with("--serve --worktree " + second + " ").size();
      } while (live > 1 && std::chrono::steady_clock::now() < deadline);
      EXPECT_EQ(live, 1u) << "at most --warm-workers 1 worker at a time";
    }
  }
  // With a cap of 1 the first worktree's worker made room for the second's.
  EXPECT_TRUE(processes_with_after(worker_marker(runner), 5s).empty());
  EXPECT_EQ(processes_with("--serve --worktree " + second + " ").size(), 1u);
}

// A worktree folder replaced at the same path (removed and made again) is a
// new worktree: the worker that pinned the old one is not used for it.
TEST(WarmWorker, AReplacedWorktreeFolderGetsANewWorker) {
  RunnerHarness runner;
  const auto before = warm_up(runner, "f.txt", "old\n");
  ASSERT_EQ(before.size(), 1u);
  ASSERT_EQ(::rename(runner.worktree().c_str(), (runner.worktree() + ".old").c_str()), 0);
  runner.tree().write("wt/f.txt", "new\n");
  const auto result = runner.run("read_file", {{"path", "f.txt"}});
  ASSERT_EQ(result.status, JobStatus::success) << result.output << result.error.value_or("");
  EXPECT_EQ(json::parse(result.output)["content"], "     1|new\n");
  EXPECT_NE(workers_of(runner), before);
}

// A worker's read-only .git mount is taken when it starts: a .git that
// appears later (git init by a command) is not the worker's to see writable.
TEST(WarmWorker, AWorktreeWhoseGitAppearedGetsANewWorker) {
  RunnerHarness runner;
  const auto before = warm_up(runner, "f.txt", "f\n");
  ASSERT_EQ(before.size(), 1u);
  const auto made =
      runner.run("run_command_isolated", {{"command", "mkdir .git && echo x > .git/HEAD"}});
  ASSERT_EQ(made.status, JobStatus::success) << made.output;
  ASSERT_EQ(runner.run("read_file", {{"path", "f.txt"}}).status, JobStatus::success);
  const auto after = workers_of(runner);
  EXPECT_NE(after, before) << "the worker that started without .git was not used again";
  const auto write = runner.run("write_file", {{"path", ".git/HEAD"}, {"content", "y"}});
  EXPECT_NE(write.status, JobStatus::success);
  EXPECT_EQ(runner.tree().read("wt/.git/HEAD"), "x\n");
}

// The worker's own filter, as compiled for it: no exec and no new process,
// while threads (grep's tree walk) still start.
TEST(WarmWorker, ItsFilterRefusesExecAndNewProcessesButNotThreads) {
  auto program = runner::SeccompProgram::compile_no_new_processes();
  ASSERT_TRUE(program) << program.error().message;
  const pid_t child = ::fork();
  ASSERT_GE(child, 0);
  if (child == 0) {
    ::prctl(PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0);
    if (!program->install()) ::_exit(10);
    char* argv[] = {const_cast<char*>("/bin/true"), nullptr};
    ::execv("/bin/true", argv);
    if (errno != EPERM) ::_exit(11);
    if (::fork() >= 0 || errno != EPERM) ::_exit(12);
    if (::syscall(SYS_clone, SIGCHLD, 0, 0, 0, 0) >= 0 || errno != EPERM) ::_exit(13);
    bool ran = false;
    std::thread([&] { ran = true; }).join();
    ::_exit(ran ? 0 : 14);
  }
  int status = 0;
  ASSERT_EQ(::waitpid(child, &status, 0), child);
  ASSERT_TRUE(WIFEXITED(status));
  EXPECT_EQ(WEXITSTATUS(status), 0) << "10 install, 11 exec, 12 fork, 13 clone, 14 thread";
}

}  // namespace
}  // namespace loopr::test
