// Putting back a loop's protected files (issue 27, [validation]
// protected_paths; what is protected and why: loops/protected_files.hpp).
//
// restore_protected() compares the worktree with the loop's base commit —
// tracked files changed, deleted, retyped (a file made a link) or added to
// the index, and untracked files that are not ignored — and puts back each
// path `is_protected` accepts: a tracked one as the base commit has it
// (index and file, `git restore --source=BASE`), an untracked one removed.
// Afterwards no protected path differs from the base commit, so a commit
// made next holds no change to one. Idempotent: a second call finds nothing.
//
// Every git call goes through the hardened GitCommand (git_command.hpp),
// with literal pathspecs; an untracked file is removed only when no folder
// above it in the worktree is a symbolic link. Synchronous: call it from the
// git pool.
#pragma once

#include <functional>
#include <string>
#include <vector>

#include "common/error.hpp"
#include "loops/git/worktree_info.hpp"

namespace loopr::loops {

struct ProtectedChange {
  std::string path;    // from the worktree's top
  std::string change;  // what was put back: "modified", "deleted", "added"
};

Result<std::vector<ProtectedChange>> restore_protected(
    const WorktreeInfo& info, const std::string& base_commit,
    const std::function<bool(const std::string& path)>& is_protected);

}  // namespace loopr::loops
