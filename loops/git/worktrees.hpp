// Worktrees: the git operations the loop engine makes on a loop's worktree
// (DESIGN.md §8): create it on a new `loop/<id>` branch, commit after every
// iteration, diff, re-open after a daemon restart, remove.
//
// Every call goes through GitCommand (loops/git/git_command.hpp), hardened so that
// nothing a job wrote in the worktree runs outside the sandbox (SECURITY.md
// classes 4 and 27). Calls on a worktree use GIT_DIR=<admin dir> and
// GIT_WORK_TREE=<worktree>; calls on the repository use GIT_DIR=<repo>/.git.
// The admin dir is always found from the repository (the `gitdir` files under
// <repo>/.git/worktrees/), never from the worktree's `.git` file, which a job
// may have replaced. That `.git` file is never followed and never committed.
//
// Thread-safety: every function is synchronous and keeps no state between
// calls; they may run on any worker thread. Two calls on the same worktree at
// once contend for git's index lock (one fails with an io Error): the loop
// engine serialises the calls of one loop.
#pragma once

#include <string>
#include <vector>

#include "common/error.hpp"
#include "loops/git/worktree_info.hpp"

namespace loopr::loops {

struct CommitOutcome {
  bool changed = false;  // a commit was made
  std::string commit;    // the new commit, or HEAD when nothing changed
};

// Creates a worktree at `path` on the new branch `branch`, starting at `base`
// (any commit-ish; empty: the repository's HEAD). `repo` is a normal,
// non-bare repository whose `.git` is a folder. `path` is absolute and must
// not exist (or be an empty folder); missing parents are created 0700.
// Errors: not_found (repo missing or not a git repository), invalid_arguments
// (bad branch name, branch exists, base does not name a commit, bad path), io.
Result<WorktreeInfo> add_worktree(const std::string& repo, const std::string& path,
                                  const std::string& branch, const std::string& base);

// Re-derives the info of an existing worktree (after a daemon restart) from
// the repository's admin dirs. Fails (not_found) if `repo` has no worktree at
// `path`, and (invalid_arguments) if that worktree is not on `branch`.
Result<WorktreeInfo> open_worktree(const std::string& repo, const std::string& path,
                                   const std::string& branch);

// What a commit leaves out (worktree_changes.hpp): `kept_out` paths (files,
// or folders ending in '/') are not committed, except those of `written`
// (paths the model wrote or deleted with a file tool) that lie within them.
struct CommitScope {
  std::vector<std::string> kept_out;
  std::vector<std::string> written;
};

// `git add -A` (less the scope's kept_out paths), then a commit by
// "loopr <loopr@localhost>" if anything is staged, or if a merge is in
// progress (MERGE_HEAD: the commit is the merge's, with two parents, even
// when its tree equals HEAD's). `message` must not be blank. Special files
// (FIFOs, sockets) are ignored by git; a nested repository is recorded as a
// gitlink by git.
Result<CommitOutcome> commit_all(const WorktreeInfo& info, const std::string& message,
                                 const CommitScope& scope = {});

// Whether the worktree differs from its HEAD (tracked or untracked files, not
// ignored ones).
Result<bool> has_changes(const WorktreeInfo& info);

// The full sha of the worktree's HEAD.
Result<std::string> head_commit(const WorktreeInfo& info);

// A unified diff from `from` to `to` (commit-ishes; an empty `to` means the
// worktree's tracked files as they are now). No external diff, no textconv,
// no colour; capped at kGitOutputCap with a truncation marker in the middle.
Result<std::string> diff(const WorktreeInfo& info, const std::string& from, const std::string& to);

// `git diff --stat` over the same range as diff().
Result<std::string> diff_stat(const WorktreeInfo& info, const std::string& from,
                              const std::string& to);

// diff() (or diff_stat() with `stat`) between two commit-ishes of `repo`,
// read from the repository itself: for a loop whose worktree is gone too.
Result<std::string> branch_diff(const std::string& repo, const std::string& from,
                                const std::string& to, bool stat);

// Deletes the worktree folder (without following any link in it), then git's
// admin dir for it. Keeps the branch unless `delete_branch`. Removing a
// worktree that is already gone succeeds.
Result<void> remove_worktree(const WorktreeInfo& info, bool delete_branch);

}  // namespace loopr::loops
