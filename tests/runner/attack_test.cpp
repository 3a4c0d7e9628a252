// The sandbox attack suite: every attack class of SECURITY.md (1-19) tried
// from inside a real job of a real loopr-runner, asserting that it failed and
// how (the errno the kernel gave, the exit status, the host file unchanged,
// no surviving process). The same binary runs as root and as an ordinary
// user (scripts/run-unprivileged-tests.sh). Test suites are named after the
// class (Attack01... to Attack19...); tests/runner/README.md maps every class
// to its tests and to the failure each one asserts, and says what is not
// covered yet (class 4's daemon side).
#include <fcntl.h>
#include <gtest/gtest.h>
#include <netinet/in.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/un.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <sstream>

#include "runner/user_namespace.hpp"
#include "tests/runner/process_scan.hpp"
#include "tests/runner/runner_harness.hpp"
#include "tests/support/http_test_server.hpp"

namespace loopr::test {
namespace {

using nlohmann::json;
using proto::JobStatus;

RunnerOptions net_lane() {
  return lane_options("net");
}

std::string text(const json& result) {
  return result.value("stdout", "") + result.value("stderr", "");
}

std::string host_file(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  std::ostringstream buffer;
  buffer << in.rdbuf();
  return buffer.str();
}

// A temporary folder outside /tmp (which jobs never see: it is private to
// the lane), so hiding a path is what keeps it from a job, not /tmp. /var/tmp
// is writable by every user, so this works unprivileged too.
class OutsideTmpFolder {
 public:
  OutsideTmpFolder() {
    std::string pattern = "/var/tmp/loopr-attack-XXXXXX";
    if (::mkdtemp(pattern.data()) == nullptr) throw std::runtime_error("mkdtemp in /var/tmp");
    path_ = pattern;
    ::chmod(path_.c_str(), 0755);
  }
  ~OutsideTmpFolder() {
    std::error_code ignored;
    std::filesystem::remove_all(path_, ignored);
  }
  const std::string& path() const { return path_; }
  void write(const std::string& name, const std::string& content) const {
    std::ofstream(path_ + "/" + name, std::ios::binary) << content;
  }

