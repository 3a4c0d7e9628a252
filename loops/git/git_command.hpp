// GitCommand: runs one git command for the daemon, outside the sandbox, on a
// repository whose worktrees untrusted jobs write (SECURITY.md classes 4 and
// 27, DESIGN.md §7.8). Nothing a job wrote may make these calls run a program.
//
// How each call is hardened:
// - git is /usr/bin/git (or /bin/git, /usr/local/bin/git), started with
//   posix_spawn from an argv: never a shell, never the daemon's PATH.
// - stdin is /dev/null, stdout and stderr are pipes read into a capped
//   OutputCapture (head and tail kept); the child gets fds 0-2 only; it runs
//   in its own process group, which is SIGKILLed on timeout (and after git
//   exits, so nothing git started outlives the call).
// - The environment is built, not inherited: PATH=/usr/bin:/bin, HOME, LANG,
//   LC_* and TZ from the daemon, then GIT_DIR and GIT_WORK_TREE given
//   explicitly (git never discovers the repository from the worktree, whose
//   `.git` file a job may have replaced), GIT_CONFIG_NOSYSTEM=1,
//   GIT_CONFIG_GLOBAL=/dev/null, GIT_ATTR_NOSYSTEM=1, GIT_TERMINAL_PROMPT=0,
//   GIT_ALLOW_PROTOCOL= (empty: no transport at all, which also stops a lazy
//   fetch of a partial clone; GIT_NO_LAZY_FETCH=1 says so too to git 2.45+),
//   GIT_OPTIONAL_LOCKS=0 for read-only calls. No
//   GIT_* variable of the daemon reaches git.
// - Every call passes `-c` overrides (git_hardening_config()) that win over every
//   config file: hooks, fsmonitor, pager, editor, askpass, credential helpers,
//   external diff, signing programs, ssh command, protocols, submodule
//   recursion and auto gc are all off.
// - Filter drivers (`filter.<driver>.clean/smudge/process`) are named by
//   `.gitattributes`, which the job writes, and cannot be switched off by one
//   setting: bind() lists the drivers the repository's config defines (with
//   includes) and every call neutralises each one through GIT_CONFIG_KEY_<n>
//   (empty command, required=false), which git reads like `-c` but without
//   splitting a driver name that contains `=`.
// - Merge drivers (`merge.<driver>.driver`) are named the same way, and run
//   by any call that merges file contents (merge, cherry-pick, stash, checkout
//   -m): bind() lists them too and every call replaces each command by
//   `false`, so a file that names one comes out as a conflict (and every
//   file does when `merge.default` names one: it fails closed). The built-in
//   drivers (text, binary, union) run no program.
// - Diff drivers (`diff.<driver>.command/textconv`) are neutralised by the
//   caller passing --no-ext-diff and --no-textconv (Worktrees does).
//
// Residual risks, written down: the repository's own config is trusted (a
// user who points `include.path` at a job-writable file hands the job every
// setting this list does not override); a hostile worktree can still make git
// slow (huge files) — the timeout bounds that; a folder the job turns into a
// nested repository (`sub/.git`) is committed by `git add -A` as a gitlink,
// not as its files (data, not code: git never runs anything in it, and
// status/diff pass --ignore-submodules=dirty so no git process is started
// inside it). This list is written against git 2.39 (Debian 12): a newer git
// may add config that runs programs (e.g. config-defined hooks,
// `hook.<name>.command`), and must be reviewed before it is used.
//
// safe.directory is not needed: with GIT_DIR given explicitly, git does not
// check who owns the repository or the worktree.
//
// Thread-safety: a GitCommand is immutable after bind(); run() may be called
// from any thread, concurrently. No state is shared between calls.
#pragma once

#include <chrono>
#include <cstddef>
#include <cstdint>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "common/error.hpp"

