// SECURITY.md class 25, disk exhaustion: the real looprd with its worktree
// root AND its state directory on one small size-capped tmpfs, and jobs that
// fill it (one big write_file, a file per call, dd, `yes`, many files, the
// lane's /tmp). Each tool result must say the disk is full; while it is full
// looprd keeps answering (same pid), other tools and lanes keep working and a
// store write that fails is logged, not fatal; once the space is freed new
// calls are recorded again, and after looprd stops the database passes
// `PRAGMA integrity_check` and holds every call: each one either stored or
// named in the log as not recorded.
//
// The tmpfs lives in a private mount namespace of this test process, entered
// once before any test runs: as root unshare(CLONE_NEWNS); as an ordinary user
// unshare(CLONE_NEWUSER | CLONE_NEWNS) with an identity uid/gid map, so looprd
// (started after it) still runs as that user. Nothing is mounted on the host.
#include <fcntl.h>
#include <gtest/gtest.h>
#include <sched.h>
#include <signal.h>
#include <sqlite3.h>
#include <sys/mount.h>
#include <sys/stat.h>
#include <sys/statvfs.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <fstream>
#include <set>
#include <string>
#include <vector>

#include "store/store.hpp"
#include "tests/daemon/daemon_harness.hpp"

namespace loopr::test {
namespace {

using nlohmann::json;

constexpr const char* kDiskFull = "No space left on device";

bool write_proc_file(const std::string& path, const std::string& text) {
  const int fd = ::open(path.c_str(), O_WRONLY | O_CLOEXEC);
  if (fd < 0) return false;
  const bool ok = ::write(fd, text.data(), text.size()) == static_cast<ssize_t>(text.size());
  ::close(fd);
  return ok;
}

// Enters a mount namespace of this process alone (see the top of the file).
// Must run while the process has a single thread (CLONE_NEWUSER needs it).
void enter_private_mount_namespace() {
  static bool entered = false;
  if (entered) return;
  const uid_t uid = ::geteuid();
  const gid_t gid = ::getegid();
  if (uid == 0) {
    ASSERT_EQ(::unshare(CLONE_NEWNS), 0) << "unshare(CLONE_NEWNS): " << std::strerror(errno);
  } else {
    ASSERT_EQ(::unshare(CLONE_NEWUSER | CLONE_NEWNS), 0)
        << "unshare(CLONE_NEWUSER|CLONE_NEWNS): " << std::strerror(errno)
        << "; this test needs unprivileged user namespaces";
    ASSERT_TRUE(write_proc_file("/proc/self/uid_map",
                                std::to_string(uid) + " " + std::to_string(uid) + " 1\n"));
    ASSERT_TRUE(write_proc_file("/proc/self/setgroups", "deny"));
    ASSERT_TRUE(write_proc_file("/proc/self/gid_map",
                                std::to_string(gid) + " " + std::to_string(gid) + " 1\n"));
  }
  ASSERT_EQ(::mount(nullptr, "/", nullptr, MS_REC | MS_PRIVATE, nullptr), 0)
      << "making / private: " << std::strerror(errno);
  entered = true;
}

// A tmpfs of `size_mb` shared by the harness's worktree root (work/) and
// state directory (state/): two bind mounts of one file system, whose own
// mount point is detached at once so jobs cannot reach the state through it.
class SmallDisk {
 public:
  SmallDisk(DaemonHarness& daemon, int size_mb, int inodes) : daemon_(daemon) {
    TempTree& tree = daemon.tree();
    tree.mkdir("disk");
    tree.mkdir("state");
    const std::string disk = tree.path("disk");
    const std::string options =
        "size=" + std::to_string(size_mb) + "m,nr_inodes=" + std::to_string(inodes) + ",mode=0700";
    if (::mount("tmpfs", disk.c_str(), "tmpfs", MS_NOSUID | MS_NODEV, options.c_str()) != 0) {
      ADD_FAILURE() << "mount tmpfs on " << disk << ": " << std::strerror(errno);
      return;
    }
    tree.mkdir("disk/work/repo");
    tree.mkdir("disk/state");
    ::chmod(tree.path("disk/state").c_str(), 0700);
    // The same modes as the harness's own folders (as root, jobs run as
    // another uid and must still reach their worktree).
    for (const char* folder : {"work", "work/repo"}) {
      struct stat original {};
      ::stat(tree.path(folder).c_str(), &original);
      ::chmod(tree.path(std::string("disk/") + folder).c_str(), original.st_mode & 07777);
    }
    for (const char* folder : {"work", "state"}) {
      const std::string source = disk + "/" + folder;
      const std::string target = tree.path(folder);
      if (::mount(source.c_str(), target.c_str(), nullptr, MS_BIND, nullptr) != 0) {
        ADD_FAILURE() << "bind " << source << " on " << target << ": " << std::strerror(errno);
        return;
      }
      mounted_.push_back(target);
    }
    ::umount2(disk.c_str(), MNT_DETACH);
  }
  ~SmallDisk() {
    for (const std::string& target : mounted_)
      ::umount2(target.c_str(), MNT_DETACH);
  }
  SmallDisk(const SmallDisk&) = delete;
  SmallDisk& operator=(const SmallDisk&) = delete;

