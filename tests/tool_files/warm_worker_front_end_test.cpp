// The warm worker as a process (`loopr-tool --serve --worktree DIR`): many
// calls on one worker carry no state between them, a bad call does not end
// it, a large call goes through, EOF ends it cleanly, and --filter-fd installs
// the seccomp program it is handed. The tool suites themselves run through
// the worker as well (worker.* tests, tests/support/tool_front_end.hpp).
#include <gtest/gtest.h>
#include <linux/audit.h>
#include <linux/filter.h>
#include <linux/seccomp.h>
#include <sys/mman.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cerrno>
#include <cstddef>
#include <cstdint>
#include <cstring>
#include <fstream>
#include <string>

#include "loopr-tool/content_hash.hpp"
#include "tests/support/temp_tree.hpp"
#include "tests/support/tool_front_end.hpp"

namespace loopr::test {
namespace {

using nlohmann::json;

// One call's result, parsed; fails the test if the link broke.
Result<json> call(WorkerProcess& worker, std::string_view tool, std::string_view args_json) {
  auto output = worker.call(tool, args_json);
  if (!output) {
    ADD_FAILURE() << output.error().message;
    return output.error();
  }
  return tool_result_from_output(*output);
}

std::string content_of(const Result<json>& result) {
  if (!result) return "error: " + result.error().code;
  return (*result)["content"];
}

// The value of a "Name:\tN" line of /proc/PID/status, -1 if there is none.
long status_field(pid_t pid, const std::string& name) {
  std::ifstream status("/proc/" + std::to_string(pid) + "/status");
  std::string line;
  while (std::getline(status, line)) {
    if (line.starts_with(name + ":")) return std::stol(line.substr(name.size() + 1));
  }
  return -1;
}

TEST(WarmWorker, ManyCallsShareNoStateAndSeeTheDiskAfresh) {
  TempTree tree;
  tree.write("a.txt", "first\n");
  WorkerProcess worker(tree.root());
  auto ready = worker.ready();
  ASSERT_TRUE(ready.ok()) << ready.error().message;
  EXPECT_FALSE(ready->no_process_filter);

  EXPECT_EQ(content_of(call(worker, "read_file", R"({"path":"a.txt"})")), "     1|first\n");
  tree.write("a.txt", "changed behind the worker's back\n");
  const auto fresh = call(worker, "read_file", R"({"path":"a.txt"})");
  EXPECT_EQ(content_of(fresh), "     1|changed behind the worker's back\n");
  ASSERT_TRUE(fresh.ok());
  EXPECT_EQ((*fresh)["content_hash"], tool::content_hash("changed behind the worker's back\n"));
  ASSERT_EQ(::unlink(tree.path("a.txt").c_str()), 0);
  const auto gone = call(worker, "read_file", R"({"path":"a.txt"})");
  ASSERT_FALSE(gone.ok());
  EXPECT_EQ(gone.error().code, errc::not_found);

  // Many calls of every file tool on the one worker, each seeing the last
  // one's effect on disk and nothing else.
  for (int i = 0; i < 200; ++i) {
    const std::string name = "f" + std::to_string(i % 7) + ".txt";
    const std::string text = "round " + std::to_string(i) + "\n";
    ASSERT_TRUE(call(worker, "write_file", json{{"path", name}, {"content", text}}.dump()).ok());
    EXPECT_EQ(content_of(call(worker, "read_file", json{{"path", name}}.dump())), "     1|" + text);
    ASSERT_TRUE(call(worker, "edit_file",
                     json{{"path", name}, {"old_string", "round"}, {"new_string", "lap"}}.dump())
                    .ok());
    EXPECT_EQ(tree.read(name), "lap " + std::to_string(i) + "\n");
  }
  const auto listing = call(worker, "list_directory", "{}");
  ASSERT_TRUE(listing.ok());
  EXPECT_EQ((*listing)["entries"].size(), 7u);
  const auto found = call(worker, "grep", R"({"pattern":"lap 199","output_mode":"files"})");
  ASSERT_TRUE(found.ok());
  EXPECT_EQ((*found)["files"], (json{"f3.txt"}));
  ASSERT_TRUE(call(worker, "file_delete", R"({"path":"f3.txt"})").ok());
  const auto after = call(worker, "glob", R"({"pattern":"*.txt"})");
  ASSERT_TRUE(after.ok());
  EXPECT_EQ((*after)["count"], 6);
  EXPECT_EQ(WEXITSTATUS(worker.finish()), 0);
}

TEST(WarmWorker, InvalidJsonArgumentsAreAToolErrorAndTheNextCallWorks) {
  TempTree tree;
  tree.write("a.txt", "alpha\n");
  WorkerProcess worker(tree.root());
  const std::string_view broken = "{\"path\": ";
  const auto reply = worker.call("read_file", broken);
  ASSERT_TRUE(reply.ok()) << reply.error().message;
  EXPECT_EQ(reply->exit_code, 1);
  // Byte for byte what the process front end prints for the same input.
  const ToolRun run = run_loopr_tool("read_file", tree.root(), broken);
  EXPECT_EQ(reply->exit_code, run.exit_code);
  EXPECT_EQ(reply->stdout_text, run.stdout_text);
  const auto error = tool_result_from_output(*reply);
  ASSERT_FALSE(error.ok());
  EXPECT_EQ(error.error().code, errc::invalid_arguments);
  EXPECT_NE(error.error().message.find("not valid JSON"), std::string::npos);

  EXPECT_EQ(content_of(call(worker, "read_file", R"({"path":"a.txt"})")), "     1|alpha\n");
  // Empty arguments mean {} on both front ends.
  const auto empty = worker.call("list_directory", "");
  ASSERT_TRUE(empty.ok());
  EXPECT_EQ(empty->exit_code, 0);
  EXPECT_EQ(empty->stdout_text,
            run_loopr_tool("list_directory", tree.root(), std::string_view()).stdout_text);
  EXPECT_EQ(WEXITSTATUS(worker.finish()), 0);
}

TEST(WarmWorker, AnUnknownToolIsAUsageErrorAndTheWorkerCarriesOn) {
  TempTree tree;
  tree.write("a.txt", "alpha\n");
  WorkerProcess worker(tree.root());
  const auto reply = worker.call("rm_rf", "{}");
  ASSERT_TRUE(reply.ok()) << reply.error().message;
  EXPECT_EQ(reply->exit_code, 2);
  const auto error = tool_result_from_output(*reply);
  ASSERT_FALSE(error.ok());
  EXPECT_EQ(error.error().code, errc::invalid_arguments);
  EXPECT_NE(error.error().message.find("unknown tool 'rm_rf'"), std::string::npos);
  EXPECT_NE(error.error().hint.find("read_file"), std::string::npos) << error.error().hint;
  EXPECT_EQ(content_of(call(worker, "read_file", R"({"path":"a.txt"})")), "     1|alpha\n");
  EXPECT_EQ(WEXITSTATUS(worker.finish()), 0);
}

TEST(WarmWorker, ATenMebibyteWriteGoesThrough) {
  TempTree tree;
  WorkerProcess worker(tree.root());
  std::string content;
  content.reserve(10u << 20);
  for (std::size_t i = 0; content.size() < (10u << 20); ++i) {
    content += "line " + std::to_string(i) + " of a large file\n";
  }
  content.resize(10u << 20);
  const auto written =
      call(worker, "write_file", json{{"path", "big.txt"}, {"content", content}}.dump());
  ASSERT_TRUE(written.ok()) << written.error().message;
  EXPECT_EQ((*written)["bytes_written"], 10u << 20);
  EXPECT_EQ((*written)["content_hash"], tool::content_hash(content));
  EXPECT_TRUE(tree.read("big.txt") == content);
  // And the worker still answers afterwards.
  const auto page = call(worker, "read_file", R"({"path":"big.txt","limit":1})");
  EXPECT_EQ(content_of(page), "     1|line 0 of a large file\n");
  EXPECT_EQ(WEXITSTATUS(worker.finish()), 0);
}

TEST(WarmWorker, EofOnItsInputEndsItWithStatusZero) {
  TempTree tree;
  {
    WorkerProcess idle(tree.root());
    ASSERT_TRUE(idle.ready().ok());
    const int status = idle.finish();
    ASSERT_TRUE(WIFEXITED(status)) << status;
    EXPECT_EQ(WEXITSTATUS(status), 0);
  }
  WorkerProcess worker(tree.root());
  ASSERT_TRUE(call(worker, "list_directory", "{}").ok());
  const int status = worker.finish();
  ASSERT_TRUE(WIFEXITED(status)) << status;
  EXPECT_EQ(WEXITSTATUS(status), 0);
}

#if defined(__x86_64__)
constexpr std::uint32_t kAuditArch = AUDIT_ARCH_X86_64;
#elif defined(__aarch64__)
constexpr std::uint32_t kAuditArch = AUDIT_ARCH_AARCH64;
#endif

// A memfd holding a tiny seccomp program: execve and execveat fail with
// EPERM, everything else is allowed. The caller owns the fd.
int deny_exec_filter() {
  const sock_filter program[] = {
      BPF_STMT(BPF_LD | BPF_W | BPF_ABS, offsetof(seccomp_data, arch)),
      BPF_JUMP(BPF_JMP | BPF_JEQ | BPF_K, kAuditArch, 1, 0),
      BPF_STMT(BPF_RET | BPF_K, SECCOMP_RET_KILL_PROCESS),
      BPF_STMT(BPF_LD | BPF_W | BPF_ABS, offsetof(seccomp_data, nr)),
      BPF_JUMP(BPF_JMP | BPF_JEQ | BPF_K, SYS_execve, 1, 0),
      BPF_JUMP(BPF_JMP | BPF_JEQ | BPF_K, SYS_execveat, 0, 1),
      BPF_STMT(BPF_RET | BPF_K, SECCOMP_RET_ERRNO | EPERM),
      BPF_STMT(BPF_RET | BPF_K, SECCOMP_RET_ALLOW),
  };
  const int fd = static_cast<int>(::syscall(SYS_memfd_create, "deny-exec", MFD_CLOEXEC));
  if (fd < 0) return -1;
  if (::write(fd, program, sizeof program) != static_cast<ssize_t>(sizeof program)) {
    ::close(fd);
    return -1;
  }
  return fd;
}

TEST(WarmWorker, AFilterOnFilterFdIsInstalledBeforeTheFirstCall) {
  TempTree tree;
  tree.write("a.txt", "alpha\n");
  const int filter = deny_exec_filter();
  ASSERT_GE(filter, 0) << std::strerror(errno);
  WorkerProcess worker(tree.root(), filter);
  ::close(filter);
  auto ready = worker.ready();
  ASSERT_TRUE(ready.ok()) << ready.error().message;
  EXPECT_TRUE(ready->no_process_filter);
  // One filter more than the test process has (a container may add its own).
  const long own = status_field(::getpid(), "Seccomp_filters");
  if (own < 0) GTEST_SKIP() << "this kernel has no Seccomp_filters in /proc/PID/status (< 5.9)";
  EXPECT_GE(status_field(worker.pid(), "Seccomp_filters"), 1);
  EXPECT_EQ(status_field(worker.pid(), "Seccomp_filters"), own + 1);
  EXPECT_EQ(status_field(worker.pid(), "Seccomp"), 2);  // SECCOMP_MODE_FILTER
  EXPECT_EQ(status_field(worker.pid(), "NoNewPrivs"), 1);
  // The file tools work under it.
  EXPECT_EQ(content_of(call(worker, "read_file", R"({"path":"a.txt"})")), "     1|alpha\n");
  EXPECT_EQ(WEXITSTATUS(worker.finish()), 0);
}

TEST(WarmWorker, AFilterThatIsNotABpfProgramEndsTheWorkerBeforeAnyCall) {
  TempTree tree;
  const int fd = static_cast<int>(::syscall(SYS_memfd_create, "not-bpf", MFD_CLOEXEC));
  ASSERT_GE(fd, 0);
  ASSERT_EQ(::write(fd, "12345", 5), 5);
  WorkerProcess worker(tree.root(), fd);
  ::close(fd);
  EXPECT_FALSE(worker.ready().ok());
  const int status = worker.finish();
  ASSERT_TRUE(WIFEXITED(status)) << status;
  EXPECT_EQ(WEXITSTATUS(status), 3);
}

}  // namespace
}  // namespace loopr::test