namespace loopr::loops {

inline constexpr std::uint64_t kGitOutputCap = 16ull * 1024 * 1024;
inline constexpr std::chrono::milliseconds kGitDefaultTimeout{120'000};

// The `-c key=value` pairs passed before the subcommand on every call.
const std::vector<std::pair<std::string, std::string>>& git_hardening_config();

// Where a call works. Both paths absolute.
struct GitTarget {
  std::string git_dir;    // GIT_DIR: <repo>/.git, or a worktree's admin dir
  std::string work_tree;  // GIT_WORK_TREE and the call's cwd; empty: no work tree, cwd "/"
};

struct GitRunOptions {
  std::chrono::milliseconds timeout = kGitDefaultTimeout;
  std::uint64_t output_cap = kGitOutputCap;  // per stream
  bool read_only = false;                    // GIT_OPTIONAL_LOCKS=0
  // Extra command-line-scope config for this call (e.g. the commit identity),
  // passed as `-c key=value` after the hardening ones. Keys must not contain
  // '='. Never put hardening here: it belongs in git_hardening_config().
  std::vector<std::pair<std::string, std::string>> config;
  // GIT_INDEX_FILE for this call (absolute; empty: the target's own index):
  // a temporary index, so the call leaves the real one as it was.
  std::string index_file;
};

// Paths one git call takes at most: a longer list goes in batches, so argv
// stays far below ARG_MAX.
inline constexpr std::size_t kGitPathsPerCall = 256;

// The options of a call that only reads: GIT_OPTIONAL_LOCKS=0, the defaults
// otherwise.
inline GitRunOptions read_only_options() {
  GitRunOptions options;
  options.read_only = true;
  return options;
}

struct GitResult {
  int exit_code = -1;  // -1 when git was killed by a signal
  int term_signal = 0;
  std::string out;  // stdout, capped (head + marker + tail when truncated)
  std::string err;  // stderr, capped
  bool out_truncated = false;
  bool err_truncated = false;
  bool succeeded() const { return exit_code == 0; }
};

class GitCommand {
 public:
  // Checks the target, finds git, and lists the filter and merge drivers the
  // target's config defines (one `git config` call, itself hardened).
  static Result<GitCommand> bind(GitTarget target);

  const GitTarget& target() const { return target_; }
  const std::vector<std::string>& filter_drivers() const { return filter_drivers_; }
  const std::vector<std::string>& merge_drivers() const { return merge_drivers_; }

  // The full argv / environment ("NAME=value") a call with `args` would use.
  std::vector<std::string> argv(const std::vector<std::string>& args,
                                const GitRunOptions& options = {}) const;
  std::vector<std::string> environment(const GitRunOptions& options = {}) const;

  // Runs git with `args` (subcommand first). An Error only when git could not
  // be run or did not finish in time (errc::timeout); a non-zero exit is a
  // GitResult for the caller to judge.
  Result<GitResult> run(const std::vector<std::string>& args,
                        const GitRunOptions& options = {}) const;

  // run(), then an Error (errc::io, naming the subcommand and quoting the end
  // of stderr) unless git exited 0; the value is stdout.
  Result<std::string> output(const std::vector<std::string>& args,
                             const GitRunOptions& options = {}) const;

 private:
  GitCommand(GitTarget target, std::string executable)
      : target_(std::move(target)), executable_(std::move(executable)) {}

  GitTarget target_;
  std::string executable_;
  std::vector<std::string> filter_drivers_;
  std::vector<std::string> merge_drivers_;
};

// The git binary loopr runs: the first executable of /usr/bin/git, /bin/git,
// /usr/local/bin/git. Never searched in the daemon's PATH.
Result<std::string> git_executable();

// Splits `git ... -z` output into its NUL-terminated records (views into it).
std::vector<std::string_view> split_nul(std::string_view listing);

// An Error describing a failed call: "git <subcommand> failed (exit N): <stderr tail>".
Error git_failure(const std::vector<std::string>& args, const GitResult& result);

}  // namespace loopr::loops