  bool ready() const { return mounted_.size() == 2; }
  // Free bytes on the disk, as a job sees them.
  std::uint64_t free_bytes() const {
    struct statvfs info {};
    if (::statvfs(daemon_.worktree().c_str(), &info) != 0) return 0;
    return static_cast<std::uint64_t>(info.f_bavail) * info.f_frsize;
  }
  std::uint64_t free_inodes() const {
    struct statvfs info {};
    if (::statvfs(daemon_.worktree().c_str(), &info) != 0) return 0;
    return info.f_favail;
  }

 private:
  DaemonHarness& daemon_;
  std::vector<std::string> mounted_;
};

std::string text_of(const json& result) {
  std::string text = result.dump();
  if (result.contains("output") && result["output"].is_object()) {
    for (const char* field : {"stdout", "stderr"}) {
      if (result["output"].contains(field) && result["output"][field].is_string()) {
        text += "\n" + result["output"][field].get<std::string>();
      }
    }
  }
  return text;
}

// `PRAGMA integrity_check` of the database, read only; "ok" when healthy.
std::string integrity_check(const std::string& path) {
  sqlite3* db = nullptr;
  if (sqlite3_open_v2(path.c_str(), &db, SQLITE_OPEN_READONLY, nullptr) != SQLITE_OK) {
    const std::string message = db != nullptr ? sqlite3_errmsg(db) : "cannot open";
    sqlite3_close(db);
    return message;
  }
  std::string verdict;
  sqlite3_stmt* statement = nullptr;
  if (sqlite3_prepare_v2(db, "PRAGMA integrity_check", -1, &statement, nullptr) == SQLITE_OK) {
    while (sqlite3_step(statement) == SQLITE_ROW) {
      const auto* row = reinterpret_cast<const char*>(sqlite3_column_text(statement, 0));
      if (!verdict.empty()) verdict += "\n";
      verdict += row != nullptr ? row : "";
    }
  } else {
    verdict = sqlite3_errmsg(db);
  }
  sqlite3_finalize(statement);
  sqlite3_close(db);
  return verdict;
}

class DiskFull : public ::testing::Test {
 protected:
  static void SetUpTestSuite() { enter_private_mount_namespace(); }

  // The lanes' /tmp is capped at 4 MiB; `build` (the heavy lane) echoes.
  DiskFull() : daemon_(DaemonOptions{"[commands]\nbuild = \"echo built\"\n", {}, {}}) {
    std::string toml = daemon_.tree().read("config/loopr.toml");
    toml.replace(toml.find("[sandbox]\n"), 10, "[sandbox]\ntmp_size_mb = 4\n");
    daemon_.tree().write("config/loopr.toml", toml);
  }

  void SetUp() override {
    ASSERT_FALSE(HasFatalFailure());
    disk_ = std::make_unique<SmallDisk>(daemon_, 16, 2048);
    ASSERT_TRUE(disk_->ready());
    daemon_.start();
    ASSERT_FALSE(HasFatalFailure());
    pid_ = daemon_.pid();
    // looprd runs as this process's own uid (not as 0 of a user namespace).
    struct stat proc {};
    ASSERT_EQ(::stat(("/proc/" + std::to_string(pid_)).c_str(), &proc), 0);
    EXPECT_EQ(proc.st_uid, ::geteuid());
  }

  // What every test ends with: looprd is the same process and answers; it
  // stops cleanly; the database is intact; every call is stored or, if the
  // store could not take it, named in the log.
  void TearDown() override {
    if (!daemon_.running()) return;
    EXPECT_EQ(daemon_.pid(), pid_);
    EXPECT_EQ(daemon_.call("ping")["pong"], true);
    const int status = daemon_.stop(SIGTERM);
    EXPECT_TRUE(WIFEXITED(status) && WEXITSTATUS(status) == 0)
        << "looprd ended with status " << status << ":\n"
        << daemon_.log();
    const std::string log = daemon_.log();
    if (store_was_full_) {
      // The fills ran the store out of room too: its failed writes were
      // logged with SQLite's reason, and looprd went on.
      EXPECT_NE(log.find("database or disk is full"), std::string::npos) << log;
    }
    EXPECT_EQ(integrity_check(daemon_.state_dir() + "/loopr.db"), "ok");

    auto store = store::Store::open(daemon_.state_dir());
    auto recent = store.recent_tool_calls(store::kMaxRecentToolCalls);
    ASSERT_TRUE(recent) << recent.error().message;
    std::set<std::string> stored;
    for (const auto& record : *recent)
      stored.insert(record.call_id);
    for (const std::string& id : must_be_stored_) {
      EXPECT_TRUE(stored.contains(id)) << "call " << id << " made while there was space is lost";
    }
    for (const std::string& id : may_be_unrecorded_) {
      if (stored.contains(id)) continue;
      EXPECT_NE(log.find("cannot record call " + id + " "), std::string::npos)
          << "call " << id << " is neither stored nor reported as not recorded:\n"
          << log;
    }
    disk_.reset();
  }

