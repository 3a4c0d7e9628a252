// Putting back a loop's protected files (issue 27, [validation]
// protected_paths; what is protected and why: loops/protected_files.hpp).
//
// restore_protected() compares the worktree with the loop's base commit —
// tracked files changed, deleted, retyped (a file made a link) or added to
// the index, and untracked files, ignored ones included — and puts back each
// path the guard protects: a tracked one as the base commit has it (index
// and file, `git restore --source=BASE`), an untracked one removed. Ignored
// files count because an ignore rule hides nothing from the validation: a
// model may add one to .gitignore, or write where one already applies (a
// __pycache__, a conftest.py someone ignored), and either file can change
// what the tests run. Such files in protected folders (a test's object
// files, say) are rebuilt after each iteration's commit.
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

// What is protected, as restore_protected() asks it: a path (from the
// worktree's top) itself, and whether anything beneath a folder may be.
struct ProtectedGuard {
  std::function<bool(const std::string& path)> is_protected;
  std::function<bool(const std::string& folder)> may_protect_beneath;
};

Result<std::vector<ProtectedChange>> restore_protected(const WorktreeInfo& info,
                                                       const std::string& base_commit,
                                                       const ProtectedGuard& guard);

}  // namespace loopr::loops
