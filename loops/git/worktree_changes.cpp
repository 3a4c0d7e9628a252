#include "loops/git/worktree_changes.hpp"

#include <stdlib.h>
#include <unistd.h>

#include <algorithm>
#include <filesystem>
#include <fstream>
#include <set>
#include <string_view>
#include <system_error>

#include "loops/git/git_command.hpp"
#include "loops/git/git_support.hpp"

namespace loopr::loops {
namespace {

namespace fs = std::filesystem;
using detail::is_sha;
using detail::open_repo;
using detail::repo_git;
using detail::trim;
using detail::worktree_git;

// `git status` records: "XY path" each, NUL-terminated (no renames asked).
Result<std::vector<WorktreeChange>> status_changes(const GitCommand& git) {
  const std::vector<std::string> args = {"status",       "--porcelain=v1",
                                         "-z",           "--untracked-files=normal",
                                         "--no-renames", "--ignore-submodules=dirty"};
  Result<GitResult> listed = git.run(args, read_only_options());
  if (!listed) return std::move(listed).error();
  if (!listed->succeeded()) return git_failure(args, *listed);
  if (listed->out_truncated) {
    return make_error(errc::too_large, "git status listed too many paths",
                      "add the folders the commands write to the repository's .gitignore");
  }
  std::vector<WorktreeChange> changes;
  std::string_view rest = listed->out;
  while (!rest.empty()) {
    const std::size_t end = std::min(rest.find('\0'), rest.size());
    const std::string_view record = rest.substr(0, end);
    rest.remove_prefix(std::min(end + 1, rest.size()));
    if (record.size() < 4) continue;
    changes.push_back({std::string(record.substr(3)), record.substr(0, 2) != "??"});
  }
  return changes;
}

template <typename Run>
Result<void> in_batches(const std::vector<std::string>& paths, Run run) {
  for (std::size_t at = 0; at < paths.size(); at += kGitPathsPerCall) {
    const auto first = paths.begin() + static_cast<std::ptrdiff_t>(at);
    const auto last =
        paths.begin() + static_cast<std::ptrdiff_t>(std::min(paths.size(), at + kGitPathsPerCall));
    if (Result<void> done = run(std::vector<std::string>(first, last)); !done) return done;
  }
  return {};
}

// A private folder for a temporary index, removed when it goes.
class ScratchFolder {
 public:
  static Result<ScratchFolder> make() {
    std::error_code ec;
    fs::path base = fs::temp_directory_path(ec);
    if (ec) base = "/tmp";
    std::string pattern = (base / "loopr-snapshot-XXXXXX").string();
    if (::mkdtemp(pattern.data()) == nullptr) {
      return errno_error(errno, "make a scratch folder", pattern);
    }
    return ScratchFolder(pattern);
  }
  ScratchFolder(ScratchFolder&& other) noexcept : path_(std::move(other.path_)) {
    other.path_.clear();
  }
  ScratchFolder(const ScratchFolder&) = delete;
  ScratchFolder& operator=(const ScratchFolder&) = delete;
  ScratchFolder& operator=(ScratchFolder&&) = delete;
  ~ScratchFolder() {
    if (path_.empty()) return;
    std::error_code ec;
    fs::remove_all(path_, ec);
  }
  const std::string& path() const { return path_; }