  // A call made while the disk has room: it must reach the store.
  json tool(const std::string& name, json args) {
    json result = daemon_.tool(name, std::move(args));
    if (result.contains("call_id")) must_be_stored_.push_back(result["call_id"]);
    return result;
  }
  // A call made while the disk may be full: stored, or logged as not stored.
  json tool_while_full(const std::string& name, json args) {
    json result = daemon_.tool(name, std::move(args));
    if (result.contains("call_id")) may_be_unrecorded_.push_back(result["call_id"]);
    return result;
  }

  // The disk is full: a command that needs room fails with ENOSPC.
  void expect_disk_full() {
    EXPECT_LT(disk_->free_bytes(), 64u * 1024) << "the disk still has room";
    store_was_full_ = true;
    const json probe = tool_while_full("run_command_isolated",
                                       {{"command", "head -c 1048576 /dev/zero > probe.bin"}});
    EXPECT_NE(probe["output"]["exit_code"], 0) << probe.dump();
    EXPECT_NE(text_of(probe).find(kDiskFull), std::string::npos) << probe.dump();
  }

  // While full: looprd answers, reads work, the other lanes run commands.
  void expect_still_working() {
    EXPECT_EQ(daemon_.pid(), pid_);
    EXPECT_EQ(daemon_.call("ping")["pong"], true);
    const json read = tool_while_full("read_file", {{"path", "kept.txt"}});
    EXPECT_EQ(read["ok"], true) << read.dump();
    EXPECT_NE(read.dump().find("kept before the fill"), std::string::npos) << read.dump();
    const json net = tool_while_full("run_command", {{"command", "echo net lane"}});
    EXPECT_EQ(net["ok"], true) << net.dump();
    EXPECT_EQ(net["output"]["stdout"], "net lane\n") << net.dump();
    const json heavy = tool_while_full("build", json::object());
    EXPECT_EQ(heavy["ok"], true) << heavy.dump();
    EXPECT_EQ(heavy["output"]["stdout"], "built\n") << heavy.dump();
  }

  // Frees the disk by `command` (rm through run_command) and proves calls
  // are recorded again: the next calls must reach the store.
  void free_and_expect_recovery(const std::string& command) {
    const json freed = tool_while_full("run_command_isolated", {{"command", command}});
    EXPECT_EQ(freed["output"]["exit_code"], 0) << freed.dump();
    EXPECT_GT(disk_->free_bytes(), 4u << 20) << "the space did not come back";
    for (int i = 0; i < 3; ++i) {
      const json read = tool("read_file", {{"path", "kept.txt"}});
      EXPECT_EQ(read["ok"], true) << read.dump();
    }
    const json written =
        tool("write_file",
             {{"path", "after-" + std::to_string(++recoveries_) + ".txt"}, {"content", "after\n"}});
    EXPECT_EQ(written["ok"], true) << written.dump();
  }

  // Calls made before any fill.
  void write_kept_file() {
    const json kept =
        tool("write_file", {{"path", "kept.txt"}, {"content", "kept before the fill\n"}});
    ASSERT_EQ(kept["ok"], true) << kept.dump();
    ASSERT_EQ(tool("read_file", {{"path", "kept.txt"}})["ok"], true);
  }

