#include "loops/git/protected_restore.hpp"

#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>

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

// Removes the untracked file `path` of the worktree when every folder above
// it is a real folder (not a link that leads elsewhere). False: left alone.
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
  if (::unlink(file.c_str()) != 0 && errno != ENOENT) {
    return errno_error(errno, "remove the protected path's new file", file);
  }
  return true;
}

}  // namespace

Result<std::vector<ProtectedChange>> restore_protected(
    const WorktreeInfo& info, const std::string& base_commit,
    const std::function<bool(const std::string& path)>& is_protected) {
  if (!is_sha(base_commit)) {
    return make_error(errc::invalid_arguments,
                      "the loop has no base commit to put its protected files back from");
  }
  Result<GitCommand> git = worktree_git(info);
  if (!git) return std::move(git).error();

  std::vector<ProtectedChange> changes;
  std::vector<std::string> tracked;
  const std::vector<std::string> diff_args = {"diff",
                                              "--name-status",
                                              "-z",
                                              "--no-renames",
                                              "--no-ext-diff",
                                              "--no-textconv",
                                              "--ignore-submodules=all",
                                              base_commit,
                                              "--"};
  Result<GitResult> diff = git->run(diff_args, read_only_options());
  if (!diff) return std::move(diff).error();
  if (!diff->succeeded()) return git_failure(diff_args, *diff);
  if (diff->out_truncated) {
    return make_error(errc::too_large, "git diff listed too many changed paths to check");
  }
  const std::vector<std::string_view> records = split_nul(diff->out);
  for (std::size_t i = 0; i + 1 < records.size(); i += 2) {
    const std::string path(records[i + 1]);
    if (!is_protected(path)) continue;
    changes.push_back({path, change_of(records[i].substr(0, 1))});
    tracked.push_back(path);
  }

  const std::vector<std::string> untracked_args = {"ls-files", "-z", "--others",
                                                   "--exclude-standard"};
  Result<GitResult> untracked = git->run(untracked_args, read_only_options());
  if (!untracked) return std::move(untracked).error();
  if (!untracked->succeeded()) return git_failure(untracked_args, *untracked);
  if (untracked->out_truncated) {
    return make_error(errc::too_large, "git ls-files listed too many untracked paths to check");
  }
  std::vector<std::string> added;
  for (std::string_view record : split_nul(untracked->out)) {
    const std::string path(record);
    if (!path.empty() && is_protected(path)) added.push_back(path);
  }

  for (std::size_t at = 0; at < tracked.size(); at += kGitPathsPerCall) {
    std::vector<std::string> args = {"restore", "--source=" + base_commit, "--staged", "--worktree",
                                     "--"};
    for (std::size_t i = at; i < tracked.size() && i < at + kGitPathsPerCall; ++i)
      args.push_back(tracked[i]);
    Result<std::string> done = git->output(args);
    if (!done) return std::move(done).error();
  }
  for (const std::string& path : added) {
    Result<bool> removed = remove_untracked(info.path, path);
    if (!removed) return std::move(removed).error();
    if (*removed) changes.push_back({path, "added"});
  }
  return changes;
}

}  // namespace loopr::loops