 private:
  std::string path_;
};

// 1. Writes outside the worktree.
TEST(Attack01WriteOutsideWorktree, TheHostIsReadOnly) {
  // A file the job's own user owns, outside /tmp: only the mount stops it.
  // (As root, jobs are the host's uid 65534: class 24.)
  OutsideTmpFolder folder;
  folder.write("own.txt", "original\n");
  if (::getuid() == 0) {
    ASSERT_EQ(::chown((folder.path() + "/own.txt").c_str(), runner::kJobHostIdAsRoot,
                      runner::kJobHostIdAsRoot),
              0);
  }
  RunnerHarness runner;
  const auto out = runner.shell("echo pwned > /etc/loopr-attack; echo r1=$?; echo pwned >> " +
                                folder.path() + "/own.txt; echo r2=$?");
  EXPECT_NE(out["stdout"].get<std::string>().find("r1=2"), std::string::npos) << text(out);
  EXPECT_NE(out["stdout"].get<std::string>().find("r2=2"), std::string::npos) << text(out);
  EXPECT_NE(text(out).find("/etc/loopr-attack: Read-only file system"), std::string::npos)
      << text(out);
  EXPECT_NE(text(out).find("own.txt: Read-only file system"), std::string::npos) << text(out);
  EXPECT_NE(::access("/etc/loopr-attack", F_OK), 0);
  EXPECT_EQ(host_file(folder.path() + "/own.txt"), "original\n");
}

TEST(Attack01WriteOutsideWorktree, HomeFoldersAreEmptyAndReadOnly) {
  RunnerHarness runner;
  const std::string bashrc_before = host_file("/root/.bashrc");
  const auto out = runner.shell(
      "find /root /home -mindepth 1 | wc -l; echo evil >> /root/.bashrc; echo r1=$?; "
      "touch /home/planted; echo r2=$?");
  const std::string stdout_text = out["stdout"];
  EXPECT_EQ(stdout_text.rfind("0\n", 0), 0u) << "home folders must look empty: " << text(out);
  EXPECT_NE(stdout_text.find("r1=2"), std::string::npos) << text(out);
  EXPECT_NE(stdout_text.find("r2=1"), std::string::npos) << text(out);
  EXPECT_NE(text(out).find("/root/.bashrc: Read-only file system"), std::string::npos) << text(out);
  EXPECT_NE(text(out).find("'/home/planted': Read-only file system"), std::string::npos)
      << text(out);
  EXPECT_EQ(host_file("/root/.bashrc"), bashrc_before);
  EXPECT_NE(::access("/home/planted", F_OK), 0);
}

TEST(Attack01WriteOutsideWorktree, TheUsersHomeIsHiddenWhereverItIs) {
  OutsideTmpFolder home;
  home.write(".bashrc", "original\n");
  OutsideTmpFolder control;  // not the home: visible, read-only
  control.write("visible.txt", "seen\n");
  RunnerOptions options;
  options.env["HOME"] = home.path();
  RunnerHarness runner(options);
  const auto out = runner.shell("ls -A " + home.path() + " | wc -l; cat " + control.path() +
                                "/visible.txt; echo evil >> " + home.path() + "/.bashrc");
  EXPECT_NE(out["exit_code"], 0);
  EXPECT_EQ(out["stdout"], "0\nseen\n") << text(out);
  EXPECT_NE(text(out).find(".bashrc: Read-only file system"), std::string::npos) << text(out);
  EXPECT_EQ(host_file(home.path() + "/.bashrc"), "original\n");
}

TEST(Attack01WriteOutsideWorktree, AnotherWorktreeUnderTheSameRootIsNotWritable) {
  RunnerHarness runner;
  runner.tree().write("other-loop/notes.txt", "theirs\n");
  const auto out =
      runner.shell("echo mine > ../other-loop/notes.txt; echo r1=$?; touch ../planted; echo r2=$?");
  EXPECT_NE(out["stdout"].get<std::string>().find("r1=2"), std::string::npos) << text(out);
  EXPECT_NE(out["stdout"].get<std::string>().find("r2=1"), std::string::npos) << text(out);
  // The other worktree is not there at all in the job's view (class 23);
  // the root around the job's worktree is an empty read-only tmpfs.
  EXPECT_NE(text(out).find("cannot create ../other-loop/notes.txt: Directory nonexistent"),
            std::string::npos)
      << text(out);
  EXPECT_NE(text(out).find("'../planted': Read-only file system"), std::string::npos) << text(out);
  EXPECT_EQ(runner.tree().read("other-loop/notes.txt"), "theirs\n");
  EXPECT_FALSE(runner.tree().exists("planted"));
}

// 2. ".." and absolute paths, symlinks out of the tree, magic links.
TEST(Attack02PathEscapes, ToolsRefuseEveryEscapingPathForReading) {
  RunnerHarness runner;
  runner.tree().write("secret.txt", "outside\n");
  runner.tree().symlink("/etc", "wt/abs-link");
  runner.tree().symlink("../secret.txt", "wt/rel-link");
  runner.tree().symlink("/proc/self/root", "wt/magic");
  runner.tree().mkdir("wt/sub");
  const std::vector<std::string> escapes = {"../secret.txt",    runner.tree().path("secret.txt"),
                                            "/etc/passwd",      "sub/../../secret.txt",
                                            "abs-link/passwd",  "rel-link",
                                            "magic/etc/passwd", "/proc/self/root/etc/passwd"};
  for (const std::string& path : escapes) {
    const auto result = runner.run("read_file", {{"path", path}});
    EXPECT_EQ(result.status, JobStatus::failed) << path;
    EXPECT_EQ(result.exit_code, 1) << path;
    EXPECT_EQ(json::parse(result.output)["error"]["code"], "path_outside_worktree") << path;
  }
}

TEST(Attack02PathEscapes, ToolsRefuseEveryEscapingPathForWriting) {
  RunnerHarness runner;
  runner.tree().mkdir("outside");
  runner.tree().symlink("../outside", "wt/dir-link");
  runner.tree().symlink("../outside/new.txt", "wt/file-link");
  // Tools never write through a symlink, even one that stays inside.
  const std::vector<std::pair<std::string, std::string>> escapes = {
      {"../outside/new.txt", "path_outside_worktree"},
      {runner.tree().path("outside/new.txt"), "path_outside_worktree"},
      {"dir-link/new.txt", "path_outside_worktree"},
      {"file-link", "invalid_arguments"}};
  for (const auto& [path, code] : escapes) {
    const auto result = runner.run("write_file", {{"path", path}, {"content", "planted\n"}});
    EXPECT_EQ(result.status, JobStatus::failed) << path;
    EXPECT_EQ(json::parse(result.output)["error"]["code"], code) << path;
  }
  EXPECT_FALSE(runner.tree().exists("outside/new.txt"));
  EXPECT_TRUE(runner.tree().exists("wt/file-link"));
}

// 3. A symlink swapped in for a directory while a tool runs.
TEST(Attack03SymlinkRace, SwappingADirectoryForALinkNeverRedirectsAWrite) {
  RunnerOptions options;
  options.slots = 2;
  RunnerHarness runner(options);
  runner.tree().write("target/file", "untouched\n");
  runner.tree().write("wt/sub/file", "inside\n");
  // Job A flips wt/sub between a real folder and a symlink to ../target
  // until it is cancelled.
  runner.send(runner.job("swapper", "run_command",
                         {{"command",
                           "ln -s ../target link; while :; do mv sub real && mv link sub && "
                           "mv sub link && mv real sub; done"},
                          {"timeout_ms", 600'000}},
                         600'000));
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
  runner.send(proto::Cancel{"swapper"});
  const auto swapper = runner.receive_a<proto::JobResult>();
  ASSERT_TRUE(swapper);
  EXPECT_EQ(swapper->job_id, "swapper");
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
  EXPECT_NE(text(out).find(".git/config: Read-only file system"), std::string::npos) << text(out);
  // rename of a mount point
  EXPECT_NE(text(out).find("Device or resource busy"), std::string::npos) << text(out);
  EXPECT_EQ(runner.tree().read("wt/.git/config"), "[core]\n\tbare = false\n");
  EXPECT_FALSE(runner.tree().exists("wt/.git/hooks/post-commit"));
  EXPECT_FALSE(runner.tree().exists("wt/.git-old"));
}

TEST(Attack04GitMetadata, AGitFileOfALinkedWorktreeAndWhatItPointsToAreReadOnly) {
  RunnerHarness runner;
  // `git worktree add` leaves a .git file naming the main repository's
  // per-worktree folder, which lies outside the worktree.
  runner.tree().write("repo/.git/worktrees/wt/config.worktree", "[core]\n");
  runner.tree().mkdir("repo/.git/hooks");
  const std::string gitdir = runner.tree().path("repo/.git/worktrees/wt");
  runner.tree().write("wt/.git", "gitdir: " + gitdir + "\n");
  // ...and names the worktree's .git back, which is what lets the runner
  // show the job that repository's git folder (read-only) and nothing else
  // of the root (class 23).
  runner.tree().write("repo/.git/worktrees/wt/gitdir", runner.worktree() + "/.git\n");
  runner.tree().write("repo/.git/worktrees/wt/commondir", "../..\n");
  const auto out = runner.shell(
      "echo 'gitdir: /tmp/evil' > .git; echo r1=$?; mv .git moved; echo r2=$?; "
      "echo '[core] fsmonitor = x' >> " +
      gitdir +
      "/config.worktree; echo r3=$?; "
      "echo '#!/bin/sh' > " +
      runner.tree().path("repo/.git/hooks/post-commit") + "; echo r4=$?");
  const std::string stdout_text = out["stdout"];
  for (const char* step : {"r1=0", "r2=0", "r3=0", "r4=0"}) {
    EXPECT_EQ(stdout_text.find(step), std::string::npos) << step << " succeeded: " << text(out);
  }
  EXPECT_NE(text(out).find(".git: Read-only file system"), std::string::npos) << text(out);
  EXPECT_NE(text(out).find("config.worktree: Read-only file system"), std::string::npos)
      << text(out);
  EXPECT_EQ(runner.tree().read("wt/.git"), "gitdir: " + gitdir + "\n");
  EXPECT_EQ(runner.tree().read("repo/.git/worktrees/wt/config.worktree"), "[core]\n");
  EXPECT_FALSE(runner.tree().exists("repo/.git/hooks/post-commit"));
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
  // A configured read path inside a hidden home: visible, on another mount.
  OutsideTmpFolder home;
  std::filesystem::create_directory(home.path() + "/notes");
  home.write("notes/outside.txt", "readable\n");
  RunnerOptions options;
  options.env["HOME"] = home.path();
  options.extra_args = {"--read-path", home.path() + "/notes"};
  RunnerHarness runner(options);
  runner.tree().write("outside.txt", "secret\n");
  runner.tree().write("wt/.git/config", "[core]\n");
  const auto out = runner.shell(
      "ln /etc/hostname h1; echo r1=$?; ln ../outside.txt h2; echo r2=$?; "
      "echo x > /tmp/t; ln /tmp/t h3; echo r3=$?; ln .git/config h4; echo r4=$?; ln " +
      home.path() + "/notes/outside.txt h5; echo r5=$?");
  EXPECT_EQ(out["stdout"].get<std::string>().find("=0"), std::string::npos) << text(out);
  for (const std::string& link : std::vector<std::string>{
           "'h1' => '/etc/hostname'", "'h3' => '/tmp/t'", "'h4' => '.git/config'",
           "'h5' => '" + home.path() + "/notes/outside.txt'"}) {
    EXPECT_NE(text(out).find(link + ": Invalid cross-device link"), std::string::npos)
        << link << " in " << text(out);
  }
  // The worktree's parent shows nothing to link (class 23).
  EXPECT_NE(text(out).find("failed to access '../outside.txt': No such file or directory"),
            std::string::npos)
      << text(out);
  for (const char* name : {"wt/h1", "wt/h2", "wt/h3", "wt/h4", "wt/h5"}) {
    EXPECT_FALSE(runner.tree().exists(name)) << name;
  }
}

// 6. /proc shows only the job's own processes.
TEST(Attack06Proc, HostProcessesAreNotVisible) {
  RunnerHarness runner;
  const std::string host_pid = std::to_string(::getpid());
  const auto out = runner.shell(
      "ls /proc | grep -c '^[0-9]'; cat /proc/*/cmdline 2>/dev/null | tr '\\0' ' '; "
      "echo; cat /proc/" +
      host_pid + "/cmdline");
  const std::string listing = out["stdout"];
  const int visible = std::stoi(listing);
  // The job's own PID 1 (a clone of the runner), loopr-tool, sh, ls/grep/cat.
  EXPECT_LE(visible, 6) << listing;
  EXPECT_EQ(listing.find("runner_test"), std::string::npos) << "a host process is visible";
  EXPECT_EQ(listing.find("loopr-runner"), std::string::npos) << "the host's runner is visible";
  EXPECT_NE(text(out).find("/proc/" + host_pid + "/cmdline: No such file or directory"),
            std::string::npos)
      << text(out);
}

TEST(Attack06Proc, ProcSelfExeAndRootStayInsideTheSandbox) {
  RunnerHarness runner;
  const auto out = runner.shell(
      "ls -A /proc/self/root/home /proc/self/root/root /proc/self/root/tmp; echo r0=$?; "
      "tr '\\0' ' ' < /proc/1/cmdline; echo; find /proc/1/root/home /proc/1/root/root "
      "-mindepth 1 | wc -l; echo x >> /proc/self/exe; echo r1=$?; echo x >> /proc/1/exe; "
      "echo r2=$?");
  const std::string stdout_text = out["stdout"];
  // The lane's view: home folders hidden, /tmp private (only the worktree
  // root, mounted into it, is there).
  const std::string& root = runner.tree().root();
  std::string in_tmp;
  if (root.rfind("/tmp/", 0) == 0) in_tmp = root.substr(5, root.find('/', 5) - 5) + "\n";
  const std::string expected =
      "/proc/self/root/home:\n\n/proc/self/root/root:\n\n"
      "/proc/self/root/tmp:\n" +
      in_tmp + "r0=0\n" +
      // PID 1 is the job's own loopr-tool, with the same view.
      "loopr-tool run_command --worktree " + runner.worktree() + " \n0\n";
  EXPECT_EQ(stdout_text.rfind(expected, 0), 0u) << text(out);
  // Both are binaries owned by root on read-only mounts: EACCES, as the
  // job's user is not root (as an ordinary user, and as root too: class 24).
  EXPECT_NE(stdout_text.find("r1=2"), std::string::npos) << text(out);
  EXPECT_NE(stdout_text.find("r2=2"), std::string::npos) << text(out);
  for (const std::string exe : {"/proc/self/exe", "/proc/1/exe"}) {
    const std::string prefix = "cannot create " + exe + ": ";
    EXPECT_NE(text(out).find(prefix + "Permission denied"), std::string::npos) << text(out);
  }
}

// 7. Inherited file descriptors.
TEST(Attack07FileDescriptors, AJobSeesOnlyStdinStdoutStderrInEveryLane) {
  for (RunnerOptions options : {RunnerOptions{}, net_lane()}) {
    RunnerHarness runner(options);
    EXPECT_EQ(runner.probe("open_fds"), "open_fds: 0,1,2") << options.lane;
  }
  RunnerOptions heavy;
  heavy.lane = "heavy";
  heavy.stream_output = true;
  RunnerHarness runner(heavy);
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
TEST(Attack12Capabilities, AllCapabilitiesAreDroppedAndNoNewPrivsIsSetInEveryLane) {
  for (RunnerOptions options : {RunnerOptions{}, net_lane()}) {
    RunnerHarness runner(options);
    const auto out = runner.shell(
        "grep -E '^(CapInh|CapPrm|CapEff|CapBnd|CapAmb|NoNewPrivs|Seccomp):' "
        "/proc/self/status");
    const std::string status = out["stdout"];
    for (const char* line : {"CapInh:\t0000000000000000", "CapPrm:\t0000000000000000",
                             "CapEff:\t0000000000000000", "CapBnd:\t0000000000000000",
                             "CapAmb:\t0000000000000000", "NoNewPrivs:\t1", "Seccomp:\t2"}) {
      EXPECT_NE(status.find(line), std::string::npos)
          << options.lane << ": " << line << " missing in\n"
          << status;
    }
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

TEST(Attack13NoNetwork, TheNetLaneIsTheControlAndMayOpenSockets) {
  RunnerHarness runner(net_lane());
  EXPECT_EQ(runner.probe("socket_inet"), "socket_inet: allowed");
}

TEST(Attack13NoNetwork, OnlyLoopbackExistsAndToolsSayNetworkIsOff) {
  RunnerHarness runner;
  const auto interfaces = runner.shell("tail -n +3 /proc/net/dev | cut -d: -f1 | tr -d ' '");
  EXPECT_EQ(interfaces["stdout"], "lo\n");
  const auto dns = runner.shell("getent hosts deb.debian.org");
  EXPECT_EQ(dns["exit_code"], 2) << text(dns);  // getent: key not found
  const auto tcp = runner.shell("bash -c 'exec 3<>/dev/tcp/127.0.0.1/9 && echo connected'");
  EXPECT_NE(tcp["exit_code"], 0);
  EXPECT_EQ(tcp["stdout"], "");
  EXPECT_NE(text(tcp).find("Operation not permitted"), std::string::npos) << text(tcp);
  ASSERT_TRUE(tcp.contains("sandbox_note")) << tcp.dump();
  EXPECT_EQ(tcp["sandbox_note"],
            "network is off in lane no-net; use run_command (lane net) for network access");
}

TEST(Attack13NoNetwork, CurlReachesNeitherTheHostNorTheInternet) {
  // A listener on the host's loopback: the job's lo is another one.
  const int listener = ::socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC | SOCK_NONBLOCK, 0);
  ASSERT_GE(listener, 0);
  sockaddr_in address{};
  address.sin_family = AF_INET;
  address.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  ASSERT_EQ(::bind(listener, reinterpret_cast<sockaddr*>(&address), sizeof address), 0);
  ASSERT_EQ(::listen(listener, 4), 0);
  socklen_t length = sizeof address;
  ASSERT_EQ(::getsockname(listener, reinterpret_cast<sockaddr*>(&address), &length), 0);
  const std::string port = std::to_string(ntohs(address.sin_port));

  RunnerHarness runner;
  const std::vector<std::string> urls = {"http://127.0.0.1:" + port + "/",
                                         "http://deb.debian.org/"};
  for (const std::string& url : urls) {
    const auto out = runner.shell("curl -sS --max-time 5 " + url);
    EXPECT_NE(out["exit_code"], 0) << url;
    EXPECT_EQ(out["stdout"], "") << url;
    ASSERT_TRUE(out.contains("sandbox_note")) << url << ": " << out.dump();
    EXPECT_EQ(out["sandbox_note"],
              "network is off in lane no-net; use run_command (lane net) for network access");
  }
  EXPECT_LT(::accept(listener, nullptr, nullptr), 0) << "the job reached the host's listener";
  EXPECT_EQ(errno, EAGAIN);
  ::close(listener);
}

// 14. The net lane through web_fetch: loopback, metadata, private targets,
// redirects to them and names resolving to them are refused by loopr-fetch
// inside the lane's sandbox, before a connection (the server counts none).
// The net lane itself has the host network (its run_command is privileged);
// the control test shows web_fetch does reach an allowed local server there.
// web_fetch's JSON result; a tool error (exit 1, status failed) is one too.
json fetch_in_lane(RunnerHarness& runner, const json& args) {
  const proto::JobResult result = runner.run("web_fetch", args);
  EXPECT_TRUE(result.status == JobStatus::success || result.status == JobStatus::failed)
      << result.output << result.stderr_bytes << result.error.value_or("");
  json output = json::parse(result.output, nullptr, false);
  return output.is_discarded() ? json() : output;
}

TEST(Attack14WebFetchTargets, LoopbackMetadataAndPrivateTargetsAreRefusedInTheNetLane) {
  HttpTestServer server;
  server.route("/", {200, "text/plain", "secret", ""});
  const std::string port = std::to_string(server.port());
  RunnerHarness runner(net_lane());
  const struct {
    std::string url;
    const char* why;
  } targets[] = {
      {"http://127.0.0.1:" + port + "/", "loopback"},
      {"http://localhost:" + port + "/", "loopback"},
      {"http://2130706433:" + port + "/", "loopback"},
      {"http://[::ffff:127.0.0.1]:" + port + "/", "loopback"},
      {"http://[::1]:" + port + "/", "loopback"},
      {"http://169.254.169.254/latest/meta-data/", "link-local"},
      {"http://10.0.0.1/", "RFC 1918"},
      {"http://192.168.0.1/", "RFC 1918"},
  };
  for (const auto& target : targets) {
    const json out = fetch_in_lane(runner, {{"url", target.url}});
    EXPECT_EQ(out["error"]["code"], "sandbox_denied") << target.url << ": " << out.dump();
    EXPECT_NE(out["error"].value("message", "").find(target.why), std::string::npos)
        << target.url << ": " << out.dump();
  }
  EXPECT_EQ(server.connections(), 0);
}

TEST(Attack14WebFetchTargets, ARedirectFromAnAllowedServerToAnotherIsRefused) {
  HttpTestServer inner("127.0.0.2");
  inner.route("/secret", {200, "text/plain", "secret", ""});
  HttpTestServer outer;
  outer.route("/hop", {302, "text/plain", "", inner.base_url() + "/secret"});
  outer.route("/page", {200, "text/html", "<h1>fetched in the lane</h1>", ""});
  // web_fetch goes through the lane's egress proxy, whose policy allows the
  // outer server ([egress] allowed_networks, as looprd would be configured).
  RunnerOptions options = net_lane();
  options.allowed_networks = {"127.0.0.1/32"};
  RunnerHarness runner(options);
  const json allow = {"127.0.0.1/32"};
  // Control: an allowed address is fetched from inside the lane.
  const json page =
      fetch_in_lane(runner, {{"url", outer.base_url() + "/page"}, {"allowed_networks", allow}});
  EXPECT_EQ(page["content"], "# fetched in the lane") << page.dump();
  const json hop =
      fetch_in_lane(runner, {{"url", outer.base_url() + "/hop"}, {"allowed_networks", allow}});
  EXPECT_EQ(hop["error"]["code"], "sandbox_denied") << hop.dump();
  EXPECT_NE(hop["error"].value("message", "").find("127.0.0.2"), std::string::npos);
  EXPECT_EQ(inner.connections(), 0);
  EXPECT_EQ(outer.connections(), 2);
}

TEST(Attack14WebFetchTargets, TheNoNetLaneCannotFetchAtAll) {
  RunnerHarness runner;  // no-net
  const json out = fetch_in_lane(runner, {{"url", "http://deb.debian.org/"}});
  EXPECT_EQ(out["error"]["code"], "sandbox_denied") << out.dump();
  EXPECT_NE(out["error"].value("message", "").find("network is off in lane no-net"),
            std::string::npos)
      << out.dump();
  EXPECT_FALSE(out.contains("content"));
}

// 15. The daemon's socket, D-Bus, docker.sock, abstract sockets.
int listen_unix(const std::string& path) {
  const int fd = ::socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0);
  sockaddr_un address{};
  address.sun_family = AF_UNIX;
  path.copy(address.sun_path, sizeof address.sun_path - 1);
  if (::bind(fd, reinterpret_cast<sockaddr*>(&address), sizeof address) != 0 ||
      ::listen(fd, 1) != 0) {
    ::close(fd);
    return -1;
  }
  return fd;
}

TEST(Attack15Sockets, AHiddenControlSocketIsNotEvenReachableInAnyLane) {
  OutsideTmpFolder runtime;  // stands for $XDG_RUNTIME_DIR/loopr
  const std::string socket_path = runtime.path() + "/looprd.sock";
  const int listener = listen_unix(socket_path);
  ASSERT_GE(listener, 0);
  ::chmod(socket_path.c_str(), 0777);
  {
    RunnerHarness not_hidden;  // the control: the same socket, not hidden, is reachable
    EXPECT_EQ(not_hidden.probe("connect_path " + socket_path), "connect_path: allowed");
  }
  for (RunnerOptions options : {RunnerOptions{}, net_lane()}) {
    options.extra_args = {"--hide", runtime.path()};
    RunnerHarness runner(options);
    EXPECT_EQ(runner.probe("connect_path " + socket_path), "connect_path: errno ENOENT")
        << options.lane;
  }
  ::close(listener);
}

TEST(Attack15Sockets, RunIsEmptySoDbusAndDockerSocketsAreGone) {
  for (RunnerOptions options : {RunnerOptions{}, net_lane()}) {
    RunnerHarness runner(options);
    const auto out = runner.shell("find /run /var/run/ -mindepth 1 | wc -l");
    EXPECT_EQ(out["stdout"], "0\n") << options.lane << ": " << text(out);
    EXPECT_EQ(runner.probe("connect_path /run/dbus/system_bus_socket"),
              "connect_path: errno ENOENT");
    EXPECT_EQ(runner.probe("connect_path /var/run/docker.sock"), "connect_path: errno ENOENT");
  }
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
  // Every lane has a network namespace of its own (the net and heavy lanes
  // reach out only through the egress proxy): the name does not exist there.
  // Landlock's scoping would refuse it too (ABI 6), were it reachable.
  for (const char* lane : {"no-net", "net", "heavy"}) {
    RunnerHarness runner(lane_options(lane));
    EXPECT_EQ(runner.probe("connect_abstract " + name), "connect_abstract: errno ECONNREFUSED")
        << lane;
  }
  ::close(listener);
}

// 16. Fork bomb, memory bomb, disk fill.
TEST(Attack16Resources, AForkBombEndsWithItsJobAndTheLaneKeepsWorking) {
  RunnerOptions options;
  options.extra_args = {"--max-processes", "200"};
  // Room for loopr-tool to stop the bomb and report, however loaded the machine.
  options.term_grace_ms = 5000;
  RunnerHarness runner(options);
  const auto bomb =
      runner.run("run_command",
                 {{"command", "b() { b | b & }; b; exec sleep 1000.7777"}, {"timeout_ms", 600000}},
                 /*timeout_ms=*/3000);
  EXPECT_TRUE(bomb.status == JobStatus::timeout || bomb.status == JobStatus::success)
      << proto::to_string(bomb.status);
  // The bomb hit a process limit: the lane's pids cgroup as root (the kernel
  // exempts uid 0 from RLIMIT_NPROC), RLIMIT_NPROC otherwise.
  const auto out = json::parse(bomb.output, nullptr, false);
  ASSERT_FALSE(out.is_discarded()) << bomb.output;
  EXPECT_NE(out["stderr"].get<std::string>().find("Cannot fork"), std::string::npos)
      << "no process limit stopped the bomb; runner: " << runner.runner_stderr();
  // Which limit, and the key that raises it (issue 25).
  EXPECT_EQ(out["limit"]["name"], "processes") << out.dump();
  EXPECT_EQ(out["limit"]["key"], "[lanes.no-net] pids_max in loopr.toml") << out.dump();
  EXPECT_TRUE(processes_with("sleep 1000.7777").empty());
  EXPECT_EQ(runner.shell("echo still here")["stdout"], "still here\n");
}

TEST(Attack16Resources, AMemoryBombHitsTheAddressSpaceLimit) {
  RunnerOptions options;
  options.extra_args = {"--address-space-mb", "256"};
  RunnerHarness runner(options);
  const auto out = runner.shell("awk 'BEGIN { s = \"x\"; while (1) s = s s }'");
  EXPECT_NE(out["exit_code"], 0);
  EXPECT_NE(text(out).find("out of memory"), std::string::npos) << text(out);
  // Which limit, and the key that raises it.
  EXPECT_EQ(out["limit"]["name"], "address_space") << out.dump();
  EXPECT_EQ(out["limit"]["key"], "[lanes.no-net] address_space_mb in loopr.toml") << out.dump();
  EXPECT_EQ(out["limit"]["value"], 256) << out.dump();
}

// [lanes.X] memory_mb is a cgroup limit on the job's memory, not on its
// address space: where the machine gives the runner a memory cgroup (root
// here, through the v1 memory hierarchy), a memory bomb is OOM-killed in
// the job's own cgroup and the result names the limit and its key; where it
// cannot (an ordinary user without delegation), the runner's report says the
// limit is not applied, and no bomb is run against the machine.
TEST(Attack16Resources, AMemoryBombIsKilledInTheJobsMemoryCgroup) {
  RunnerOptions options;
  options.extra_args = {"--memory-mb", "128"};
  RunnerHarness runner(options);
  const std::string report = runner.runner_stderr();
  if (report.find("memory limit 128 MiB per job") == std::string::npos) {
    EXPECT_NE(report.find("no memory cgroup for the lane's jobs"), std::string::npos) << report;
    EXPECT_NE(report.find("[lanes.no-net] memory_mb = 128 is NOT applied"), std::string::npos)
        << report;
    return;
  }
  const auto bomb = runner.run(
      "run_command", {{"command", "awk 'BEGIN { s = \"x\"; while (1) s = s s }'; echo after=$?"}},
      60'000);
  ASSERT_TRUE(bomb.limit.has_value()) << bomb.output << bomb.stderr_bytes;
  EXPECT_EQ(bomb.limit->name, "memory");
  EXPECT_EQ(bomb.limit->key, "[lanes.no-net] memory_mb in loopr.toml");
  EXPECT_EQ(bomb.limit->value, 128u);
  EXPECT_NE(bomb.limit->message.find("128 MiB"), std::string::npos) << bomb.limit->message;
  // The next job in the same cgroup is not blamed for the last one's kill.
  const auto next = runner.run("run_command", {{"command", "echo still here"}});
  EXPECT_FALSE(next.limit.has_value());
  EXPECT_EQ(json::parse(next.output)["stdout"], "still here\n");
  // The lane's warm workers (the file tools) share one memory cgroup.
  runner.tree().write("wt/read-me.txt", "x\n");
  EXPECT_EQ(runner.run("read_file", {{"path", "read-me.txt"}}).status, JobStatus::success);
  const auto in = report.find(" in /", report.find("memory limit 128 MiB per job"));
  const auto jobs = report.find("-job0..", in);
  ASSERT_TRUE(in != std::string::npos && jobs != std::string::npos) << report;
  const std::string workers = report.substr(in + 4, jobs - in - 4) + "-workers";
  std::ifstream procs(workers + "/cgroup.procs");
  std::string first;
  EXPECT_TRUE(std::getline(procs, first) && !first.empty())
      << "no warm worker in " << workers << "; " << report;
}

TEST(Attack16Resources, FillingTmpStopsAtItsCap) {
  RunnerOptions options;
  options.extra_args = {"--tmp-size-mb", "16"};
  RunnerHarness runner(options);
  const auto out = runner.shell("dd if=/dev/zero of=/tmp/fill bs=1M count=64");
  EXPECT_NE(out["exit_code"], 0);
  EXPECT_NE(text(out).find("No space left on device"), std::string::npos) << text(out);
  EXPECT_EQ(out["limit"]["name"], "disk") << out.dump();
  EXPECT_EQ(out["limit"]["key"], "[sandbox] tmp_size_mb in loopr.toml") << out.dump();
  EXPECT_EQ(out["limit"]["value"], 16) << out.dump();
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
  EXPECT_EQ(out["output_bytes"], 50'000'000);
  EXPECT_EQ(out["limit"]["name"], "output") << out.dump().substr(0, 2000);
  EXPECT_EQ(out["limit"]["key"], "max_output_bytes of [tools.run_command] in catalog.toml");
  EXPECT_NE(out["stdout"].get<std::string>().find(" bytes cut (50000000 in all) ...]"),
            std::string::npos);
}

TEST(Attack17OutputFlood, BinaryGarbageAndOneEndlessLineAreCut) {
  RunnerHarness runner;
  for (const char* command :
       {"head -c 20000000 /dev/urandom", "yes | tr -d '\\n' | head -c 30000000"}) {
    const auto result = runner.run("run_command", {{"command", command}}, 60'000, 20'000);
    EXPECT_EQ(result.status, JobStatus::success) << command;
    // Cut by loopr-tool (its JSON says so) or, when binary bytes made that
    // JSON grow past the cap, by the runner.
    const auto out = json::parse(result.output, nullptr, false);
    EXPECT_TRUE(result.truncated || (!out.is_discarded() && out["truncated"] == true)) << command;
    EXPECT_LE(result.output.size(), 20'000u + 200u) << command;
    EXPECT_LE(result.stderr_bytes.size(), 20'000u + 200u) << command;
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

TEST(Attack18Lifetime, AProcessIgnoringTermIsKilledAfterTheGrace) {
  RunnerHarness runner;
  const auto result = runner.run(
      "run_command",
      {{"command", "trap '' TERM; setsid sh -c 'trap \"\" TERM; exec sleep 1000.8887' & wait"},
       {"timeout_ms", 600000}},
      /*timeout_ms=*/800);
  EXPECT_EQ(result.status, JobStatus::timeout);
  EXPECT_TRUE(processes_with("sleep 1000.8887").empty());
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
  ASSERT_EQ(::access("/usr/bin/bwrap", X_OK), 0) << "bwrap is required (install-deps)";
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

struct InjectedStep {
  const char* point;  // --inject-failure
  const char* step;   // the step the error names
};

void PrintTo(const InjectedStep& injected, std::ostream* out) {
  *out << injected.point;
}

class Attack19LaneStep : public testing::TestWithParam<InjectedStep> {};

TEST_P(Attack19LaneStep, AFailedLaneStepStopsTheRunnerAndNamesTheStep) {
  RunnerOptions options;
  options.handshake = false;
  options.extra_args = {"--inject-failure", GetParam().point};
  RunnerHarness runner(options);
  const int status = runner.wait_exit();
  ASSERT_TRUE(WIFEXITED(status));
  EXPECT_EQ(WEXITSTATUS(status), 3);
  const std::string err = runner.runner_stderr();
  EXPECT_NE(err.find("sandbox step '" + std::string(GetParam().step) + "' failed"),
            std::string::npos)
      << err;
  EXPECT_NE(err.find("the job did not run"), std::string::npos) << err;
}

INSTANTIATE_TEST_SUITE_P(EveryStep, Attack19LaneStep,
                         testing::Values(InjectedStep{"user-namespace", "user namespace"},
                                         InjectedStep{"namespaces", "namespaces"},
                                         InjectedStep{"network-namespace", "network namespace"},
                                         InjectedStep{"lane-filesystem", "mount namespace"},
                                         InjectedStep{"seccomp-compile", "seccomp"},
                                         InjectedStep{"landlock-check", "landlock"}),
                         [](const auto& param_info) {
                           std::string name = param_info.param.point;
                           std::erase(name, '-');
                           return name;
                         });

class Attack19JobStep : public testing::TestWithParam<InjectedStep> {};

TEST_P(Attack19JobStep, AFailedJobStepMeansTheJobNeverRanAndTheErrorNamesTheStep) {
  RunnerOptions options;
  options.extra_args = {"--inject-failure", GetParam().point};
  RunnerHarness runner(options);
  const auto result = runner.run("run_command", {{"command", "touch ran-anyway"}});
  EXPECT_EQ(result.status, JobStatus::error);
  EXPECT_EQ(result.exit_code, 126);
  EXPECT_EQ(result.output, "");
  ASSERT_TRUE(result.error);
  EXPECT_NE(result.error->find("sandbox step '" + std::string(GetParam().step) + "' failed"),
            std::string::npos)
      << *result.error;
  EXPECT_FALSE(runner.tree().exists("wt/ran-anyway"));
}

INSTANTIATE_TEST_SUITE_P(EveryStep, Attack19JobStep,
                         testing::Values(InjectedStep{"job-filesystem", "mount namespace"},
                                         InjectedStep{"resource-limits", "resource limits"},
                                         InjectedStep{"landlock", "landlock"},
                                         InjectedStep{"capabilities", "drop capabilities"},
                                         InjectedStep{"seccomp", "seccomp"}),
                         [](const auto& param_info) {
                           std::string name = param_info.param.point;
                           std::erase(name, '-');
                           return name;
                         });

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

TEST(Attack19FailClosed, SandboxOffMustBeAskedForAndIsLoud) {
  RunnerOptions options;
  options.extra_args = {"--sandbox", "off"};
  RunnerHarness runner(options);
  const std::string err = runner.runner_stderr();
  EXPECT_NE(err.find("WARNING: lane no-net runs with sandbox = \"off\": jobs are NOT isolated"),
            std::string::npos)
      << err;
  // Jobs run, unisolated: the host's network is there, and LOOPR_NETWORK says so.
  const auto out = runner.shell("echo $LOOPR_NETWORK");
  EXPECT_EQ(out["stdout"], "on\n") << text(out);
}

// 23. Other worktrees under the same roots: neither readable nor listed.
std::vector<RunnerOptions> every_lane() {
  RunnerOptions heavy = net_lane();
  heavy.lane = "heavy";
  heavy.stream_output = true;
  return {RunnerOptions{}, net_lane(), heavy};
}

// Another loop's worktree beside the job's, under the same root.
std::string plant_other_worktree(RunnerHarness& runner) {
  runner.tree().write("other-loop/secret.txt", "their secret\n");
  runner.tree().write("other-loop/src/deep.txt", "their secret too\n");
  return runner.tree().path("other-loop");
}

std::string error_code(const proto::JobResult& result) {
  const auto parsed = json::parse(result.output, nullptr, false);
  return parsed.is_discarded() ? "" : parsed["error"].value("code", "");
}

TEST(Attack23PrivateWorktrees, NoFileToolReachesAnotherWorktreeInAnyLane) {
  for (const RunnerOptions& options : every_lane()) {
    SCOPED_TRACE(options.lane);
    RunnerHarness runner(options);
    const std::string other = plant_other_worktree(runner);
    const std::vector<std::pair<std::string, json>> calls = {
        {"read_file", {{"path", other + "/secret.txt"}}},
        {"read_file", {{"path", "../other-loop/secret.txt"}}},
        {"list_directory", {{"path", other}}},
        {"list_directory", {{"path", ".."}}},
        {"list_directory", {{"path", runner.tree().root()}, {"recursive", true}}},
        {"glob", {{"pattern", "**/*.txt"}, {"path", other}}},
        {"glob", {{"pattern", "**/secret.txt"}, {"path", ".."}}},
        {"grep", {{"pattern", "secret"}, {"path", other}}},
        {"grep", {{"pattern", "secret"}, {"path", runner.tree().root()}}},
        {"write_file", {{"path", other + "/secret.txt"}, {"content", "mine\n"}}},
        {"edit_file",
         {{"path", other + "/secret.txt"}, {"old_string", "their"}, {"new_string", "my"}}},
        {"file_delete", {{"path", other + "/secret.txt"}}}};
    for (const auto& [tool, args] : calls) {
      const auto result = runner.run(tool, args);
      EXPECT_EQ(result.status, JobStatus::failed) << tool << " " << args.dump();
      EXPECT_EQ(error_code(result), "path_outside_worktree")
          << tool << " " << args.dump() << ": " << result.output;
      EXPECT_EQ(result.output.find("their secret"), std::string::npos) << result.output;
    }
    // A glob whose pattern climbs out finds nothing, and names nothing.
    const auto climbing = runner.run("glob", {{"pattern", "../other-loop/*"}});
    EXPECT_EQ(climbing.output.find("secret.txt"), std::string::npos) << climbing.output;
    EXPECT_EQ(runner.tree().read("other-loop/secret.txt"), "their secret\n");
  }
}

TEST(Attack23PrivateWorktrees, RunCommandNeitherReadsNorListsAnotherWorktreeInAnyLane) {
  for (const RunnerOptions& options : every_lane()) {
    SCOPED_TRACE(options.lane);
    RunnerHarness runner(options);
    const std::string other = plant_other_worktree(runner);
    const std::string& root = runner.tree().root();
    const auto out = runner.shell(
        "cat " + other + "/secret.txt; echo r1=$?; stat " + other + "; echo r2=$?; ls " + other +
        "; echo r3=$?; cat ../other-loop/src/deep.txt; echo r4=$?; echo listing; ls -A " + root +
        "; find " + root + " -name '*.txt' | wc -l; grep -rs secret " + root +
        "; echo r5=$?; cd .. && ls -A");
    const std::string stdout_text = out["stdout"];
    for (const char* step : {"r1=1", "r2=1", "r3=2", "r4=1", "r5=1"}) {
      EXPECT_NE(stdout_text.find(step), std::string::npos) << step << ": " << text(out);
    }
    EXPECT_NE(text(out).find("cat: " + other + "/secret.txt: No such file or directory"),
              std::string::npos)
        << text(out);
    EXPECT_NE(text(out).find("stat: cannot statx '" + other + "': No such file or directory"),
              std::string::npos)
        << text(out);
    EXPECT_NE(text(out).find("ls: cannot access '" + other + "': No such file or directory"),
              std::string::npos)
        << text(out);
    // The root lists the job's own worktree only (twice: ls of the root, and
    // of ..); find counts no file of the other worktree; grep finds nothing.
    EXPECT_NE(stdout_text.find("listing\nwt\n0\nr5="), std::string::npos) << text(out);
    EXPECT_TRUE(stdout_text.ends_with("\nwt\n")) << text(out);
    EXPECT_EQ(text(out).find("their secret"), std::string::npos) << text(out);
    EXPECT_EQ(runner.probe("open_read " + other + "/secret.txt"), "open_read: errno ENOENT");
    EXPECT_EQ(runner.probe("stat " + other), "stat: errno ENOENT");
  }
}

TEST(Attack23PrivateWorktrees, TheOwnWorktreeAndConfiguredReadPathsStayReadable) {
  // Read paths under the root (kept per job) and inside a hidden home
  // (kept by the lane): readable, read-only; the rest of both stays out.
  OutsideTmpFolder home;
  std::filesystem::create_directories(home.path() + "/notes");
  home.write("notes/todo.txt", "home notes\n");
  home.write("private.txt", "hidden\n");
  TempTree shared;  // a second root with a read path of its own
  shared.write("docs/guide.txt", "shared guide\n");
  shared.write("another-loop/secret.txt", "their secret\n");
  for (const RunnerOptions& lane : every_lane()) {
    SCOPED_TRACE(lane.lane);
    RunnerOptions options = lane;
    options.env["HOME"] = home.path();
    options.extra_args = {
        "--root",      shared.root(),          "--read-path", shared.path("docs"),
        "--read-path", home.path() + "/notes", "--read-path", "/nonexistent/loopr-read-path"};
    RunnerHarness runner(options);
    runner.tree().write("wt/mine.txt", "my own\n");
    const auto out =
        runner.shell("cat mine.txt " + shared.path("docs/guide.txt") + " " + home.path() +
                     "/notes/todo.txt; echo edited > mine.txt; cat mine.txt; ls -A " +
                     shared.root() + "; echo x >> " + shared.path("docs/guide.txt") +
                     "; echo r1=$?; cat " + shared.path("another-loop/secret.txt") +
                     "; echo r2=$?; cat " + home.path() + "/private.txt; echo r3=$?");
    const std::string stdout_text = out["stdout"];
    EXPECT_EQ(
        stdout_text.rfind("my own\nshared guide\nhome notes\nedited\ndocs\nr1=2\nr2=1\nr3=1\n", 0),
        0u)
        << text(out);
    EXPECT_NE(text(out).find(shared.path("docs/guide.txt") + ": Read-only file system"),
              std::string::npos)
        << text(out);
    EXPECT_NE(
        text(out).find(shared.path("another-loop/secret.txt") + ": No such file or directory"),
        std::string::npos)
        << text(out);
    EXPECT_NE(text(out).find(home.path() + "/private.txt: No such file or directory"),
              std::string::npos)
        << text(out);
    EXPECT_EQ(runner.tree().read("wt/mine.txt"), "edited\n");
    EXPECT_EQ(shared.read("docs/guide.txt"), "shared guide\n");
  }
}

// Runs `command` in a job whose worktree is `worktree` (not the harness's).
json shell_in(RunnerHarness& runner, const std::string& worktree, const std::string& command) {
  auto job = runner.job("in-" + std::to_string(std::hash<std::string>{}(command)), "run_command",
                        {{"command", command}});
  job.worktree = job.cwd = worktree;
  runner.send(job);
  const auto result = runner.receive_a<proto::JobResult>();
  if (!result) return json();
  EXPECT_EQ(result->status, JobStatus::success) << (result->error ? *result->error : "");
  return json::parse(result->output, nullptr, false);
}

void git(const std::string& args) {
  const std::string command = "git " + args + " >/dev/null 2>&1";
  ASSERT_EQ(std::system(command.c_str()), 0) << command;
}

TEST(Attack23PrivateWorktrees, GitWorksInALinkedWorktreeWhoseRepositoryIsUnderTheRoot) {
  RunnerHarness runner;
  plant_other_worktree(runner);
  const std::string repo = runner.tree().path("repo");
  runner.tree().write("repo/README", "the main checkout\n");
  git("-C " + repo + " init -q -b main");
  git("-C " + repo + " -c user.name=t -c user.email=t@t add README");
  git("-C " + repo + " -c user.name=t -c user.email=t@t commit -q -m first");
  git("-C " + repo + " worktree add -q -b loop/1 " + runner.tree().path("linked"));
  const std::string linked = runner.tree().path("linked");
  const auto out = shell_in(runner, linked,
                            "echo change >> README; git status --porcelain; git log --format=%s; "
                            "ls -A ..; cat ../repo/README; echo r1=$?; ls ../repo/.git/objects | "
                            "grep -c .; echo x > ../repo/.git/planted; echo r2=$?");
  const std::string stdout_text = out.value("stdout", "");
  // git reads the repository's git folder; the main checkout's files and
  // the other worktree stay out of sight, and the git folder is read-only.
  EXPECT_EQ(stdout_text.rfind(" M README\nfirst\nlinked\nrepo\nr1=1\n", 0), 0u) << text(out);
  EXPECT_NE(text(out).find("../repo/README: No such file or directory"), std::string::npos)
      << text(out);
  EXPECT_NE(text(out).find("../repo/.git/planted: Read-only file system"), std::string::npos)
      << text(out);
  EXPECT_NE(stdout_text.find("r2=2"), std::string::npos) << text(out);
  EXPECT_FALSE(runner.tree().exists("repo/.git/planted"));
}

TEST(Attack23PrivateWorktrees, AForgedGitFileDoesNotBringAnotherRepositoryBack) {
  RunnerHarness runner;
  // Another loop's repository, with a linked worktree that is not this one.
  runner.tree().write("victim/.git/worktrees/x/gitdir", runner.tree().path("victim-x/.git") + "\n");
  runner.tree().write("victim/.git/worktrees/x/commondir", "../..\n");
  runner.tree().write("victim/.git/secret", "their objects\n");
  const std::string forged_admin = runner.tree().path("victim/.git/worktrees/x");
  // A job plants a .git file naming it (the harness's worktree has none).
  const auto plant = runner.shell("echo 'gitdir: " + forged_admin + "' > .git; echo r=$?");
  EXPECT_NE(plant["stdout"].get<std::string>().find("r=0"), std::string::npos) << text(plant);
  const auto out = runner.shell("cat " + runner.tree().path("victim/.git/secret") +
                                "; echo r1=$?; ls " + runner.tree().root());
  EXPECT_NE(out["stdout"].get<std::string>().find("r1=1\nwt\n"), std::string::npos) << text(out);
  EXPECT_NE(text(out).find("victim/.git/secret: No such file or directory"), std::string::npos)
      << text(out);
}

// 24. Started as root, jobs are not the host's root: they are its uid 65534
// (as an ordinary user they are that user, as before).
unsigned job_host_uid() {
  return ::getuid() == 0 ? runner::kJobHostIdAsRoot : ::getuid();
}
unsigned job_host_gid() {
  return ::getuid() == 0 ? runner::kJobHostIdAsRoot : ::getgid();
}

TEST(Attack24NotHostRoot, RootOnlyHostFilesAreUnreadableInEveryLane) {
  for (const RunnerOptions& options : every_lane()) {
    SCOPED_TRACE(options.lane);
    RunnerHarness runner(options);
    EXPECT_EQ(runner.probe("open_read /etc/shadow"), "open_read: errno EACCES");
    const auto out = runner.shell("cat /etc/shadow; echo r=$?");
    EXPECT_EQ(out["stdout"], "r=1\n") << text(out);
    EXPECT_NE(text(out).find("cat: /etc/shadow: Permission denied"), std::string::npos)
        << text(out);
  }
}

TEST(Attack24NotHostRoot, JobsRunAsAnUnprivilegedHostUid) {
  RunnerHarness runner;
  const auto out =
      runner.shell("id -u; awk '{print $1, $2, $3}' /proc/self/uid_map /proc/self/gid_map; id -G");
  const std::string uid = std::to_string(job_host_uid());
  const std::string gid = std::to_string(job_host_gid());
  if (::getuid() == 0) {
    // Uid and gid 0 of the namespace, the host's 65534, and nothing else:
    // no id in the job names the host's root.
    EXPECT_EQ(out["stdout"], "0\n0 " + uid + " 1\n0 " + gid + " 1\n0\n") << text(out);
  } else {
    EXPECT_EQ(out["stdout"].get<std::string>().rfind(
                  uid + "\n" + uid + " " + uid + " 1\n" + gid + " " + gid + " 1\n", 0),
              0u)
        << text(out);
  }
  // The runner, whose clones the jobs are, as the host sees it.
  const std::string status = host_file("/proc/" + std::to_string(runner.pid()) + "/status");
  EXPECT_NE(status.find("\nUid:\t" + uid + "\t" + uid + "\t" + uid + "\t" + uid + "\n"),
            std::string::npos)
      << status;
  // No supplementary group either (root's gid 0 among them, as root).
  const auto groups = status.find("\nGroups:");
  ASSERT_NE(groups, std::string::npos) << status;
  const std::string group_line =
      status.substr(groups + 8, status.find('\n', groups + 1) - groups - 8);
  if (::getuid() == 0) {
    EXPECT_EQ(group_line.find_first_of("0123456789"), std::string::npos) << group_line;
  }
}

TEST(Attack24NotHostRoot, WhatAJobWritesIsOwnedByTheRealUserAndItCannotChangeWhoItIs) {
  RunnerHarness runner;
  const auto out = runner.shell(
      "echo made > made.txt && mkdir dir && echo r0=$?; ./.probe chown made.txt 1; "
      "./.probe chown made.txt " +
      std::to_string(runner::kJobHostIdAsRoot) + "; ./.probe setresuid 1");
  EXPECT_EQ(out["stdout"],
            "r0=0\nchown: errno EINVAL\nchown: errno EINVAL\nsetresuid: errno EINVAL\n")
      << text(out);
  const auto written = runner.run("write_file", {{"path", "tool.txt"}, {"content", "tool\n"}});
  EXPECT_EQ(written.status, JobStatus::success) << written.output;
  // On disk, as looprd (root, or the user) made the worktree: its git works.
  for (const char* name : {"wt/made.txt", "wt/dir", "wt/tool.txt"}) {
    struct stat st {};
    ASSERT_EQ(::stat(runner.tree().path(name).c_str(), &st), 0) << name;
    EXPECT_EQ(st.st_uid, ::getuid()) << name;
    EXPECT_EQ(st.st_gid, ::getgid()) << name;
  }
}

// As root, a job's files are root's on disk: a set-user-ID or set-group-ID
// bit on one would hand root (or root's group) to whoever runs it on the
// host. seccomp refuses the bit through chmod, install and open; what
// openat2 creates with it (seccomp cannot see that mode) the runner clears
// after the job. As an ordinary user the bit on the user's own file grants
// nothing, and is left alone.
TEST(Attack24NotHostRoot, NoSetIdProgramIsLeftInTheWorktree) {
  for (RunnerOptions options : {RunnerOptions{}, lane_options("net")}) {
    RunnerHarness runner(options);
    const auto out = runner.shell(
        "cp /bin/true prog; chmod u+s prog; echo chmod=$?; chmod g+s prog; echo chmodg=$?; "
        "install -m 4755 /bin/true prog2; echo install=$?; ./.probe create_setid prog3");
    const bool root = ::getuid() == 0;
    if (root) {
      EXPECT_EQ(out["stdout"], "chmod=1\nchmodg=1\ninstall=1\ncreate_setid: allowed\n")
          << options.lane << ": " << text(out);
      EXPECT_NE(text(out).find("Operation not permitted"), std::string::npos) << text(out);
    }
    for (const char* name : {"wt/prog", "wt/prog2", "wt/prog3"}) {
      struct stat st {};
      if (::stat(runner.tree().path(name).c_str(), &st) != 0) continue;  // install refused
      if (root) {
        EXPECT_EQ(st.st_mode & (S_ISUID | S_ISGID), 0u) << options.lane << " " << name;
      }
    }
    struct stat made {};
    ASSERT_EQ(::stat(runner.tree().path("wt/prog3").c_str(), &made), 0);
    if (!root) {
      EXPECT_NE(made.st_mode & S_ISUID, 0u);  // the user's own: left alone
    }
  }
}

TEST(Attack24NotHostRoot, ARootInsideAFolderOnlyItsOwnerMayEnterStillWorks) {
  // As looprd's own folders are (0700): as root, the runner checks and
  // opens the root before it stops being root.
  TempTree outer;
  outer.mkdir("inner/wt");
  ASSERT_EQ(::chmod(outer.root().c_str(), 0700), 0);
  RunnerOptions options;
  options.extra_args = {"--root", outer.path("inner")};
  RunnerHarness runner(options);
  const auto out = shell_in(runner, outer.path("inner/wt"), "echo made > made.txt; cat made.txt");
  EXPECT_EQ(out.value("stdout", ""), "made\n") << out.dump();
  struct stat st {};
  ASSERT_EQ(::stat(outer.path("inner/wt/made.txt").c_str(), &st), 0);
  EXPECT_EQ(st.st_uid, ::getuid());
}

}  // namespace
}  // namespace loopr::test
