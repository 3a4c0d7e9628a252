// The exact tree a job on a worker runs in (docs/cluster.md): a snapshot
// commit of a worktree as it is now — uncommitted changes included,
// .gitignore respected — made through a temporary index, so neither the
// worktree's index nor its branch changes. The commit is held under
// refs/loopr/cluster/JOB until drop_snapshot(), so git's gc keeps it while
// a worker may still ask for it.
//
// Runs git through loops/git's GitCommand (hardened: SECURITY.md classes 4
// and 27). Blocking: call from a worker thread, never the io thread.
#pragma once

#include <string>
#include <vector>

#include "common/error.hpp"

namespace loopr::cluster {

struct Snapshot {
  std::string repo;        // the repository's top folder (realpath)
  std::string repo_key;    // names the repository on workers (hex, from host and path)
  std::string repo_name;   // the repository folder's name
  std::string git_dir;     // the worktree's GIT_DIR (its admin folder for a linked worktree)
  std::string common_dir;  // <repo>/.git
  std::string worktree;    // realpath
  std::string commit;      // 40 hex
  std::string ref;         // refs/loopr/cluster/<job>
};

// `repo`: the repository loopr knows the worktree belongs to (a loop's), or
// empty to find it from the worktree (a client's own call). The worktree's
// GIT_DIR is found from the repository's side (.git/worktrees/*/gitdir),
// never from the job-writable `.git` file. not_found: not a git worktree.
Result<Snapshot> snapshot_worktree(const std::string& worktree, const std::string& repo,
                                   const std::string& job_id, const std::string& host_id,
                                   const std::string& scratch_folder);

// A bundle of the snapshot's commit, without what `have` already holds
// (commits this repository does not know are left out of that list), written
// to a new file in `folder`; its path. The caller removes it.
Result<std::string> write_bundle(const Snapshot& snapshot, const std::vector<std::string>& have,
                                 const std::string& folder);

// Removes the snapshot's ref. Best effort: a failure is logged by the caller.
Result<void> drop_snapshot(const Snapshot& snapshot);

}  // namespace loopr::cluster
