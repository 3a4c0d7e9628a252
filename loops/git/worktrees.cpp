#include "loops/git/worktrees.hpp"

#include <dirent.h>
#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <filesystem>
#include <optional>
#include <string_view>
#include <vector>

#include "common/private_folder.hpp"
#include "common/unique_fd.hpp"
#include "loops/git/git_command.hpp"
#include "loops/git/git_support.hpp"
#include "loops/git/worktree_changes.hpp"

namespace loopr::loops {
namespace {

namespace fs = std::filesystem;
using detail::branch_exists;
using detail::check_branch;
using detail::find_admin_dir;
using detail::is_absolute;
using detail::is_sha;
using detail::open_repo;
using detail::real_path;
using detail::Repo;
using detail::repo_git;
using detail::resolve_commit;
using detail::trim;
using detail::worktree_git;

// Diff output that depends on nothing but the two trees: no program runs
// (external diff, textconv), no submodule is entered, no colour, fixed
// prefixes, paths from the top of the worktree.
const std::vector<std::string> kDiffOptions = {
    "--no-ext-diff",   "--no-textconv",   "--no-color",        "--no-relative",
    "--src-prefix=a/", "--dst-prefix=b/", "--submodule=short", "--ignore-submodules=dirty",
};

// A folder deeper than this below the worktree is moved up before it is
// emptied, so removing a hostile, very deep tree costs bounded fds and stack.
constexpr int kMaxRemoveDepth = 64;

// Unstages what `git add --all` added within the scope's kept_out paths (new
// index entries: HEAD has no such path), then stages again the paths the
// model wrote within them. A kept-out path that a commit already holds (the
// model wrote it in an earlier iteration) keeps its staged change: the
// daemon's changes to tracked files were put back after each command
// (settle_daemon_changes), so what is left there is the model's.
// Paths reach git literally (GIT_LITERAL_PATHSPECS).
Result<void> leave_out(const GitCommand& git, const WorktreeInfo& info, const CommitScope& scope) {
  auto in_batches = [&](std::vector<std::string> head, const std::vector<std::string>& paths,
                        std::string* out = nullptr) -> Result<void> {
    for (std::size_t at = 0; at < paths.size(); at += kGitPathsPerCall) {
      std::vector<std::string> args = head;
      for (std::size_t i = at; i < paths.size() && i < at + kGitPathsPerCall; ++i) {
        std::string path = paths[i];
        if (path.size() > 1 && path.back() == '/') path.pop_back();
        args.push_back(std::move(path));
      }
      Result<GitResult> done = git.run(args);
      if (!done) return std::move(done).error();
      if (!done->succeeded()) return git_failure(args, *done);
      if (out != nullptr) {
        // A cut listing would leave the paths past the cut staged.
        if (done->out_truncated) {
          return make_error(errc::too_large, "git listed too many new paths to leave out",
                            "add the folders the commands write to the repository's .gitignore");
        }
        *out += done->out;
      }
    }
    return {};
  };
  if (scope.kept_out.empty()) return {};
  std::string listed;
  if (Result<void> added = in_batches({"diff-index", "--cached", "--name-only", "-z",
                                       "--no-renames", "--diff-filter=A", "HEAD", "--"},
                                      scope.kept_out, &listed);
      !added) {
    return added;
  }
  std::vector<std::string> added_paths;
  for (std::string_view path : split_nul(listed))
    if (!path.empty()) added_paths.emplace_back(path);
  if (Result<void> reset = in_batches({"reset", "--quiet", "HEAD", "--"}, added_paths); !reset) {
    return reset;
  }
  std::vector<std::string> again;
  for (const std::string& path : scope.written) {
    const bool within =
        std::any_of(scope.kept_out.begin(), scope.kept_out.end(),
                    [&](const std::string& entry) { return path_within(path, entry); });
    if (!within) continue;
    // A path the model deleted is staged as deleted only if the index has it.
    struct stat st {};
    const bool exists = ::lstat((info.path + "/" + path).c_str(), &st) == 0;
    GitRunOptions quiet;
    quiet.read_only = true;
    Result<GitResult> known = git.run({"ls-files", "--error-unmatch", "--", path}, quiet);
    if (!known) return std::move(known).error();
    if (exists || known->succeeded()) again.push_back(path);
  }
  return in_batches({"add", "--all", "--"}, again);
}

Result<std::vector<std::string>> list_names(int dir) {
  const int copy = ::fcntl(dir, F_DUPFD_CLOEXEC, 0);
  if (copy < 0) return errno_error(errno, "duplicate a folder fd", "");
  DIR* stream = ::fdopendir(copy);
  if (stream == nullptr) {
    const int saved = errno;
    ::close(copy);
    return errno_error(saved, "list", "a worktree folder");
  }
  ::rewinddir(stream);
  std::vector<std::string> names;
  errno = 0;
  while (const dirent* entry = ::readdir(stream)) {
    const std::string_view name(entry->d_name);
    if (name != "." && name != "..") names.emplace_back(name);
  }
  const int saved = errno;
  ::closedir(stream);
  if (saved != 0) return errno_error(saved, "list", "a worktree folder");
  return names;
}

// Deletes a tree a job wrote, through fds only: every entry is opened with
// O_NOFOLLOW relative to its parent, so no symbolic link (however it was
// swapped in) leads the deletion outside the tree. Folders a job made
// unreadable or unwritable are given back their owner's rwx first.
class TreeRemover {
 public:
  explicit TreeRemover(std::string path) : path_(std::move(path)) {}

