#include "loops/git/protected_restore.hpp"

#include <dirent.h>
#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <memory>
#include <vector>

#include "common/open_no_symlinks.hpp"
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

// Folders nested deeper than this in a new protected folder are not
// followed: the removal fails, and with it the loop (fail closed), instead of
// holding a descriptor per level.
constexpr int kMaxRemovalDepth = 256;

// The names in the folder `folder`, read through a descriptor of their own
// that is closed before any of them is looked at.
Result<std::vector<std::string>> names_in(int folder, const std::string& shown) {
  const int listing = ::fcntl(folder, F_DUPFD_CLOEXEC, 0);
  if (listing < 0) return errno_error(errno, "look into the protected path's new folder", shown);
  std::unique_ptr<DIR, int (*)(DIR*)> dir(::fdopendir(listing), &::closedir);
  if (!dir) {
    ::close(listing);
    return errno_error(errno, "look into the protected path's new folder", shown);
  }
  ::rewinddir(dir.get());
  std::vector<std::string> names;
  while (const dirent* entry = ::readdir(dir.get())) {
    const std::string_view name = entry->d_name;
    if (name != "." && name != "..") names.emplace_back(name);
  }
  return names;
}

// Removes everything in the folder `folder` (opened without following a
// link), then nothing else: links in it are removed, never followed.
// `shown` names the protected path in errors.
Result<void> empty_folder(int folder, const std::string& shown, int depth) {
  if (depth > kMaxRemovalDepth) {
    return make_error(errc::io,
                      "the protected path's new folder " + shown + " nests more than " +
                          std::to_string(kMaxRemovalDepth) + " folders deep",
                      "remove it by hand; loopr leaves the loop failed rather than validate "
                      "with it");
  }
  auto names = names_in(folder, shown);
  if (!names) return std::move(names).error();
  for (const std::string& name : *names) {
    struct stat info {};
    if (::fstatat(folder, name.c_str(), &info, AT_SYMLINK_NOFOLLOW) != 0) {
      if (errno == ENOENT) continue;
      return errno_error(errno, "look at a file in the protected path's new folder", shown);
    }
    if (S_ISDIR(info.st_mode)) {
      {
        const UniqueFd inner =
            open_no_symlinks(folder, name, O_RDONLY | O_DIRECTORY | O_NOFOLLOW, RESOLVE_BENEATH);
        if (!inner) {
          return errno_error(errno, "open a folder in the protected path's new folder", shown);
        }
        if (auto emptied = empty_folder(inner.get(), shown, depth + 1); !emptied) return emptied;
      }
      if (::unlinkat(folder, name.c_str(), AT_REMOVEDIR) != 0 && errno != ENOENT) {
        return errno_error(errno, "remove a folder in the protected path's new folder", shown);
      }
    } else if (::unlinkat(folder, name.c_str(), 0) != 0 && errno != ENOENT) {
      return errno_error(errno, "remove a file in the protected path's new folder", shown);
    }
  }
  return {};
}

// Removes the untracked file or folder `path` of the worktree when every
// folder above it is a real folder beneath the worktree (not a link that
// leads elsewhere). Every step is taken from an fd opened without following
// links (openat2 RESOLVE_NO_SYMLINKS | RESOLVE_BENEATH), so a link swapped
// in meanwhile is refused, never followed. False: left alone (or gone).
Result<bool> remove_untracked(const std::string& worktree, const std::string& path) {
  std::string relative = path;
  while (!relative.empty() && relative.back() == '/')
    relative.pop_back();
  if (relative.empty()) return false;
  const std::size_t slash = relative.rfind('/');
  const std::string parent_path = slash == std::string::npos ? "." : relative.substr(0, slash);
  const std::string name = slash == std::string::npos ? relative : relative.substr(slash + 1);
  const std::string shown = worktree + "/" + relative;
  const UniqueFd top = open_no_symlinks(AT_FDCWD, worktree, O_PATH | O_DIRECTORY);
  if (!top) return errno_error(errno, "open the worktree", worktree);
  const UniqueFd parent =
      open_no_symlinks(top.get(), parent_path, O_RDONLY | O_DIRECTORY, RESOLVE_BENEATH);
  if (!parent) {
    if (errno == ENOENT || errno == ELOOP || errno == ENOTDIR || errno == EXDEV) return false;
    return errno_error(errno, "open the protected path's folder", shown);
  }
  struct stat info {};
  if (::fstatat(parent.get(), name.c_str(), &info, AT_SYMLINK_NOFOLLOW) != 0) {
    return errno == ENOENT ? Result<bool>(false)
                           : errno_error(errno, "look at the protected path's new file", shown);
  }
  if (S_ISDIR(info.st_mode)) {
    // A new folder in a protected place: all of it.
    const UniqueFd folder =
        open_no_symlinks(parent.get(), name, O_RDONLY | O_DIRECTORY | O_NOFOLLOW, RESOLVE_BENEATH);
    if (!folder) return errno_error(errno, "open the protected path's new folder", shown);
    if (auto emptied = empty_folder(folder.get(), shown, 1); !emptied) return emptied.error();
    if (::unlinkat(parent.get(), name.c_str(), AT_REMOVEDIR) != 0 && errno != ENOENT) {
      return errno_error(errno, "remove the protected path's new folder", shown);
    }
    return true;
  }
  if (::unlinkat(parent.get(), name.c_str(), 0) != 0 && errno != ENOENT) {
    return errno_error(errno, "remove the protected path's new file", shown);
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
