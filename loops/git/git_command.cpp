#include "loops/git/git_command.hpp"

#include <fcntl.h>
#include <poll.h>
#include <spawn.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <array>
#include <cerrno>
#include <csignal>
#include <cstdlib>
#include <cstring>
#include <set>
#include <string_view>

#include "common/output_capture.hpp"
#include "common/spawn_attributes.hpp"
#include "common/unique_fd.hpp"
#include "loops/git/git_support.hpp"

extern char** environ;

namespace loopr::loops {

// Each entry switches off one way a config file (the repository's, a
// worktree's config.worktree, an include) could make git run a program or
// reach the network. Command-line config wins over every file.
const std::vector<std::pair<std::string, std::string>>& git_hardening_config() {
  static const std::vector<std::pair<std::string, std::string>> config = {
      {"core.hooksPath", "/dev/null"},       // no hook runs: /dev/null/<hook> never exists
      {"core.fsmonitor", "false"},           // no fsmonitor hook, no fsmonitor daemon
      {"core.untrackedCache", "false"},      //
      {"core.sshCommand", "false"},          // fail closed if ssh were ever reached
      {"core.pager", "cat"},                 // also --no-pager, and stdout is never a tty
      {"core.editor", "true"},               // commits always pass --message
      {"core.askPass", ""},                  //
      {"core.attributesFile", "/dev/null"},  // only the repository's own attributes
      {"core.excludesFile", "/dev/null"},    // what is committed does not depend on $HOME
      {"credential.helper", ""},             // empty resets the helper list
      {"diff.external", ""},  // an empty command fails closed; diffs pass --no-ext-diff
      {"gpg.program", "false"},
      {"gpg.openpgp.program", "false"},
      {"gpg.x509.program", "false"},
      {"gpg.ssh.program", "false"},
      {"gpg.ssh.defaultKeyCommand", "false"},
      {"commit.gpgSign", "false"},
      {"tag.gpgSign", "false"},
      {"log.showSignature", "false"},
      {"protocol.allow", "never"},  // with GIT_ALLOW_PROTOCOL= in the environment
      {"submodule.recurse", "false"},
      {"status.submoduleSummary", "false"},
      {"diff.submodule", "short"},
      {"gc.auto", "0"},  // no auto gc (and its detached child) after a commit
      {"maintenance.auto", "false"},
      {"color.ui", "false"},
  };
  return config;
}

namespace {

constexpr std::string_view kSafePath = "/usr/bin:/bin";
constexpr std::chrono::milliseconds kExitGrace{2000};
constexpr std::size_t kStderrInErrors = 2000;

using detail::is_absolute;

Result<void> require_folder(const std::string& path, std::string_view what) {
  if (!is_absolute(path)) {
    return make_error(errc::invalid_arguments,
                      std::string(what) + " must be an absolute path, got '" + path + "'");
  }
  struct stat info {};
  if (::stat(path.c_str(), &info) != 0) return errno_error(errno, "inspect", path);
  if (!S_ISDIR(info.st_mode)) {
    return make_error(errc::not_directory, std::string(what) + " " + path + " is not a folder");
  }
  return {};
}

// Names of the drivers of `section` ("filter" or "merge") defined in
// `git config --null --name-only` output: "<section>.<driver>.<key>\0..."
// (the driver may itself contain dots).
std::vector<std::string> parse_drivers(std::string_view listing, std::string_view section) {
  std::set<std::string> drivers;
  while (!listing.empty()) {
    const std::size_t end = std::min(listing.find('\0'), listing.size());
    std::string_view name = listing.substr(0, end);
    listing.remove_prefix(std::min(end + 1, listing.size()));
    if (name.size() <= section.size() + 1 || name.substr(0, section.size()) != section ||
        name[section.size()] != '.') {
      continue;
    }
    name.remove_prefix(section.size() + 1);
    const std::size_t dot = name.rfind('.');
    if (dot == std::string_view::npos || dot == 0) continue;  // "merge.<key>": no driver
    drivers.emplace(name.substr(0, dot));
  }
  return {drivers.begin(), drivers.end()};
}

std::string stderr_tail(const std::string& err) {
  std::string_view text = err;
  if (text.size() > kStderrInErrors) text.remove_prefix(text.size() - kStderrInErrors);
  while (!text.empty() && (text.back() == '\n' || text.back() == ' '))
    text.remove_suffix(1);
  return std::string(text);
}

std::string subcommand_of(const std::vector<std::string>& args) {
  if (args.empty()) return "git";
  std::string name = "git " + args[0];
  if ((args[0] == "worktree" || args[0] == "config") && args.size() > 1) name += " " + args[1];
  return name;
}

std::vector<char*> c_strings(std::vector<std::string>& strings) {
  std::vector<char*> pointers;
  pointers.reserve(strings.size() + 1);
  for (std::string& s : strings)
    pointers.push_back(s.data());
  pointers.push_back(nullptr);
  return pointers;
}

int remaining_ms(std::chrono::steady_clock::time_point until) {
  const auto left = std::chrono::duration_cast<std::chrono::milliseconds>(
      until - std::chrono::steady_clock::now());
  return static_cast<int>(std::clamp<std::chrono::milliseconds::rep>(left.count(), 0, 60'000));
}

// Reads what is available; returns false once the pipe is at EOF or broken.
bool drain(int fd, OutputCapture& capture) {
  std::array<char, 65536> buffer{};
  while (true) {
    const ssize_t n = ::read(fd, buffer.data(), buffer.size());
    if (n > 0) {
      capture.append(std::string_view(buffer.data(), static_cast<std::size_t>(n)));
      continue;
    }
    if (n == 0) return false;
    if (errno == EINTR) continue;
    return errno == EAGAIN || errno == EWOULDBLOCK;
  }
}

struct SpawnedGit {
  pid_t pid = -1;
  UniqueFd out;
  UniqueFd err;
};

// posix_spawn (vfork-like clone in glibc: safe from any thread) with fds
// 0-2 only, a fresh process group, default signal dispositions, an empty
// signal mask, and `cwd` as working directory.
Result<SpawnedGit> spawn_git(const std::string& executable, std::vector<std::string> argv,
                             std::vector<std::string> env, const std::string& cwd) {
  int out_pipe[2];
  int err_pipe[2];
  if (::pipe2(out_pipe, O_CLOEXEC) != 0) return errno_error(errno, "create a pipe for", "git");
  UniqueFd out_read(out_pipe[0]);
  UniqueFd out_write(out_pipe[1]);
  if (::pipe2(err_pipe, O_CLOEXEC) != 0) return errno_error(errno, "create a pipe for", "git");
  UniqueFd err_read(err_pipe[0]);
  UniqueFd err_write(err_pipe[1]);

  posix_spawn_file_actions_t actions;
  posix_spawnattr_t attributes;
  if (::posix_spawn_file_actions_init(&actions) != 0) {
    return make_error(errc::internal, "posix_spawn_file_actions_init failed");
  }
  if (::posix_spawnattr_init(&attributes) != 0) {
    ::posix_spawn_file_actions_destroy(&actions);
    return make_error(errc::internal, "posix_spawnattr_init failed");
  }
  int rc = ::posix_spawn_file_actions_addopen(&actions, 0, "/dev/null", O_RDONLY, 0);
  if (rc == 0) rc = ::posix_spawn_file_actions_adddup2(&actions, out_write.get(), 1);
  if (rc == 0) rc = ::posix_spawn_file_actions_adddup2(&actions, err_write.get(), 2);
  if (rc == 0) rc = ::posix_spawn_file_actions_addchdir_np(&actions, cwd.c_str());
  // Nothing beyond 0-2 reaches git, even an fd another library opened
  // without O_CLOEXEC (glibc 2.34+).
  if (rc == 0) rc = ::posix_spawn_file_actions_addclosefrom_np(&actions, 3);
  if (rc == 0) rc = own_group_default_signals(attributes);

  pid_t pid = -1;
  if (rc == 0) {
    std::vector<char*> argv_c = c_strings(argv);
    std::vector<char*> env_c = c_strings(env);
    rc =
        ::posix_spawn(&pid, executable.c_str(), &actions, &attributes, argv_c.data(), env_c.data());
  }
  ::posix_spawn_file_actions_destroy(&actions);
  ::posix_spawnattr_destroy(&attributes);
  if (rc != 0) {
    Error error = errno_error(rc, "start git in", cwd);
    error.hint = "check that " + executable + " runs and that the folder exists";
    return error;
  }
  for (int fd : {out_read.get(), err_read.get()}) {
    const int flags = ::fcntl(fd, F_GETFL);
    ::fcntl(fd, F_SETFL, flags | O_NONBLOCK);
  }
  SpawnedGit spawned;
  spawned.pid = pid;
  spawned.out = std::move(out_read);
  spawned.err = std::move(err_read);
  return spawned;
}

// Whether `pid` has exited, without reaping it: while it is an unreaped
// zombie its pid (and process group id) cannot be reused, so killing the
// group afterwards cannot hit an unrelated process.
bool has_exited(pid_t pid) {
  siginfo_t info{};
  while (::waitid(P_PID, static_cast<id_t>(pid), &info, WEXITED | WNOHANG | WNOWAIT) != 0) {
    if (errno != EINTR) return true;  // ECHILD: nothing left to wait for
  }
  return info.si_pid == pid;
}

// The child's wait status, or -1 if it cannot be had (ECHILD: someone set
// SIGCHLD to SIG_IGN, and the kernel reaped it).
int reap(pid_t pid) {
  int status = 0;
  while (::waitpid(pid, &status, 0) < 0) {
    if (errno != EINTR) return -1;
  }
  return status;
}

}  // namespace

Result<std::string> git_executable() {
  static const std::string found = [] {
    for (const char* candidate : {"/usr/bin/git", "/bin/git", "/usr/local/bin/git"}) {
      if (::access(candidate, X_OK) == 0) return std::string(candidate);
    }
    return std::string();
  }();
  if (found.empty()) {
    return make_error(errc::not_found,
                      "git is not installed (looked for /usr/bin/git, /bin/git, "
                      "/usr/local/bin/git)",
                      "install git (apt-get install git)");
  }
  return found;
}

Error git_failure(const std::vector<std::string>& args, const GitResult& result) {
  std::string message = subcommand_of(args) + " failed (";
  message += result.exit_code >= 0 ? "exit " + std::to_string(result.exit_code)
                                   : "killed by signal " + std::to_string(result.term_signal);
  message += ")";
  const std::string tail = stderr_tail(result.err);
  if (!tail.empty()) message += ": " + tail;
  return make_error(errc::io, std::move(message));
}

Result<GitCommand> GitCommand::bind(GitTarget target) {
  if (auto ok = require_folder(target.git_dir, "the git dir"); !ok) return std::move(ok).error();
  if (!target.work_tree.empty()) {
    if (auto ok = require_folder(target.work_tree, "the work tree"); !ok) {
      return std::move(ok).error();
    }
  }
  Result<std::string> executable = git_executable();
  if (!executable) return std::move(executable).error();

  GitCommand unbound(std::move(target), std::move(*executable));
  const std::vector<std::string> list = {"config", "--null", "--name-only", "--get-regexp",
                                         "^(filter|merge)\\."};
  GitRunOptions options;
  options.read_only = true;
  options.timeout = std::chrono::milliseconds(30'000);
  Result<GitResult> listed = unbound.run(list, options);
  if (!listed) return std::move(listed).error();
  // Exit 1: no filter.* or merge.* key at all.
  if (listed->exit_code != 0 && listed->exit_code != 1) return git_failure(list, *listed);
  if (listed->out_truncated) {
    return make_error(errc::too_large,
                      "the repository's config defines too many filter or merge drivers");
  }
  unbound.filter_drivers_ = parse_drivers(listed->out, "filter");
  unbound.merge_drivers_ = parse_drivers(listed->out, "merge");
  return unbound;
}

std::vector<std::string> GitCommand::argv(const std::vector<std::string>& args,
                                          const GitRunOptions& options) const {
  std::vector<std::string> argv;
  argv.reserve(2 + 2 * (git_hardening_config().size() + options.config.size()) + args.size());
  argv.push_back(executable_);
  argv.emplace_back("--no-pager");
  for (const auto& [key, value] : git_hardening_config()) {
    argv.emplace_back("-c");
    argv.push_back(key + "=" + value);
  }
  for (const auto& [key, value] : options.config) {
    argv.emplace_back("-c");
    argv.push_back(key + "=" + value);
  }
  argv.insert(argv.end(), args.begin(), args.end());
  return argv;
}

std::vector<std::string> GitCommand::environment(const GitRunOptions& options) const {
  std::vector<std::string> env;
  env.push_back("PATH=" + std::string(kSafePath));
  for (const char* name : {"HOME", "LANG", "TZ"}) {
    if (const char* value = std::getenv(name)) env.push_back(std::string(name) + "=" + value);
  }
  for (char** entry = environ; entry != nullptr && *entry != nullptr; ++entry) {
    const std::string_view variable(*entry);
    if (variable.substr(0, 3) == "LC_" && variable.find('=') != std::string_view::npos) {
      env.emplace_back(variable);
    }
  }
  env.push_back("GIT_DIR=" + target_.git_dir);
  if (!target_.work_tree.empty()) env.push_back("GIT_WORK_TREE=" + target_.work_tree);
  env.emplace_back("GIT_CONFIG_NOSYSTEM=1");
  env.emplace_back("GIT_CONFIG_SYSTEM=/dev/null");
  env.emplace_back("GIT_CONFIG_GLOBAL=/dev/null");
  env.emplace_back("GIT_ATTR_NOSYSTEM=1");
  env.emplace_back("GIT_TERMINAL_PROMPT=0");
  env.emplace_back("GIT_ALLOW_PROTOCOL=");
  env.emplace_back("GIT_NO_LAZY_FETCH=1");
  env.emplace_back("GIT_LITERAL_PATHSPECS=1");
  if (options.read_only) env.emplace_back("GIT_OPTIONAL_LOCKS=0");
  if (!options.index_file.empty()) env.push_back("GIT_INDEX_FILE=" + options.index_file);
  if (!filter_drivers_.empty() || !merge_drivers_.empty()) {
    std::size_t n = 0;
    auto add = [&](const std::string& key, const char* value) {
      env.push_back("GIT_CONFIG_KEY_" + std::to_string(n) + "=" + key);
      env.push_back("GIT_CONFIG_VALUE_" + std::to_string(n) + "=" + value);
      ++n;
    };
    for (const std::string& driver : filter_drivers_) {
      add("filter." + driver + ".clean", "");
      add("filter." + driver + ".smudge", "");
      add("filter." + driver + ".process", "");
      add("filter." + driver + ".required", "false");
    }
    for (const std::string& driver : merge_drivers_) {
      add("merge." + driver + ".driver", "false");  // exits 1: the file is in conflict
    }
    env.push_back("GIT_CONFIG_COUNT=" + std::to_string(n));
  }
  return env;
}

Result<GitResult> GitCommand::run(const std::vector<std::string>& args,
                                  const GitRunOptions& options) const {
  for (const auto& [key, value] : options.config) {
    if (key.empty() || key.find('=') != std::string::npos) {
      return make_error(errc::internal, "git config key '" + key + "' is not valid for -c");
    }
  }
  for (const std::string& arg : args) {
    if (arg.find('\0') != std::string::npos) {
      return make_error(errc::invalid_arguments, "a git argument contains a NUL byte");
    }
  }
  const std::string cwd = target_.work_tree.empty() ? std::string("/") : target_.work_tree;
  Result<SpawnedGit> spawned =
      spawn_git(executable_, argv(args, options), environment(options), cwd);
  if (!spawned) return std::move(spawned).error();
  const pid_t pid = spawned->pid;

  // pidfd (Linux 5.3+) tells us the moment git exits even while something it
  // started still holds the pipes; without it we poll waitid in short slices.
  UniqueFd pidfd(static_cast<int>(::syscall(SYS_pidfd_open, pid, 0)));

  OutputCapture out(options.output_cap);
  OutputCapture err(options.output_cap);
  const auto deadline = std::chrono::steady_clock::now() + options.timeout;
  auto grace_end = deadline;
  bool out_open = true;
  bool err_open = true;
  bool exited = false;
  bool timed_out = false;
  while (out_open || err_open || !exited) {
    if (!exited && !pidfd && has_exited(pid)) {
      exited = true;
      ::kill(-pid, SIGKILL);  // whatever git left in its group
      grace_end = std::min(deadline, std::chrono::steady_clock::now() + kExitGrace);
      continue;
    }
    const auto until = exited ? grace_end : deadline;
    int wait_ms = remaining_ms(until);
    if (wait_ms == 0) {
      timed_out = !exited;
      break;  // after exit: a process outside the group still holds a pipe; stop reading
    }
    if (!pidfd && !exited) wait_ms = std::min(wait_ms, 20);

    std::array<pollfd, 3> fds{};
    nfds_t count = 0;
    if (out_open) fds[count++] = {spawned->out.get(), POLLIN, 0};
    if (err_open) fds[count++] = {spawned->err.get(), POLLIN, 0};
    if (pidfd && !exited) fds[count++] = {pidfd.get(), POLLIN, 0};
    const int ready = ::poll(fds.data(), count, wait_ms);
    if (ready < 0) {
      if (errno == EINTR) continue;
      const int saved = errno;
      ::kill(-pid, SIGKILL);
      reap(pid);
      return errno_error(saved, "wait for", subcommand_of(args));
    }
    for (nfds_t i = 0; i < count; ++i) {
      if (fds[i].revents == 0) continue;
      if (fds[i].fd == spawned->out.get()) {
        out_open = drain(fds[i].fd, out);
      } else if (fds[i].fd == spawned->err.get()) {
        err_open = drain(fds[i].fd, err);
      } else {
        exited = true;
        ::kill(-pid, SIGKILL);
        grace_end = std::min(deadline, std::chrono::steady_clock::now() + kExitGrace);
      }
    }
  }
  if (timed_out) ::kill(-pid, SIGKILL);
  const int status = reap(pid);

  if (timed_out) {
    return make_error(errc::timeout,
                      subcommand_of(args) + " did not finish within " +
                          std::to_string(options.timeout.count()) + " ms and was stopped",
                      "the worktree may hold very large files, or files git cannot read");
  }
  if (status == -1) {
    return make_error(errc::internal, "could not read the exit status of " + subcommand_of(args),
                      "the daemon must not set SIGCHLD to SIG_IGN");
  }
  GitResult result;
  if (WIFEXITED(status)) {
    result.exit_code = WEXITSTATUS(status);
  } else if (WIFSIGNALED(status)) {
    result.term_signal = WTERMSIG(status);
  }
  result.out_truncated = out.truncated();
  result.err_truncated = err.truncated();
  result.out = out.contents();
  result.err = err.contents();
  return result;
}

Result<std::string> GitCommand::output(const std::vector<std::string>& args,
                                       const GitRunOptions& options) const {
  Result<GitResult> result = run(args, options);
  if (!result) return std::move(result).error();
  if (!result->succeeded()) return git_failure(args, *result);
  return std::move(result->out);
}

std::vector<std::string_view> split_nul(std::string_view listing) {
  std::vector<std::string_view> records;
  while (!listing.empty()) {
    const std::size_t end = std::min(listing.find('\0'), listing.size());
    records.push_back(listing.substr(0, end));
    listing.remove_prefix(std::min(end + 1, listing.size()));
  }
  return records;
}

}  // namespace loopr::loops