  Result<void> run() {
    root_.reset(::open(path_.c_str(), O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC));
    if (!root_ && errno == EACCES && ::chmod(path_.c_str(), S_IRWXU) == 0) {
      root_.reset(::open(path_.c_str(), O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC));
    }
    if (!root_) return errno_error(errno, "open the worktree", path_);
    ::fchmod(root_.get(), S_IRWXU);
    if (auto ok = empty_folder(root_.get(), 0); !ok) return ok;
    while (!moved_up_.empty()) {
      const std::string name = std::move(moved_up_.back());
      moved_up_.pop_back();
      if (auto ok = remove_folder(root_.get(), name, 1); !ok) return ok;
    }
    root_.reset();
    if (::rmdir(path_.c_str()) != 0 && errno != ENOENT) {
      return errno_error(errno, "remove the worktree folder", path_);
    }
    return {};
  }

 private:
  Result<void> empty_folder(int dir, int depth) {
    Result<std::vector<std::string>> names = list_names(dir);
    if (!names) return std::move(names).error();
    for (const std::string& name : *names) {
      struct stat info {};
      if (::fstatat(dir, name.c_str(), &info, AT_SYMLINK_NOFOLLOW) != 0) {
        if (errno == ENOENT) continue;
        return errno_error(errno, "inspect", path_ + "/…/" + name);
      }
      if (!S_ISDIR(info.st_mode)) {
        if (::unlinkat(dir, name.c_str(), 0) != 0 && errno != ENOENT) {
          return errno_error(errno, "delete", path_ + "/…/" + name);
        }
        continue;
      }
      if (depth >= kMaxRemoveDepth) {
        if (auto ok = move_up(dir, name); !ok) return ok;
        continue;
      }
      if (auto ok = remove_folder(dir, name, depth + 1); !ok) return ok;
    }
    return {};
  }

  Result<void> remove_folder(int parent, const std::string& name, int depth) {
    constexpr int flags = O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC;
    UniqueFd folder(::openat(parent, name.c_str(), flags));
    if (!folder && errno == EACCES &&
        ::fchmodat(parent, name.c_str(), S_IRWXU, AT_SYMLINK_NOFOLLOW) == 0) {
      folder.reset(::openat(parent, name.c_str(), flags));
    }
    if (!folder) {
      if (errno == ENOENT) return {};
      return errno_error(errno, "open", path_ + "/…/" + name);
    }
    ::fchmod(folder.get(), S_IRWXU);
    if (auto ok = empty_folder(folder.get(), depth); !ok) return ok;
    folder.reset();
    if (::unlinkat(parent, name.c_str(), AT_REMOVEDIR) != 0 && errno != ENOENT) {
      return errno_error(errno, "delete the folder", path_ + "/…/" + name);
    }
    return {};
  }

