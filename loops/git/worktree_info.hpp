// WorktreeInfo: what the git room knows of one loop worktree — its
// repository, folder, branch, base commit and git's admin folders. The
// lowest file of loops/git/: every git operation on a worktree takes one, and
// only add_worktree() and open_worktree() (worktrees.hpp) make one.
#pragma once

#include <string>

namespace loopr::loops {

struct WorktreeInfo {
  std::string repo;         // the repository's top folder (realpath)
  std::string path;         // the worktree's folder (realpath)
  std::string branch;       // e.g. "loop/42" (without refs/heads/)
  std::string base_commit;  // the commit the branch was created at (from its reflog;
                            // empty after open_worktree if that reflog is gone)
  std::string admin_dir;    // <repo>/.git/worktrees/<name>: GIT_DIR for calls on the worktree
  std::string common_dir;   // <repo>/.git
};

}  // namespace loopr::loops