 private:
  explicit ScratchFolder(std::string path) : path_(std::move(path)) {}
  std::string path_;
};

}  // namespace

bool path_within(const std::string& path, const std::string& entry) {
  if (entry.empty()) return false;
  if (entry.back() == '/') return path.rfind(entry, 0) == 0 || path + "/" == entry;
  return path == entry ||
         (path.size() > entry.size() && path.rfind(entry, 0) == 0 && path[entry.size()] == '/');
}

Result<std::vector<WorktreeChange>> worktree_changes(const WorktreeInfo& info) {
  Result<GitCommand> git = worktree_git(info);
  if (!git) return std::move(git).error();
  return status_changes(*git);
}

Result<DaemonChanges> settle_daemon_changes(const WorktreeInfo& info,
                                            std::vector<std::string>& kept_out) {
  Result<GitCommand> git = worktree_git(info);
  if (!git) return std::move(git).error();
  Result<GitResult> merging =
      git->run({"rev-parse", "--verify", "--quiet", "MERGE_HEAD^{commit}"}, read_only_options());
  if (!merging) return std::move(merging).error();
  if (merging->succeeded()) {
    return make_error(errc::invalid_arguments, "a merge is in progress in " + info.path);
  }
  Result<std::vector<WorktreeChange>> changes = status_changes(*git);
  if (!changes) return std::move(changes).error();
  DaemonChanges settled;
  for (const WorktreeChange& change : *changes) {
    if (change.tracked) {
      settled.restored.push_back(change.path);
      continue;
    }
    const bool known = std::any_of(kept_out.begin(), kept_out.end(), [&](const std::string& entry) {
      return path_within(change.path, entry);
    });
    if (known) continue;
    if (kept_out.size() >= kMaxKeptOutPaths) {
      ++settled.not_listed;
      continue;
    }
    kept_out.push_back(change.path);
    settled.kept_out.push_back(change.path);
  }
  Result<void> restored = in_batches(settled.restored, [&](std::vector<std::string> batch) {
    std::vector<std::string> args = {"restore", "--source=HEAD", "--staged", "--worktree", "--"};
    args.insert(args.end(), batch.begin(), batch.end());
    Result<std::string> done = git->output(args);
    return done ? Result<void>{} : Result<void>(std::move(done).error());
  });
  if (!restored) return std::move(restored).error();
  return settled;
}

std::vector<std::string> keep_out_new_paths(const std::vector<WorktreeChange>& before,
                                            const std::vector<WorktreeChange>& now,
                                            std::vector<std::string>& kept_out) {
  std::set<std::string> earlier;
  for (const WorktreeChange& change : before)
    if (!change.tracked) earlier.insert(change.path);
  std::vector<std::string> added;
  for (const WorktreeChange& change : now) {
    if (change.tracked || earlier.count(change.path) != 0) continue;
    const bool known = std::any_of(kept_out.begin(), kept_out.end(), [&](const std::string& entry) {
      return path_within(change.path, entry);
    });
    if (known || kept_out.size() >= kMaxKeptOutPaths) continue;
    kept_out.push_back(change.path);
    added.push_back(change.path);
  }
  return added;
}

Result<std::vector<std::string>> uncommitted_paths(const std::string& repo) {
  Result<detail::Repo> opened = open_repo(repo);
  if (!opened) return std::move(opened).error();
  Result<GitCommand> git = repo_git(*opened);
  if (!git) return std::move(git).error();
  Result<std::vector<WorktreeChange>> changes = status_changes(*git);
  if (!changes) return std::move(changes).error();
  std::set<std::string> paths;
  for (WorktreeChange& change : *changes)
    paths.insert(std::move(change.path));
  return std::vector<std::string>(paths.begin(), paths.end());
}

Result<std::string> snapshot_uncommitted(const std::string& repo, const std::string& message) {
  Result<detail::Repo> opened = open_repo(repo);
  if (!opened) return std::move(opened).error();
  Result<GitCommand> git = repo_git(*opened);
  if (!git) return std::move(git).error();
  Result<std::string> head_out =
      git->output({"rev-parse", "--verify", "HEAD^{commit}"}, read_only_options());
  if (!head_out) return std::move(head_out).error();
  const std::string head = trim(*head_out);
  if (!is_sha(head)) return make_error(errc::io, "git rev-parse printed no commit for HEAD");

  // The temporary index starts as a copy of the checkout's (its stat data
  // spares git hashing every unchanged file), so staged changes are in too.
  Result<ScratchFolder> scratch = ScratchFolder::make();
  if (!scratch) return std::move(scratch).error();
  GitRunOptions temporary;
  temporary.index_file = scratch->path() + "/index";
  std::error_code ec;
  fs::copy_file(opened->common_dir + "/index", temporary.index_file, ec);
  if (ec) {
    Result<std::string> read = git->output({"read-tree", "HEAD"}, temporary);
    if (!read) return std::move(read).error();
  }
  if (Result<std::string> added = git->output({"add", "--all"}, temporary); !added) {
    return std::move(added).error();
  }
  Result<std::string> tree = git->output({"write-tree"}, temporary);
  if (!tree) return std::move(tree).error();
  Result<std::string> head_tree =
      git->output({"rev-parse", "--verify", "HEAD^{tree}"}, read_only_options());
  if (!head_tree) return std::move(head_tree).error();
  if (trim(*tree) == trim(*head_tree)) return head;
  GitRunOptions identity;
  identity.config = detail::commit_identity();
  Result<std::string> commit =
      git->output({"commit-tree", trim(*tree), "-p", head, "-m", message}, identity);
  if (!commit) return std::move(commit).error();
  const std::string sha = trim(*commit);
  if (!is_sha(sha)) return make_error(errc::io, "git commit-tree printed no commit");
  return sha;
}

}  // namespace loopr::loops
