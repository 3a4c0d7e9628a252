#include "loops/git/protected_restore.hpp"

#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <filesystem>

#include "loops/git/git_command.hpp"
#include "loops/git/git_support.hpp"

namespace loopr::loops {
namespace {

using detail::is_sha;
using detail::worktree_git;

std::string change_of(std::string_view status) {
  if (status == "A") return "added";
  if (status == "D") return "deleted";
  return "modified";  // M, T (a file made a link or back)
}

// Removes the untracked file or folder `path` of the worktree when every
// folder above it is a real folder (not a link that leads elsewhere).
// False: left alone (or already gone).
Result<bool> remove_untracked(const std::string& worktree, const std::string& path) {
  std::string at = worktree;
  std::size_t from = 0;
  while (true) {
    const std::size_t slash = path.find('/', from);
    if (slash == std::string::npos) break;
    at = worktree + "/" + path.substr(0, slash);
    struct stat info {};
    if (::lstat(at.c_str(), &info) != 0 || !S_ISDIR(info.st_mode)) return false;
    from = slash + 1;
  }
  const std::string file = worktree + "/" + path;
  struct stat info {};
  if (::lstat(file.c_str(), &info) != 0)
    return errno == ENOENT ? Result<bool>(false)
                           : errno_error(errno, "look at the protected path's new file", file);
  if (S_ISDIR(info.st_mode)) {
    // A new folder in a protected place: all of it (links in it are
    // removed, never followed).
    std::error_code error;
    std::filesystem::remove_all(file, error);
    if (error) return errno_error(error.value(), "remove the protected path's new folder", file);
    return true;
  }
  if (::unlink(file.c_str()) != 0 && errno != ENOENT) {
    return errno_error(errno, "remove the protected path's new file", file);
  }
  return true;
}

// What differs from the base commit in protected places: tracked paths
// (with their change) and untracked ones, ignored ones included (no exclude
// rule is given to ls-files); a wholly untracked folder is listed once
// ("dir/") and looked into only when something beneath it may be protected.
struct ProtectedDiff {
  std::vector<ProtectedChange> tracked;
  std::vector<std::string> untracked;
  bool empty() const { return tracked.empty() && untracked.empty(); }
};

Result<ProtectedDiff> protected_diff(const GitCommand& git, const std::string& base_commit,
                                     const ProtectedGuard& guard) {
  auto listing = [&](const std::vector<std::string>& args) -> Result<std::string> {
    Result<GitResult> listed = git.run(args, read_only_options());
    if (!listed) return std::move(listed).error();
    if (!listed->succeeded()) return git_failure(args, *listed);
    if (listed->out_truncated) {
      return make_error(errc::too_large,
                        "git " + args[0] + " listed too many paths to check for protected files");
    }
    return std::move(listed->out);
  };
  ProtectedDiff found;
  auto diff = listing({"diff", "--name-status", "-z", "--no-renames", "--no-ext-diff",
                       "--no-textconv", "--ignore-submodules=all", base_commit, "--"});
  if (!diff) return std::move(diff).error();
  const std::vector<std::string_view> records = split_nul(*diff);
  for (std::size_t i = 0; i + 1 < records.size(); i += 2) {
    const std::string path(records[i + 1]);
    if (guard.is_protected(path))
      found.tracked.push_back({path, change_of(records[i].substr(0, 1))});
  }
  auto untracked = listing({"ls-files", "-z", "--others", "--directory"});
  if (!untracked) return std::move(untracked).error();
  for (std::string_view record : split_nul(*untracked)) {
    std::string path(record);
    const bool folder = !path.empty() && path.back() == '/';
    if (folder) path.pop_back();
    if (path.empty()) continue;
    if (guard.is_protected(path)) {
      found.untracked.push_back(path);
    } else if (folder && guard.may_protect_beneath(path)) {
      auto inside = listing({"ls-files", "-z", "--others", "--", path});
      if (!inside) return std::move(inside).error();
      for (std::string_view file : split_nul(*inside)) {
        if (!file.empty() && guard.is_protected(std::string(file))) {
          found.untracked.emplace_back(file);
        }
      }
    }
  }
  return found;
}

}  // namespace

Result<std::vector<ProtectedChange>> restore_protected(const WorktreeInfo& info,
                                                       const std::string& base_commit,
                                                       const ProtectedGuard& guard) {
  if (!is_sha(base_commit)) {
    return make_error(errc::invalid_arguments,
                      "the loop has no base commit to put its protected files back from");
  }
  Result<GitCommand> git = worktree_git(info);
  if (!git) return std::move(git).error();
  auto found = protected_diff(*git, base_commit, guard);
  if (!found) return std::move(found).error();
  if (found->empty()) return std::vector<ProtectedChange>{};

  // Untracked paths first: a link or folder put where a protected folder
  // was goes before git puts the folder's files back.
  std::vector<ProtectedChange> changes;
  for (const std::string& path : found->untracked) {
    Result<bool> removed = remove_untracked(info.path, path);
    if (!removed) return std::move(removed).error();
    if (*removed) changes.push_back({path, "added"});
  }
  for (std::size_t at = 0; at < found->tracked.size(); at += kGitPathsPerCall) {
    std::vector<std::string> args = {"restore", "--source=" + base_commit, "--staged", "--worktree",
                                     "--"};
    for (std::size_t i = at; i < found->tracked.size() && i < at + kGitPathsPerCall; ++i)
      args.push_back(found->tracked[i].path);
    Result<std::string> done = git->output(args);
    if (!done) return std::move(done).error();
  }
  changes.insert(changes.end(), found->tracked.begin(), found->tracked.end());

  // Fail closed: whatever still differs (a file behind a linked folder,
  // something made meanwhile) ends the loop rather than reach a validation.
  auto left = protected_diff(*git, base_commit, guard);
  if (!left) return std::move(left).error();
  if (!left->empty()) {
    std::string named;
    for (const ProtectedChange& change : left->tracked)
      named += (named.empty() ? "" : ", ") + change.path;
    for (const std::string& path : left->untracked)
      named += (named.empty() ? "" : ", ") + path;
    return make_error(errc::io,
                      "protected files still differ from the base commit after loopr put them "
                      "back: " +
                          named.substr(0, 1000),
                      "look at the worktree " + info.path);
  }
  return changes;
}

}  // namespace loopr::loops
