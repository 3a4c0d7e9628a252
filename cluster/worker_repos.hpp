// WorkerRepos: a worker's copies of the repositories whose jobs it runs
// (docs/cluster.md): one bare repository per repository key, holding the
// commits looprd sent as bundles, and one warm worktree per repository and
// slot, checked out at each job's commit with `checkout --force` and
// `clean -fd` — ignored files (build outputs) stay, so builds are
// incremental. Jobs write these worktrees; git here runs through loops/git's
// hardened GitCommand, and nothing of a worktree ever goes back to looprd.
//
// Layout under the state folder: repos/KEY.git, work/KEY-SLOT, tmp/ (bundles).
// Threads: each method may be called from several slot threads; calls for
// one repository are serialised here.
#pragma once

#include <functional>
#include <map>
#include <memory>
#include <mutex>
#include <string>
#include <vector>

#include "common/error.hpp"

namespace loopr::cluster {

class WorkerRepos {
 public:
  // Asks looprd for a bundle: given the commits held, writes it to the
  // path given and returns once it is whole (or an Error).
  using FetchBundle =
      std::function<Result<void>(const std::vector<std::string>& have, const std::string& path)>;

  explicit WorkerRepos(std::string state_folder);

  // The worker's state folder (the runner's writable root).
  const std::string& state_folder() const { return state_; }

  // Makes sure `commit` of repository `key` is held (fetching a bundle when
  // it is not), then checks it out in the slot's warm worktree: its path.
  Result<std::string> prepare(const std::string& key, const std::string& commit, unsigned slot,
                              const FetchBundle& fetch);

 private:
  std::mutex& lock_for(const std::string& key);
  Result<void> ensure_commit(const std::string& bare, const std::string& commit,
                             const FetchBundle& fetch);

  std::string state_;
  std::mutex locks_mutex_;
  std::map<std::string, std::unique_ptr<std::mutex>> locks_;
};

}  // namespace loopr::cluster
