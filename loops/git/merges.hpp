// Merges (DESIGN.md §8): how looprd brings a child loop's branch into its
// parent's branch, how a conflict is handed to a resolving loop, and how a
// finished plan's branch reaches the user's branch (`looprctl plan merge`).
//
// Every call goes through GitCommand (loops/git/git_command.hpp), hardened like
// the worktree calls (hooks, fsmonitor, filter drivers off). Merges add one
// more class of program a job could name from `.gitattributes`: merge
// drivers. Every `merge.<driver>.driver` the repository's config defines is
// replaced, for loopr's merges, by `false`, so a file that names one comes
// out as a conflict (resolved by a loop in the sandbox), never by a program
// the job chose to run outside it. `merge.renormalize` is off, rerere is
// off, and the merge commit is made by "loopr <loopr@localhost>" with
// `--no-verify` semantics (no hooks run at all).
//
// Thread-safety: synchronous, no state between calls; run them on a worker
// thread. Calls on one worktree must be serialised by the caller.
#pragma once

#include <string>
#include <vector>

#include "common/error.hpp"
#include "loops/git/worktree_info.hpp"

namespace loopr::loops {

struct MergeOutcome {
  bool merged = false;                 // a merge commit (or fast-forward) now holds `source`
  bool already_merged = false;         // `source` was already an ancestor: nothing done
  bool fast_forward = false;           // merge_into_branch only
  std::string commit;                  // the target's head after the call
  std::vector<std::string> conflicts;  // paths in conflict (merged == false)
};

// Merges branch `source` into the branch checked out in `target` with
// `git merge --no-ff -m message`. A conflict aborts the merge (the worktree
// is left as it was before the call) and returns merged=false with the
// conflicting paths. Refuses (invalid_state) when `target` has uncommitted
// changes. Errors: not_found (no such branch), io.
Result<MergeOutcome> merge_branch(const WorktreeInfo& target, const std::string& source,
                                  const std::string& message);

// Starts merging `source` into `target`'s branch and stops before the commit
// (`--no-ff --no-commit`), leaving conflict markers in the files for a loop
// to resolve; commit_all() on the worktree then makes the merge commit (two
// parents: MERGE_HEAD is kept). Returns the conflicting paths (merged=false
// when there are any; merged=true with no conflicts means the merge is
// staged and only needs the commit). already_merged when `source` is
// already in `target`.
Result<MergeOutcome> start_merge(const WorktreeInfo& target, const std::string& source,
                                 const std::string& message);

// Whether a merge is in progress in `target` (MERGE_HEAD exists).
Result<bool> merge_in_progress(const WorktreeInfo& target);

// The paths still holding conflict markers (<<<<<<< / >>>>>>> lines) among
// tracked and untracked files of `target`, or unmerged in the index.
Result<std::vector<std::string>> unresolved_paths(const WorktreeInfo& target);

// The full sha `branch` points at in `repo`; not_found when it does not exist.
Result<std::string> branch_head(const std::string& repo, const std::string& branch);

// Whether commit-ish `ancestor` is an ancestor of (or equal to) `of` in `repo`.
Result<bool> is_ancestor(const std::string& repo, const std::string& ancestor,
                         const std::string& of);

// `git reset --hard <commit>` in `target` and removes untracked files
// (`git clean -fdx` without following nested repositories' hooks). For
// invalidating what children merged into a plan's branch.
Result<void> reset_worktree(const WorktreeInfo& target, const std::string& commit);

// Brings branch `source` into the user's branch `target` of `repo` (never a
// loop/ branch): a fast-forward when `target` is an ancestor of `source`,
// otherwise a merge commit with `message`. When `target` is checked out in
// a worktree of the repo (its main one included), that worktree is updated
// only if it is clean — otherwise invalid_state ("commit or stash your
// changes in DIR first"). A conflict leaves `target` untouched and returns
// invalid_state naming the conflicting paths ("the target moved in a way
// that conflicts with the plan: ..."). When `target` is not checked out, the
// merge is made in a temporary worktree under `scratch_folder` (removed
// afterwards) and the branch ref updated with a compare-and-swap on its old
// value. Errors: not_found (no such branch), invalid_arguments (target is a
// loop/ branch), invalid_state, io.
Result<MergeOutcome> merge_into_branch(const std::string& repo, const std::string& source,
                                       const std::string& target, const std::string& message,
                                       const std::string& scratch_folder);

}  // namespace loopr::loops
