// The sandbox attack suite (SECURITY.md, classes 1-19 but 14, which needs
// web_fetch). Every test tries the attack from inside a real job and asserts
// that it failed and how: the errno the kernel gave, the exit status, the
// host file unchanged, no surviving process.
#include <gtest/gtest.h>
#include <sys/socket.h>
#include <sys/un.h>
#include <sys/wait.h>
#include <unistd.h>

#include "tests/runner/process_scan.hpp"
#include "tests/runner/runner_harness.hpp"

namespace loopr::test {
namespace {

using nlohmann::json;
using proto::JobStatus;

RunnerOptions net_lane() {
  RunnerOptions options;
  options.lane = "net";
  options.network = true;
  return options;
}

std::string text(const json& result) {
  return result.value("stdout", "") + result.value("stderr", "");
}

// 1. Writes outside the worktree.
TEST(Attack01WriteOutsideWorktree, SystemFilesAreReadOnly) {
  RunnerHarness runner;
  const auto out = runner.shell("echo pwned > /etc/loopr-attack");
  EXPECT_NE(out["exit_code"], 0);
  EXPECT_NE(text(out).find("Read-only file system"), std::string::npos) << text(out);
  EXPECT_NE(::access("/etc/loopr-attack", F_OK), 0);
}

TEST(Attack01WriteOutsideWorktree, HomeIsHiddenAndReadOnly) {
  RunnerHarness runner;
  const std::string home = std::getenv("HOME") ? std::getenv("HOME") : "/root";
  const auto out = runner.shell("ls -A " + home + " | wc -l; echo evil >> " + home + "/.bashrc");
  EXPECT_NE(out["exit_code"], 0);
  EXPECT_EQ(out["stdout"], "0\n") << "the home folder must look empty";
  EXPECT_NE(text(out).find("Read-only file system"), std::string::npos) << text(out);
}

TEST(Attack01WriteOutsideWorktree, AnotherWorktreeUnderTheSameRootIsNotWritable) {
  RunnerHarness runner;
  runner.tree().write("other-loop/notes.txt", "theirs\n");
  const auto out = runner.shell("echo mine > ../other-loop/notes.txt");
  EXPECT_NE(out["exit_code"], 0);
  // Read-only by mount in the job's namespace (Landlock would refuse it too,
  // except for roots under /tmp, which its /tmp rule covers).
  EXPECT_NE(text(out).find("Read-only file system"), std::string::npos) << text(out);
  EXPECT_EQ(runner.tree().read("other-loop/notes.txt"), "theirs\n");
}

// 2. ".." and absolute paths, symlinks out of the tree, magic links.
TEST(Attack02PathEscapes, ToolsRefuseEveryEscapingPath) {
  RunnerHarness runner;
  runner.tree().write("secret.txt", "outside\n");
  runner.tree().symlink("/etc", "wt/abs-link");
  runner.tree().symlink("../secret.txt", "wt/rel-link");
  runner.tree().symlink("/proc/self/root", "wt/magic");
  const std::vector<std::string> escapes = {"../secret.txt", runner.tree().path("secret.txt"),
                                            "/etc/passwd",   "abs-link/passwd",
                                            "rel-link",      "magic/etc/passwd"};
  for (const std::string& path : escapes) {
    const auto result = runner.run("read_file", {{"path", path}});
    EXPECT_EQ(result.status, JobStatus::failed) << path;
    EXPECT_EQ(json::parse(result.output)["error"]["code"], "path_outside_worktree") << path;
  }
}

// 3. A symlink swapped in for a directory while a tool runs.
TEST(Attack03SymlinkRace, SwappingADirectoryForALinkNeverRedirectsAWrite) {
  RunnerOptions options;
  options.slots = 2;
  RunnerHarness runner(options);
  runner.tree().write("target/file", "untouched\n");
  runner.tree().write("wt/sub/file", "inside\n");
  // Job A flips wt/sub between a real folder and a symlink to ../target.
  runner.send(
      runner.job("swapper", "run_command",
                 {{"command",
                   "ln -s ../target link; for i in $(seq 3000); do mv sub real && mv link sub && "
                   "mv sub link && mv real sub; done"}},
                 120'000));
  int refused = 0;
  for (int i = 0; i < 60; ++i) {
    const auto result = runner.run(
        "write_file", {{"path", "sub/file"}, {"content", "written " + std::to_string(i)}});
    if (result.status != JobStatus::success) {
      const auto code = json::parse(result.output)["error"]["code"];
      EXPECT_TRUE(code == "path_outside_worktree" || code == "not_found" || code == "not_directory")
          << result.output;
      ++refused;
    }
  }
  runner.receive_a<proto::JobResult>(std::chrono::seconds(120));
  EXPECT_EQ(runner.tree().read("target/file"), "untouched\n");
  RecordProperty("refused_writes", refused);
}

// 4. .git metadata cannot be changed, replaced or planted.
TEST(Attack04GitMetadata, GitFolderIsReadOnlyAndCannotBeReplaced) {
  RunnerHarness runner;
  runner.tree().write("wt/.git/config", "[core]\n\tbare = false\n");
  runner.tree().mkdir("wt/.git/hooks");
  const auto out = runner.shell(
      "printf '[core]\\n\\tfsmonitor = ./evil\\n' >> .git/config; echo r1=$?; "
      "echo '#!/bin/sh' > .git/hooks/post-commit; echo r2=$?; "
      "mv .git .git-old; echo r3=$?; rm -rf .git; echo r4=$?");
  const std::string stdout_text = out["stdout"];
  for (const char* step : {"r1=0", "r2=0", "r3=0", "r4=0"}) {
    EXPECT_EQ(stdout_text.find(step), std::string::npos) << step << " succeeded: " << text(out);
  }
  EXPECT_NE(text(out).find("Read-only file system"), std::string::npos) << text(out);
  EXPECT_EQ(runner.tree().read("wt/.git/config"), "[core]\n\tbare = false\n");
  EXPECT_FALSE(runner.tree().exists("wt/.git/hooks/post-commit"));
}

TEST(Attack04GitMetadata, FileToolsRefuseGitPaths) {
  RunnerHarness runner;
  runner.tree().write("wt/.git/config", "[core]\n");
  const auto result =
      runner.run("write_file", {{"path", ".git/config"}, {"content", "[core]\nfsmonitor=x\n"}});
  EXPECT_EQ(result.status, JobStatus::failed);
  EXPECT_EQ(json::parse(result.output)["error"]["code"], "protected_path");
  EXPECT_EQ(runner.tree().read("wt/.git/config"), "[core]\n");
}

// 5. Hard links to files outside the worktree.
TEST(Attack05HardLinks, CannotLinkFilesFromOutside) {
  RunnerHarness runner;
  runner.tree().write("outside.txt", "secret\n");
  const auto out =
      runner.shell("ln /etc/hostname h1; echo r1=$?; ln ../outside.txt h2; echo r2=$?");
  EXPECT_EQ(out["stdout"].get<std::string>().find("=0"), std::string::npos) << text(out);
  EXPECT_NE(text(out).find("Invalid cross-device link"), std::string::npos) << text(out);
  EXPECT_FALSE(runner.tree().exists("wt/h1"));
  EXPECT_FALSE(runner.tree().exists("wt/h2"));
}

// 6. /proc shows only the job's own processes.
TEST(Attack06Proc, HostProcessesAreNotVisible) {
  RunnerHarness runner;
  const auto out =
      runner.shell("ls /proc | grep -c '^[0-9]'; cat /proc/*/cmdline 2>/dev/null | tr '\\0' ' '");
  const std::string listing = out["stdout"];
  const int visible = std::stoi(listing);
  // The job's own PID 1 (a clone of the runner), loopr-tool, sh, ls/grep/cat.
  EXPECT_LE(visible, 6) << listing;
  EXPECT_EQ(listing.find("runner_test"), std::string::npos) << "a host process is visible";
  EXPECT_EQ(listing.find("--fd 3"), listing.rfind("--fd 3"))
      << "more than the job's own init is a runner: the host runner is visible";
}

TEST(Attack06Proc, ProcSelfExeAndRootStayInsideTheSandbox) {
  RunnerHarness runner;
  const auto out = runner.shell("ls /proc/1/root/home | wc -l; ls /proc/1/root/tmp");
  EXPECT_EQ(out["stdout"], "0\n") << text(out);  // the lane's view: home hidden, /tmp private
}

// 7. Inherited file descriptors.
TEST(Attack07FileDescriptors, AJobSeesOnlyStdinStdoutStderr) {
  RunnerHarness runner;
  EXPECT_EQ(runner.probe("open_fds"), "open_fds: 0,1,2");
}

// 8. ptrace, process_vm_writev, /proc/1/mem.
TEST(Attack08ProcessTampering, PtraceAndMemoryWritesAreRefused) {
  RunnerHarness runner;
  EXPECT_EQ(runner.probe("ptrace_attach"), "ptrace_attach: errno EPERM");
  EXPECT_EQ(runner.probe("process_vm_writev"), "process_vm_writev: errno EPERM");
  EXPECT_EQ(runner.probe("proc_1_mem_write"), "proc_1_mem_write: errno EROFS");
}

// 9. io_uring.
TEST(Attack09IoUring, SetupIsRefused) {
  RunnerHarness runner;
  EXPECT_EQ(runner.probe("io_uring_setup"), "io_uring_setup: errno EPERM");
}

// 10. TIOCSTI, also with high bits set in the request number.
TEST(Attack10TerminalInjection, TiocstiIsRefusedWhateverTheHighBits) {
  RunnerHarness runner;
  // Outside the sandbox these give ENOTTY (stdin is /dev/null): EPERM is seccomp.
  EXPECT_EQ(runner.probe("tiocsti"), "tiocsti: errno EPERM");
  EXPECT_EQ(runner.probe("tiocsti_high_bits"), "tiocsti_high_bits: errno EPERM");
  EXPECT_EQ(runner.probe("tioclinux"), "tioclinux: errno EPERM");
}

// 11. Kernel surface.
TEST(Attack11KernelSurface, DangerousSystemCallsAreRefused) {
  RunnerHarness runner;
  for (const std::string attack :
       {"keyctl", "add_key", "bpf", "userfaultfd", "perf_event_open", "mount", "umount2",
        "pivot_root", "setns", "unshare_user", "clone_newns", "open_by_handle_at"}) {
    EXPECT_EQ(runner.probe(attack), attack + ": errno EPERM");
  }
  // clone3's flags are out of seccomp's sight: it is refused whole, and libc
  // falls back to clone, whose flags are checked.
  EXPECT_EQ(runner.probe("clone3_newuser"), "clone3_newuser: errno ENOSYS");
}

// 12. Capabilities and no_new_privs.
TEST(Attack12Capabilities, AllCapabilitiesAreDroppedAndNoNewPrivsIsSet) {
  RunnerHarness runner;
  const auto out = runner.shell(
      "grep -E '^(CapInh|CapPrm|CapEff|CapBnd|CapAmb|NoNewPrivs|Seccomp):' "
      "/proc/self/status");
  const std::string status = out["stdout"];
  for (const char* line : {"CapInh:\t0000000000000000", "CapPrm:\t0000000000000000",
                           "CapEff:\t0000000000000000", "CapBnd:\t0000000000000000",
                           "CapAmb:\t0000000000000000", "NoNewPrivs:\t1", "Seccomp:\t2"}) {
    EXPECT_NE(status.find(line), std::string::npos) << line << " missing in\n" << status;
  }
}

// 13. No network in no-net.
TEST(Attack13NoNetwork, EveryNetworkSocketFamilyIsRefused) {
  RunnerHarness runner;
  for (const std::string attack :
       {"socket_inet", "socket_inet6", "socket_packet", "socket_netlink", "socket_vsock"}) {
    EXPECT_EQ(runner.probe(attack), attack + ": errno EPERM");
  }
  EXPECT_EQ(runner.probe("socket_unix"), "socket_unix: allowed");
}

TEST(Attack13NoNetwork, OnlyLoopbackExistsAndToolsSayNetworkIsOff) {
  RunnerHarness runner;
  const auto interfaces = runner.shell("tail -n +3 /proc/net/dev | cut -d: -f1 | tr -d ' '");
  EXPECT_EQ(interfaces["stdout"], "lo\n");
  const auto dns = runner.shell("getent hosts deb.debian.org");
  EXPECT_NE(dns["exit_code"], 0);
  const auto tcp = runner.shell("bash -c 'exec 3<>/dev/tcp/127.0.0.1/9 && echo connected'");
  EXPECT_NE(tcp["exit_code"], 0);
  EXPECT_EQ(tcp["stdout"], "");
  ASSERT_TRUE(tcp.contains("sandbox_note")) << tcp.dump();
  EXPECT_NE(tcp["sandbox_note"].get<std::string>().find("network is off in lane no-net"),
            std::string::npos);
}

// 15. The daemon's socket, D-Bus, docker.sock, abstract sockets.
TEST(Attack15Sockets, HiddenSocketPathsAreNotEvenReachable) {
  RunnerOptions options;
  TempTree runtime;  // stands for $XDG_RUNTIME_DIR/loopr
  options.extra_args = {"--hide", runtime.root()};
  RunnerHarness runner(options);
  const std::string socket_path = runtime.path("looprd.sock");
  const int listener = ::socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0);
  sockaddr_un address{};
  address.sun_family = AF_UNIX;
  socket_path.copy(address.sun_path, sizeof address.sun_path - 1);
  ASSERT_EQ(::bind(listener, reinterpret_cast<sockaddr*>(&address), sizeof address), 0);
  ASSERT_EQ(::listen(listener, 1), 0);
  EXPECT_EQ(runner.probe("connect_path " + socket_path), "connect_path: errno ENOENT");
  EXPECT_EQ(runner.probe("connect_path /run/dbus/system_bus_socket"), "connect_path: errno ENOENT");
  EXPECT_EQ(runner.probe("connect_path /var/run/docker.sock"), "connect_path: errno ENOENT");
  ::close(listener);
}

int listen_abstract(const std::string& name) {
  const int fd = ::socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0);
  sockaddr_un address{};
  address.sun_family = AF_UNIX;
  name.copy(address.sun_path + 1, sizeof address.sun_path - 2);
  const auto length = static_cast<socklen_t>(offsetof(sockaddr_un, sun_path) + 1 + name.size());
  if (::bind(fd, reinterpret_cast<sockaddr*>(&address), length) != 0 || ::listen(fd, 1) != 0) {
    ::close(fd);
    return -1;
  }
  return fd;
}

TEST(Attack15Sockets, AbstractSocketsOfTheHostAreOutOfReachInEveryLane) {
  const std::string name = "loopr-attack-" + std::to_string(::getpid());
  const int listener = listen_abstract(name);
  ASSERT_GE(listener, 0);
  {
    RunnerHarness no_net;  // another network namespace: the name does not exist there
    EXPECT_EQ(no_net.probe("connect_abstract " + name), "connect_abstract: errno ECONNREFUSED");
  }
  {
    RunnerHarness net(net_lane());  // same network namespace: Landlock scoping refuses
    EXPECT_EQ(net.probe("connect_abstract " + name), "connect_abstract: errno EPERM");
  }
  ::close(listener);
}

// 16. Fork bomb, memory bomb, disk fill.
TEST(Attack16Resources, AForkBombEndsWithItsJobAndTheLaneKeepsWorking) {
  RunnerOptions options;
  options.extra_args = {"--max-processes", "200"};
  RunnerHarness runner(options);
  const auto bomb =
      runner.run("run_command",
                 {{"command", "b() { b | b & }; b; exec sleep 1000.7777"}, {"timeout_ms", 600000}},
                 /*timeout_ms=*/3000);
  EXPECT_TRUE(bomb.status == JobStatus::timeout || bomb.status == JobStatus::success)
      << proto::to_string(bomb.status);
  EXPECT_TRUE(processes_with("sleep 1000.7777").empty());
  EXPECT_EQ(runner.shell("echo still here")["stdout"], "still here\n");
}

TEST(Attack16Resources, AMemoryBombHitsTheAddressSpaceLimit) {
  RunnerOptions options;
  options.extra_args = {"--memory-mb", "256"};
  RunnerHarness runner(options);
  const auto out = runner.shell("awk 'BEGIN { s = \"x\"; while (1) s = s s }'");
  EXPECT_NE(out["exit_code"], 0);
  EXPECT_NE(text(out).find("out of memory"), std::string::npos) << text(out);
}

TEST(Attack16Resources, FillingTmpStopsAtItsCap) {
  RunnerOptions options;
  options.extra_args = {"--tmp-size-mb", "16"};
  RunnerHarness runner(options);
  const auto out = runner.shell("dd if=/dev/zero of=/tmp/fill bs=1M count=64");
  EXPECT_NE(out["exit_code"], 0);
  EXPECT_NE(text(out).find("No space left on device"), std::string::npos) << text(out);
}

TEST(Attack16Resources, FillingTheWorktreeStopsAtTheFileSizeLimit) {
  RunnerOptions options;
  options.extra_args = {"--max-file-mb", "8"};
  RunnerHarness runner(options);
  const auto out = runner.shell("dd if=/dev/zero of=big bs=1M count=64; echo status=$?");
  EXPECT_NE(text(out).find("File size limit exceeded"), std::string::npos) << text(out);
  EXPECT_LE(std::filesystem::file_size(runner.worktree() + "/big"), 8u << 20);
}

// 17. Output floods.
TEST(Attack17OutputFlood, YesIsCutAtTheCap) {
  RunnerHarness runner;
  const auto result = runner.run("run_command", {{"command", "yes | head -c 50000000"}}, 60'000,
                                 /*max_output=*/20'000);
  ASSERT_EQ(result.status, JobStatus::success);
  EXPECT_LE(result.output.size(), 20'000u + 200u);
  const auto out = json::parse(result.output);
  EXPECT_EQ(out["truncated"], true);
  EXPECT_NE(out["stdout"].get<std::string>().find("[output truncated: 50000000 bytes total"),
            std::string::npos);
}

TEST(Attack17OutputFlood, BinaryGarbageAndOneEndlessLineAreCut) {
  RunnerHarness runner;
  for (const char* command :
       {"head -c 20000000 /dev/urandom", "yes | tr -d '\\n' | head -c 30000000"}) {
    const auto result = runner.run("run_command", {{"command", command}}, 60'000, 20'000);
    EXPECT_EQ(result.status, JobStatus::success) << command;
    EXPECT_LE(result.output.size() + result.stderr_bytes.size(), 60'000u) << command;
  }
}

// 18. Processes that try to outlive their job.
TEST(Attack18Lifetime, SetsidNohupDoubleForkAndStoppedChildrenDieWithTheJob) {
  RunnerHarness runner;
  const auto result =
      runner.run("run_command",
                 {{"command",
                   "setsid sleep 1000.8881 & nohup sleep 1000.8882 >/dev/null 2>&1 & "
                   "(sleep 1000.8883 &) ; sleep 1000.8884 & kill -STOP $! ; exec sleep 1000.8885"},
                  {"timeout_ms", 600000}},
                 /*timeout_ms=*/1500);
  EXPECT_EQ(result.status, JobStatus::timeout);
  for (const char* marker : {"sleep 1000.8881", "sleep 1000.8882", "sleep 1000.8883",
                             "sleep 1000.8884", "sleep 1000.8885"}) {
    EXPECT_TRUE(processes_with(marker).empty()) << marker << " survived";
  }
}

TEST(Attack18Lifetime, BackgroundChildrenOfAFinishedJobDieToo) {
  RunnerHarness runner;
  const auto out = runner.shell("setsid sleep 1000.8886 & echo left behind");
  EXPECT_EQ(out["stdout"], "left behind\n");
  EXPECT_TRUE(processes_with("sleep 1000.8886").empty());
}

// 19. Fail closed.
TEST(Attack19FailClosed, ARunnerThatCannotBuildItsSandboxRunsNoJob) {
  RunnerOptions options;
  options.handshake = false;
  options.extra_args = {"--root", "/nonexistent-loopr-root"};
  RunnerHarness runner(options);
  const int status = runner.wait_exit();
  ASSERT_TRUE(WIFEXITED(status));
  EXPECT_EQ(WEXITSTATUS(status), 3);
  const std::string err = runner.runner_stderr();
  EXPECT_NE(err.find("sandbox step 'mount namespace' failed"), std::string::npos) << err;
}

TEST(Attack19FailClosed, UserNamespacesRefusedMeansNoSandboxAndNoJob) {
  // bwrap's --disable-userns forbids creating user namespaces inside it, the
  // way a locked-down kernel would.
  if (::access("/usr/bin/bwrap", X_OK) != 0) GTEST_FAIL() << "bwrap is required (install-deps)";
  TempTree root;
  const std::string command = "/usr/bin/bwrap --dev-bind / / --unshare-user --disable-userns " +
                              bin_path("loopr-runner") + " --lane no-net --socket " +
                              root.path("s") + " --tool " + bin_path("loopr-tool") + " --root " +
                              root.root() + " 2>&1";
  FILE* pipe = ::popen(command.c_str(), "r");
  ASSERT_NE(pipe, nullptr);
  std::string output;
  char buffer[4096];
  while (std::fgets(buffer, sizeof buffer, pipe))
    output += buffer;
  const int status = ::pclose(pipe);
  ASSERT_TRUE(WIFEXITED(status));
  EXPECT_EQ(WEXITSTATUS(status), 3) << output;
  EXPECT_NE(output.find("sandbox step 'user namespace' failed"), std::string::npos) << output;
}

TEST(Attack19FailClosed, AJobWhoseSandboxStepFailsNeverRuns) {
  RunnerHarness runner;
  // A worktree whose .git is a symlink cannot get its read-only .git bind.
  runner.tree().mkdir("elsewhere");
  runner.tree().symlink("../elsewhere", "wt/.git");
  const auto result = runner.run("run_command", {{"command", "touch ran-anyway"}});
  EXPECT_EQ(result.status, JobStatus::error);
  ASSERT_TRUE(result.error);
  EXPECT_NE(result.error->find("sandbox step 'mount namespace' failed"), std::string::npos)
      << *result.error;
  EXPECT_FALSE(runner.tree().exists("wt/ran-anyway"));
}

}  // namespace
}  // namespace loopr::test