  DaemonHarness daemon_;
  std::unique_ptr<SmallDisk> disk_;
  pid_t pid_ = -1;
  int recoveries_ = 0;
  bool store_was_full_ = false;
  std::vector<std::string> must_be_stored_;
  std::vector<std::string> may_be_unrecorded_;
};

// write_file of one big content: the write that does not fit fails with an
// io error naming the full disk and a hint, and leaves no partial file.
TEST_F(DiskFull, OneBigWriteFileSaysTheDiskIsFull) {
  write_kept_file();
  const std::string big(std::size_t{6} << 20, 'x');
  json failed;
  for (int i = 0; i < 4 && failed.is_null(); ++i) {
    const json result =
        tool_while_full("write_file", {{"path", "big" + std::to_string(i)}, {"content", big}});
    if (result["ok"] != true) failed = result;
  }
  ASSERT_FALSE(failed.is_null()) << "three 6 MiB files fit on a 16 MiB disk";
  EXPECT_EQ(failed["status"], "failed") << failed.dump();
  EXPECT_EQ(failed["error"]["code"], "io") << failed.dump();
  EXPECT_NE(failed["error"]["message"].get<std::string>().find(kDiskFull), std::string::npos)
      << failed.dump();
  EXPECT_NE(failed["error"].value("hint", "").find("full"), std::string::npos) << failed.dump();
  // The temporary file beside the target was removed.
  const json hidden = tool_while_full("run_command_isolated", {{"command", "ls -A"}});
  EXPECT_EQ(hidden["output"]["stdout"].get<std::string>().find(".loopr-"), std::string::npos)
      << hidden.dump();
  // Fill what is left, then the disk is full for everyone.
  tool_while_full("run_command_isolated", {{"command", "cat /dev/zero > rest"}});
  expect_disk_full();
  expect_still_working();
  for (int i = 0; i < 3; ++i) {
    const json deleted = tool_while_full("file_delete", {{"path", "big" + std::to_string(i)}});
    EXPECT_TRUE(deleted["ok"] == true || deleted["error"]["code"] == "not_found") << deleted.dump();
  }
  free_and_expect_recovery("rm -f rest probe.bin");
}

// A file per call: write_file of 1 MiB files until one does not fit.
TEST_F(DiskFull, AFilePerCallSaysTheDiskIsFull) {
  write_kept_file();
  const std::string chunk(std::size_t{1} << 20, 'y');
  json failed;
  for (int i = 0; i < 32 && failed.is_null(); ++i) {
    const json result = tool_while_full(
        "write_file", {{"path", "chunks/c" + std::to_string(i)}, {"content", chunk}});
    if (result["ok"] != true) failed = result;
  }
  ASSERT_FALSE(failed.is_null()) << "32 MiB fit on a 16 MiB disk";
  EXPECT_EQ(failed["error"]["code"], "io") << failed.dump();
  EXPECT_NE(failed["error"]["message"].get<std::string>().find(kDiskFull), std::string::npos)
      << failed.dump();
  tool_while_full("run_command_isolated", {{"command", "cat /dev/zero > rest"}});
  expect_disk_full();
  expect_still_working();
  free_and_expect_recovery("rm -rf chunks rest probe.bin");
}

// Commands: dd, `yes > f`, many small files (the inodes run out). Each fill
// is reported in stderr with a note saying what to do, and freed again.
TEST_F(DiskFull, CommandsThatFillTheDiskAreToldSo) {
  write_kept_file();
  struct Fill {
    const char* tool;
    const char* command;
    const char* cleanup;
    bool inodes;  // the fill uses up inodes, not blocks
  };
  const Fill fills[] = {
      {"run_command_isolated", "dd if=/dev/zero of=fill.bin bs=1M count=64", "rm -f fill.bin",
       false},
      {"run_command", "yes > yes.txt", "rm -f yes.txt", false},
      {"run_command_isolated",
       "mkdir -p many && cd many && i=0; while : > f$i; do i=$((i+1)); done", "rm -rf many", true},
  };
  for (const Fill& fill : fills) {
    SCOPED_TRACE(fill.command);
    const json result = tool_while_full(fill.tool, {{"command", fill.command}});
    EXPECT_EQ(result["ok"], true) << result.dump();
    EXPECT_NE(result["output"]["exit_code"], 0) << result.dump();
    EXPECT_NE(text_of(result).find(kDiskFull), std::string::npos) << result.dump();
    EXPECT_NE(result["output"].value("disk_note", "").find("full"), std::string::npos)
        << result.dump();
    if (fill.inodes) {
      EXPECT_EQ(disk_->free_inodes(), 0u);
    } else {
      expect_disk_full();
    }
    expect_still_working();
    free_and_expect_recovery(fill.cleanup);
  }
}

// The lane's /tmp is a tmpfs of its own ([sandbox] tmp_size_mb): filling it
// is reported the same way and does not touch the worktree's disk.
TEST_F(DiskFull, FillingTmpIsReportedAndTheWorktreeKeepsItsRoom) {
  write_kept_file();
  const std::uint64_t before = disk_->free_bytes();
  const json result =
      tool_while_full("run_command_isolated", {{"command", "dd if=/dev/zero of=/tmp/fill bs=1M"}});
  EXPECT_NE(result["output"]["exit_code"], 0) << result.dump();
  EXPECT_NE(text_of(result).find(kDiskFull), std::string::npos) << result.dump();
  EXPECT_NE(result["output"].value("disk_note", "").find("/tmp"), std::string::npos)
      << result.dump();
  EXPECT_GT(disk_->free_bytes() + (1u << 20), before);
  expect_still_working();
  tool_while_full("run_command_isolated", {{"command", "rm -f /tmp/fill"}});
  free_and_expect_recovery("true");
}

}  // namespace
}  // namespace loopr::test
