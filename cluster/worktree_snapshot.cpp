#include "cluster/worktree_snapshot.hpp"

#include <fcntl.h>
#include <unistd.h>

#include <atomic>
#include <filesystem>
#include <fstream>
#include <map>
#include <mutex>
#include <optional>

#include "cluster/cluster_messages.hpp"
#include "common/small_file.hpp"
#include "loops/git/git_command.hpp"
#include "loops/git/git_support.hpp"
#include "memory/repository.hpp"
#include "store/store.hpp"

namespace loopr::cluster {

namespace fs = std::filesystem;
using loops::GitCommand;
using loops::GitRunOptions;
using loops::GitTarget;

namespace {

std::string trim(std::string text) {
  while (!text.empty() && (text.back() == '\n' || text.back() == '\r' || text.back() == ' ')) {
    text.pop_back();
  }
  return text;
}

std::string realpath_or_empty(const std::string& path) {
  std::error_code ec;
  const fs::path canonical = fs::canonical(path, ec);
  return ec ? std::string() : canonical.string();
}

// The GIT_DIR of `worktree` in `repo`, read from the repository's own admin
// folders (which jobs cannot write).
Result<std::string> git_dir_of(const std::string& repo, const std::string& worktree) {
  const std::string common = repo + "/.git";
  if (worktree == repo) return common;
  std::error_code ec;
  for (const auto& entry : fs::directory_iterator(common + "/worktrees", ec)) {
    const std::string gitdir_file = entry.path().string() + "/gitdir";
    std::ifstream in(gitdir_file);
    std::string line;
    if (!std::getline(in, line)) continue;
    line = trim(line);
    const std::string named = realpath_or_empty(fs::path(line).parent_path().string());
    if (!named.empty() && named == worktree) return entry.path().string();
  }
  return make_error(errc::not_found, worktree + " is not a worktree of " + repo,
                    "workers run jobs only in git worktrees; this call runs on this machine");
}

std::string job_ref_name(const std::string& job_id) {
  std::string name;
  for (char c : job_id) {
    const bool ok = (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') ||
                    c == '-' || c == '_';
    name += ok ? c : '_';
  }
  return "refs/loopr/cluster/" + name;
}

std::atomic<unsigned> scratch_counter{0};

// The last snapshot of each worktree: a tree unchanged since (same parent)
// reuses its commit, so a worker that holds it needs no bundle again.
struct LastSnapshot {
  std::string parent, tree, commit;
};
std::mutex last_mutex;
std::map<std::string, LastSnapshot> last_snapshots;

bool still_there(const GitCommand& git, const std::string& commit) {
  auto present = git.run({"cat-file", "-e", commit + "^{commit}"}, loops::read_only_options());
  return present && present->succeeded();
}

}  // namespace

Result<Snapshot> snapshot_worktree(const std::string& worktree, const std::string& repo,
                                   const std::string& job_id, const std::string& host_id,
                                   const std::string& scratch_folder) {
  Snapshot s;
  s.worktree = realpath_or_empty(worktree);
  if (s.worktree.empty()) return make_error(errc::not_found, "no worktree at " + worktree);
  s.repo = realpath_or_empty(repo.empty() ? memory::repository_of(s.worktree) : repo);
  if (s.repo.empty() || !fs::is_directory(s.repo + "/.git")) {
    return make_error(errc::not_found, worktree + " is in no git repository",
                      "workers run jobs only in git worktrees; this call runs on this machine");
  }
  auto git_dir = git_dir_of(s.repo, s.worktree);
  if (!git_dir) return std::move(git_dir).error();
  s.git_dir = *git_dir;
  s.common_dir = s.repo + "/.git";
  s.repo_name = fs::path(s.repo).filename().string();
  const std::string digest = store::sha256_digest(host_id + ":" + s.repo);
  s.repo_key = digest.substr(digest.find(':') + 1, 24);
  s.ref = job_ref_name(job_id);

  auto git = GitCommand::bind(GitTarget{s.git_dir, s.worktree});
  if (!git) return std::move(git).error();
  const std::string index = scratch_folder + "/index-" + std::to_string(::getpid()) + "-" +
                            std::to_string(scratch_counter.fetch_add(1));
  struct RemoveIndex {
    std::string path;
    ~RemoveIndex() {
      ::unlink(path.c_str());
      ::unlink((path + ".lock").c_str());
    }
  } remove_index{index};
  GitRunOptions with_index;
  with_index.index_file = index;
  auto head = git->output({"rev-parse", "--verify", "HEAD^{commit}"}, loops::read_only_options());
  if (!head) return std::move(head).error();
  const std::string head_commit = trim(*head);
  if (auto r = git->output({"read-tree", "HEAD"}, with_index); !r) return std::move(r).error();
  if (auto r = git->output({"add", "--all", "--", "."}, with_index); !r) {
    return std::move(r).error();
  }
  auto tree = git->output({"write-tree"}, with_index);
  if (!tree) return std::move(tree).error();
  auto head_tree = git->output({"rev-parse", "HEAD^{tree}"}, loops::read_only_options());
  if (!head_tree) return std::move(head_tree).error();
  std::optional<LastSnapshot> last;
  {
    std::lock_guard lock(last_mutex);
    if (auto it = last_snapshots.find(s.worktree); it != last_snapshots.end()) last = it->second;
  }
  if (trim(*tree) == trim(*head_tree)) {
    s.commit = head_commit;
  } else if (last && last->parent == head_commit && last->tree == trim(*tree) &&
             still_there(*git, last->commit)) {
    s.commit = last->commit;
  } else {
    GitRunOptions identity;
    identity.config = loops::detail::commit_identity();
    auto commit = git->output({"commit-tree", trim(*tree), "-p", head_commit, "-m",
                               "loopr: the worktree as a worker runs it"},
                              identity);
    if (!commit) return std::move(commit).error();
    s.commit = trim(*commit);
  }
  if (!valid_commit(s.commit)) {
    return make_error(errc::io, "git gave no commit id for the snapshot of " + s.worktree);
  }
  if (auto r = git->output({"update-ref", s.ref, s.commit}); !r) return std::move(r).error();
  {
    std::lock_guard lock(last_mutex);
    if (last_snapshots.size() > 4096) last_snapshots.clear();
    last_snapshots[s.worktree] = LastSnapshot{head_commit, trim(*tree), s.commit};
  }
  return s;
}

Result<std::string> write_bundle(const Snapshot& snapshot, const std::vector<std::string>& have,
                                 const std::string& folder) {
  auto git = GitCommand::bind(GitTarget{snapshot.common_dir, ""});
  if (!git) return std::move(git).error();
  std::vector<std::string> args = {"bundle", "create", "--quiet"};
  const std::string path = folder + "/bundle-" + std::to_string(::getpid()) + "-" +
                           std::to_string(scratch_counter.fetch_add(1)) + ".bundle";
  args.push_back(path);
  args.push_back(snapshot.ref);
  std::size_t known = 0;
  for (const std::string& commit : have) {
    if (!valid_commit(commit) || commit == snapshot.commit) continue;
    auto present = git->run({"cat-file", "-e", commit + "^{commit}"}, loops::read_only_options());
    if (!present || !present->succeeded()) continue;
    if (known++ == 0) args.push_back("--not");
    args.push_back(commit);
  }
  if (auto r = git->output(args); !r) {
    ::unlink(path.c_str());
    return std::move(r).error();
  }
  return path;
}

Result<void> drop_snapshot(const Snapshot& snapshot) {
  auto git = GitCommand::bind(GitTarget{snapshot.common_dir, ""});
  if (!git) return std::move(git).error();
  if (auto r = git->output({"update-ref", "-d", snapshot.ref}); !r) return std::move(r).error();
  return {};
}

}  // namespace loopr::cluster
