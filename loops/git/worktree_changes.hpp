// What changed in a loop's worktree besides the model's work, and in the
// user's checkout besides its commits (issue 25).
//
// Clean commits: the daemon runs commands of its own in a loop's worktree —
// the setup, each validation — and what they write (coverage reports, byte
// caches, object files, a package-lock.json) is not the model's work. Right
// after such a command the worktree holds nothing but the last commit, the
// ignored files and earlier by-products, so whatever else differs from HEAD
// is the command's: settle_daemon_changes() puts tracked files it changed
// back as HEAD has them and adds the untracked paths it made to the loop's
// `kept_out` list, which commit_all() (worktrees.hpp) leaves out of every
// later commit. They stay in the worktree, so builds stay warm.
//
// The user's checkout: a loop starts from HEAD; uncommitted_paths() lists
// what it leaves out, and snapshot_uncommitted() makes a commit of the
// checkout as it is (tracked changes and untracked, not ignored files) with
// a temporary index, so the user's branch, index and files are untouched.
//
// Every call goes through the hardened GitCommand (git_command.hpp); paths
// reach git as literal pathspecs. Synchronous, no state: call them from the
// git pool.
#pragma once

#include <string>
#include <vector>

#include "common/error.hpp"
#include "loops/git/worktree_info.hpp"

namespace loopr::loops {

// At most this many paths are kept in a loop's kept_out list or a loop's
// list of uncommitted paths; beyond it the rest are counted, not listed.
inline constexpr std::size_t kMaxKeptOutPaths = 2000;
inline constexpr std::size_t kMaxUncommittedPaths = 200;

struct WorktreeChange {
  std::string path;      // from the worktree's top; a wholly untracked folder ends in '/'
  bool tracked = false;  // a tracked file changed or deleted; else untracked
};

// `git status` of the worktree: tracked changes and untracked paths (not
// ignored ones), untracked folders listed once as "dir/".
Result<std::vector<WorktreeChange>> worktree_changes(const WorktreeInfo& info);

// Whether `path` is `entry` or lies beneath it (an entry ending in '/' is a
// folder; one without is a file or a folder).
bool path_within(const std::string& path, const std::string& entry);

struct DaemonChanges {
  std::vector<std::string> restored;  // tracked paths put back as HEAD has them
  std::vector<std::string> kept_out;  // untracked paths added to the list
  std::size_t not_listed = 0;         // new paths beyond kMaxKeptOutPaths (committed)
};

// After a daemon command in the worktree (see the top of this file): puts
// the tracked files it changed or deleted back as HEAD has them, and appends
// the untracked paths not yet in `kept_out` to it. Fails when a merge is in
// progress (a resolver's worktree: its changes are the model's).
Result<DaemonChanges> settle_daemon_changes(const WorktreeInfo& info,
                                            std::vector<std::string>& kept_out);

// After a daemon command that runs while the model's edits are not yet
// committed (lint after edit): only the untracked paths it made are its
// own, so those of `now` that `before` (git status just before it ran) did
// not list, and that `kept_out` does not cover yet, are appended to
// `kept_out`; tracked changes are left alone (they may be the model's, or a
// `--fix` the user asked for). Returns the paths appended.
std::vector<std::string> keep_out_new_paths(const std::vector<WorktreeChange>& before,
                                            const std::vector<WorktreeChange>& now,
                                            std::vector<std::string>& kept_out);

// The checkout's uncommitted paths: tracked changes (staged or not) and
// untracked, not ignored files, untracked folders once as "dir/"; sorted.
Result<std::vector<std::string>> uncommitted_paths(const std::string& repo);

// A commit of the checkout as it is: its HEAD's tree with every tracked
// change (staged or not) and every untracked, not ignored file, with HEAD as
// parent and `message`; made with a temporary index. Returns its sha (HEAD's
// when nothing is uncommitted). The checkout's branch, index and files are
// left as they were.
Result<std::string> snapshot_uncommitted(const std::string& repo, const std::string& message);

}  // namespace loopr::loops
