// The git folder outside a linked worktree that git in a job needs. `git
// worktree add` leaves in the worktree a `.git` file, "gitdir: G", where G is
// <C>/worktrees/<name> inside the main repository's git folder C, and writes
// in G a `gitdir` file naming the worktree's `.git` back. When C lies under a
// writable root, the job's filesystem hides it with the other worktrees; this
// finds it so it can be bound back, read-only.
//
// The `.git` file may have been written by a job (a worktree that had none),
// so nothing in it is trusted: C is opened without following any symlink
// (openat2 RESOLVE_NO_SYMLINKS, Linux >= 5.6) and accepted only if its
// worktrees/<name>/gitdir, read through that fd, names this worktree's
// `.git`. A job cannot forge that file outside its own worktree, and what it
// forges inside its own worktree only shows it its own files. The fd pins the
// folder that was checked: no later rename or symlink swap redirects it.
#pragma once

#include <optional>
#include <string>

#include "common/unique_fd.hpp"

namespace loopr::runner {

struct LinkedGitDir {
  std::string path;  // C, canonical
  UniqueFd folder;   // O_PATH fd of C
};

// nullopt when `worktree` (canonical) is not a linked worktree, or its `.git`
// file does not check out; git then fails in the job as it would anywhere.
std::optional<LinkedGitDir> find_linked_git_dir(const std::string& worktree);

}  // namespace loopr::runner
