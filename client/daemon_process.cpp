#include "client/daemon_process.hpp"

#include <fcntl.h>
#include <limits.h>
#include <spawn.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <csignal>
#include <cstring>
#include <filesystem>

#include "common/unique_fd.hpp"

extern char** environ;

namespace loopr::client {
namespace {

namespace fs = std::filesystem;

// posix_spawn's attributes and file actions, destroyed on every path.
class SpawnSetup {
 public:
  SpawnSetup() {
    attributes_ok_ = ::posix_spawnattr_init(&attributes_) == 0;
    actions_ok_ = ::posix_spawn_file_actions_init(&actions_) == 0;
  }
  ~SpawnSetup() {
    if (attributes_ok_) ::posix_spawnattr_destroy(&attributes_);
    if (actions_ok_) ::posix_spawn_file_actions_destroy(&actions_);
  }
  SpawnSetup(const SpawnSetup&) = delete;
  SpawnSetup& operator=(const SpawnSetup&) = delete;

  bool ok() const { return attributes_ok_ && actions_ok_; }
  posix_spawnattr_t* attributes() { return &attributes_; }
  posix_spawn_file_actions_t* actions() { return &actions_; }

 private:
  posix_spawnattr_t attributes_{};
  posix_spawn_file_actions_t actions_{};
  bool attributes_ok_ = false;
  bool actions_ok_ = false;
};

}  // namespace

Result<std::string> sibling_executable(const std::string& name) {
  char self[PATH_MAX];
  const ssize_t n = ::readlink("/proc/self/exe", self, sizeof self - 1);
  if (n <= 0) return errno_error(errno, "readlink", "/proc/self/exe");
  if (static_cast<std::size_t>(n) >= sizeof self - 1) {
    return make_error(errc::too_large, "the path of this program is too long to read");
  }
  return (fs::path(std::string(self, static_cast<std::size_t>(n))).parent_path() / name).string();
}

Result<std::string> locate_looprd(const std::string& explicit_path) {
  std::string path;
  if (!explicit_path.empty()) {
    std::error_code error;
    path = fs::absolute(explicit_path, error).lexically_normal().string();
    if (error) return errno_error(error.value(), "resolve", explicit_path);
  } else {
    auto sibling = sibling_executable("looprd");
    if (!sibling) return sibling;
    path = *sibling;
  }
  if (::access(path.c_str(), X_OK) != 0) {
    return make_error(errc::not_found, "cannot run looprd at " + path + ": " + std::strerror(errno),
                      explicit_path.empty()
                          ? "looprctl looks for looprd next to itself; pass --looprd PATH"
                          : "pass --looprd with the path of an executable looprd");
  }
  return path;
}

Result<pid_t> spawn_detached(const std::vector<std::string>& argv, const std::string& log_path) {
  if (argv.empty()) return make_error(errc::internal, "spawn_detached: no program");
  SpawnSetup setup;
  if (!setup.ok()) return errno_error(ENOMEM, "posix_spawn setup", argv.front());

  sigset_t none;
  sigemptyset(&none);
  sigset_t defaults;
  sigemptyset(&defaults);
  for (const int sig : {SIGPIPE, SIGINT, SIGTERM, SIGHUP, SIGCHLD})
    sigaddset(&defaults, sig);
  int rc = ::posix_spawnattr_setflags(
      setup.attributes(),
      static_cast<short>(POSIX_SPAWN_SETSID | POSIX_SPAWN_SETSIGMASK | POSIX_SPAWN_SETSIGDEF));
  if (rc == 0) rc = ::posix_spawnattr_setsigmask(setup.attributes(), &none);
  if (rc == 0) rc = ::posix_spawnattr_setsigdefault(setup.attributes(), &defaults);
  if (rc == 0)
    rc =
        ::posix_spawn_file_actions_addopen(setup.actions(), STDIN_FILENO, "/dev/null", O_RDONLY, 0);
  if (rc == 0) {
    rc = ::posix_spawn_file_actions_addopen(setup.actions(), STDOUT_FILENO, log_path.c_str(),
                                            O_WRONLY | O_CREAT | O_APPEND, 0600);
  }
  if (rc == 0)
    rc = ::posix_spawn_file_actions_adddup2(setup.actions(), STDOUT_FILENO, STDERR_FILENO);
  if (rc == 0) rc = ::posix_spawn_file_actions_addchdir_np(setup.actions(), "/");
  if (rc != 0) return errno_error(rc, "prepare to start", argv.front());

  std::vector<char*> raw;
  raw.reserve(argv.size() + 1);
  for (const std::string& arg : argv)
    raw.push_back(const_cast<char*>(arg.c_str()));
  raw.push_back(nullptr);
  pid_t pid = -1;
  rc = ::posix_spawn(&pid, argv.front().c_str(), setup.actions(), setup.attributes(), raw.data(),
                     environ);
  if (rc != 0) return errno_error(rc, "start", argv.front());
  return pid;
}

std::optional<std::string> exit_description(pid_t pid) {
  int status = 0;
  pid_t reaped;
  do {
    reaped = ::waitpid(pid, &status, WNOHANG);
  } while (reaped < 0 && errno == EINTR);
  if (reaped == 0) return std::nullopt;
  if (reaped < 0) return std::string("is gone (") + std::strerror(errno) + ")";
  if (WIFEXITED(status)) return "exited with status " + std::to_string(WEXITSTATUS(status));
  if (WIFSIGNALED(status)) return "was killed by signal " + std::to_string(WTERMSIG(status));
  return std::string("stopped");
}

std::uint64_t file_size(const std::string& path) {
  struct stat info {};
  if (::stat(path.c_str(), &info) != 0) return 0;
  return static_cast<std::uint64_t>(info.st_size);
}

std::string file_tail(const std::string& path, std::uint64_t from, std::size_t max_lines,
                      std::size_t max_bytes) {
  UniqueFd fd(::open(path.c_str(), O_RDONLY | O_CLOEXEC));
  struct stat info {};
  if (!fd || ::fstat(fd.get(), &info) != 0) return {};
  const auto size = static_cast<std::uint64_t>(info.st_size);
  if (size <= from) return {};
  const std::uint64_t start =
      std::max<std::uint64_t>(from, size > max_bytes ? size - max_bytes : 0);
  std::string text(static_cast<std::size_t>(size - start), '\0');
  std::size_t done = 0;
  while (done < text.size()) {
    const ssize_t n =
        ::pread(fd.get(), text.data() + done, text.size() - done, static_cast<off_t>(start + done));
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0) break;
    done += static_cast<std::size_t>(n);
  }
  text.resize(done);
  // Keep the last max_lines lines (a final newline does not start a line).
  std::size_t end = text.size();
  if (end > 0 && text[end - 1] == '\n') --end;
  std::size_t begin = end;
  for (std::size_t lines = 0; begin > 0; --begin) {
    if (text[begin - 1] == '\n' && ++lines == max_lines) break;
  }
  return text.substr(begin);
}

}  // namespace loopr::client