  // Renames a deep folder to a fresh name at the top of the tree (never over
  // an existing entry) and queues it.
  Result<void> move_up(int parent, const std::string& name) {
    while (true) {
      std::string fresh = ".loopr-removing-" + std::to_string(next_++);
      if (::renameat2(parent, name.c_str(), root_.get(), fresh.c_str(), RENAME_NOREPLACE) == 0) {
        moved_up_.push_back(std::move(fresh));
        return {};
      }
      if (errno != EEXIST) return errno_error(errno, "move up", path_ + "/…/" + name);
    }
  }

  std::string path_;
  UniqueFd root_;
  std::vector<std::string> moved_up_;
  unsigned long next_ = 0;
};

Result<std::string> diff_output(Result<GitCommand> git, const std::string& from,
                                const std::string& to, bool stat) {
  if (!git) return std::move(git).error();
  Result<std::string> from_sha = resolve_commit(*git, from, "the diff's start");
  if (!from_sha) return std::move(from_sha).error();
  std::vector<std::string> args = {"diff"};
  args.insert(args.end(), kDiffOptions.begin(), kDiffOptions.end());
  if (stat) args.emplace_back("--stat");
  args.push_back(*from_sha);
  if (!to.empty()) {
    Result<std::string> to_sha = resolve_commit(*git, to, "the diff's end");
    if (!to_sha) return std::move(to_sha).error();
    args.push_back(*to_sha);
  }
  args.emplace_back("--");
  GitRunOptions options;
  options.read_only = true;
  return git->output(args, options);
}

}  // namespace

Result<WorktreeInfo> add_worktree(const std::string& repo, const std::string& path,
                                  const std::string& branch, const std::string& base) {
  Result<Repo> found = open_repo(repo);
  if (!found) return std::move(found).error();
  Result<GitCommand> git = repo_git(*found);
  if (!git) return std::move(git).error();
  GitRunOptions read_only;
  read_only.read_only = true;
  Result<GitResult> is_repo = git->run({"rev-parse", "--git-dir"}, read_only);
  if (!is_repo) return std::move(is_repo).error();
  if (!is_repo->succeeded()) {
    return make_error(errc::not_found, repo + " is not a git repository",
                      "run `git init` there first, or pass another folder");
  }

  if (auto ok = check_branch(*git, branch); !ok) return std::move(ok).error();
  Result<bool> exists = branch_exists(*git, branch);
  if (!exists) return std::move(exists).error();
  if (*exists) {
    return make_error(errc::invalid_arguments,
                      "the branch " + branch + " already exists in " + found->top,
                      "pick another loop branch, or open the existing worktree");
  }
  Result<std::string> base_sha = resolve_commit(*git, base.empty() ? "HEAD" : base, "the base");
  if (!base_sha) {
    if (base.empty()) {
      return make_error(errc::invalid_arguments, "the repository " + found->top + " has no commit",
                        "make a first commit, or pass a base");
    }
    return std::move(base_sha).error();
  }

  if (!is_absolute(path)) {
    return make_error(errc::invalid_arguments,
                      "the worktree path must be absolute, got '" + path + "'");
  }
  std::string normal = fs::path(path).lexically_normal().string();
  while (normal.size() > 1 && normal.back() == '/')
    normal.pop_back();
  const fs::path target(normal);
  const std::string leaf = target.filename().string();
  if (leaf.empty() || leaf == "." || leaf == ".." || target.parent_path().empty()) {
    return make_error(errc::invalid_arguments, "'" + path + "' cannot be a worktree folder");
  }
  if (auto ok = make_private_folders(target.parent_path().string()); !ok) {
    return std::move(ok).error();
  }
  Result<std::string> parent = real_path(target.parent_path().string());
  if (!parent) return std::move(parent).error();
  const std::string worktree = *parent + "/" + leaf;
  struct stat info {};
  if (::lstat(worktree.c_str(), &info) == 0) {
    std::error_code ec;
    if (!S_ISDIR(info.st_mode) || !fs::is_empty(worktree, ec) || ec) {
      return make_error(errc::invalid_arguments, worktree + " already exists",
                        "choose a new folder for the worktree");
    }
  }

  GitRunOptions add_options;
  add_options.config = {{"core.logAllRefUpdates", "true"}};  // base_commit comes from the reflog
  Result<std::string> added = git->output(
      {"worktree", "add", "--quiet", "-b", branch, "--", worktree, *base_sha}, add_options);
  if (!added) return std::move(added).error();

  Result<std::string> admin = find_admin_dir(found->common_dir, worktree);
  if (!admin) return std::move(admin).error();
  return WorktreeInfo{found->top, worktree, branch, *base_sha, *admin, found->common_dir};
}

Result<WorktreeInfo> open_worktree(const std::string& repo, const std::string& path,
                                   const std::string& branch) {
  Result<Repo> found = open_repo(repo);
  if (!found) return std::move(found).error();
  if (!is_absolute(path)) {
    return make_error(errc::invalid_arguments,
                      "the worktree path must be absolute, got '" + path + "'");
  }
  Result<std::string> worktree = real_path(path);
  if (!worktree) {
    return make_error(errc::not_found, "the worktree " + path + " does not exist",
                      "create it again with add_worktree");
  }
  Result<std::string> admin = find_admin_dir(found->common_dir, *worktree);
  if (!admin) return std::move(admin).error();
  WorktreeInfo info{found->top, *worktree, branch, {}, *admin, found->common_dir};

  Result<GitCommand> git = worktree_git(info);
  if (!git) return std::move(git).error();
  GitRunOptions read_only;
  read_only.read_only = true;
  Result<std::string> head = git->output({"symbolic-ref", "--quiet", "HEAD"}, read_only);
  if (!head || trim(*head) != "refs/heads/" + branch) {
    return make_error(errc::invalid_arguments,
                      "the worktree " + *worktree + " is not on the branch " + branch,
                      "open it with the branch it was created on");
  }
  // The oldest reflog entry of the branch is its creation: "branch: Created
  // from <base>". Reflogs live in the repository, out of the job's reach.
  Result<GitResult> reflog =
      git->run({"reflog", "show", "--format=%H", "--end-of-options", "refs/heads/" + branch, "--"},
               read_only);
  if (reflog && reflog->succeeded() && !reflog->out_truncated) {
    const std::string lines = trim(reflog->out);
    const std::size_t last = lines.rfind('\n');
    const std::string oldest = last == std::string::npos ? lines : lines.substr(last + 1);
    if (is_sha(oldest)) info.base_commit = oldest;
  }
  return info;
}

Result<CommitOutcome> commit_all(const WorktreeInfo& info, const std::string& message,
                                 const CommitScope& scope) {
  if (message.find('\0') != std::string::npos || trim(message).empty()) {
    return make_error(errc::invalid_arguments, "the commit message is empty or holds a NUL byte",
                      "pass a short description of the iteration");
  }
  Result<GitCommand> git = worktree_git(info);
  if (!git) return std::move(git).error();
  if (Result<std::string> added = git->output({"add", "--all"}); !added) {
    return std::move(added).error();
  }
  if (Result<void> left = leave_out(*git, info, scope); !left) return std::move(left).error();
  Result<GitResult> staged =
      git->run({"diff-index", "--cached", "--quiet", "--ignore-submodules=none", "HEAD", "--"});
  if (!staged) return std::move(staged).error();
  if (staged->exit_code != 0 && staged->exit_code != 1) {
    return git_failure({"diff-index"}, *staged);
  }
  // During a merge (start_merge, loops/git/merges.hpp) the commit is the merge
  // commit, with MERGE_HEAD as its second parent: it is made even when the
  // resolution leaves the tree as HEAD had it, or MERGE_HEAD would linger.
  GitRunOptions read_only;
  read_only.read_only = true;
  Result<GitResult> merging =
      git->run({"rev-parse", "--verify", "--quiet", "MERGE_HEAD^{commit}"}, read_only);
  if (!merging) return std::move(merging).error();
  const bool commit_now = staged->exit_code == 1 || merging->succeeded();
  if (commit_now) {
    GitRunOptions identity;
    identity.config = detail::commit_identity();
    Result<std::string> committed =
        git->output({"commit", "--quiet", "--no-verify", "--no-gpg-sign", "--cleanup=whitespace",
                     "--message=" + message},
                    identity);
    if (!committed) return std::move(committed).error();
  }
  Result<std::string> head = head_commit(info);
  if (!head) return std::move(head).error();
  return CommitOutcome{commit_now, std::move(*head)};
}

Result<bool> has_changes(const WorktreeInfo& info) {
  Result<GitCommand> git = worktree_git(info);
  if (!git) return std::move(git).error();
  GitRunOptions options;
  options.read_only = true;
  options.output_cap = 4096;  // only emptiness matters
  Result<std::string> status = git->output(
      {"status", "--porcelain=v1", "-z", "--untracked-files=all", "--ignore-submodules=dirty"},
      options);
  if (!status) return std::move(status).error();
  return !status->empty();
}

Result<std::string> head_commit(const WorktreeInfo& info) {
  Result<GitCommand> git = worktree_git(info);
  if (!git) return std::move(git).error();
  GitRunOptions options;
  options.read_only = true;
  Result<std::string> head = git->output({"rev-parse", "--verify", "HEAD^{commit}"}, options);
  if (!head) return std::move(head).error();
  std::string sha = trim(*head);
  if (!is_sha(sha)) {
    return make_error(errc::io, "git rev-parse printed '" + sha + "' for HEAD, not a sha");
  }
  return sha;
}

Result<std::string> diff(const WorktreeInfo& info, const std::string& from, const std::string& to) {
  return diff_output(worktree_git(info), from, to, false);
}

Result<std::string> diff_stat(const WorktreeInfo& info, const std::string& from,
                              const std::string& to) {
  return diff_output(worktree_git(info), from, to, true);
}

Result<std::string> branch_diff(const std::string& repo, const std::string& from,
                                const std::string& to, bool stat) {
  if (to.empty()) return make_error(errc::invalid_arguments, "branch_diff needs an end commit");
  Result<Repo> found = open_repo(repo);
  if (!found) return std::move(found).error();
  return diff_output(repo_git(*found), from, to, stat);
}

Result<void> remove_worktree(const WorktreeInfo& info, bool delete_branch) {
  Result<Repo> found = open_repo(info.repo);
  if (!found) return std::move(found).error();
  if (found->common_dir != info.common_dir || !is_absolute(info.path)) {
    return make_error(errc::invalid_arguments,
                      "the worktree info does not match the repository " + info.repo,
                      "use the WorktreeInfo returned by add_worktree or open_worktree");
  }
  Result<GitCommand> git = repo_git(*found);
  if (!git) return std::move(git).error();

  struct stat folder {};
  const bool folder_exists = ::lstat(info.path.c_str(), &folder) == 0;
  const bool admin_exists = ::access(info.admin_dir.c_str(), F_OK) == 0;
  if (folder_exists) {
    // Delete only what the repository itself says is this worktree.
    Result<std::string> admin = find_admin_dir(info.common_dir, info.path);
    if (!admin || *admin != info.admin_dir) {
      return make_error(errc::invalid_arguments,
                        info.path + " is not the worktree " + info.admin_dir + " of " + info.repo,
                        "nothing was deleted; check the loop's stored worktree path");
    }
    if (auto ok = TreeRemover(info.path).run(); !ok) return ok;
  }
  if (admin_exists) {
    // The folder is gone: git only drops its admin dir (no validation of the
    // worktree's `.git` file, no status run in it).
    Result<std::string> removed =
        git->output({"worktree", "remove", "--force", "--force", "--", info.path});
    if (!removed) return std::move(removed).error();
  }
  if (delete_branch) {
    Result<bool> exists = branch_exists(*git, info.branch);
    if (!exists) return std::move(exists).error();
    if (*exists) {
      if (auto ok = check_branch(*git, info.branch); !ok) return ok;
      Result<std::string> deleted =
          git->output({"branch", "--delete", "--force", "--", info.branch});
      if (!deleted) return std::move(deleted).error();
    }
  }
  return {};
}

}  // namespace loopr::loops
