#include "loopr-tool/worktree.hpp"

#include <fcntl.h>
#include <linux/openat2.h>
#include <sys/syscall.h>
#include <unistd.h>

#include <cerrno>
#include <climits>
#include <cstdlib>

#include "loopr-tool/path_suggestion.hpp"

namespace loopr::tool {
namespace {

// glibc 2.36 has no openat2 wrapper.
int sys_openat2(int dirfd, const char* path, int flags, mode_t mode, std::uint64_t resolve) {
  open_how how{};
  how.flags = static_cast<__u64>(static_cast<unsigned>(flags | O_CLOEXEC));
  how.mode = (flags & (O_CREAT | O_TMPFILE)) ? mode : 0;
  how.resolve = resolve;
  for (;;) {
    const long fd = syscall(SYS_openat2, dirfd, path, &how, sizeof how);
    // EAGAIN: a concurrent rename raced the lookup; the kernel asks us to retry.
    if (fd < 0 && errno == EAGAIN) continue;
    return static_cast<int>(fd);
  }
}

constexpr std::uint64_t kResolve = RESOLVE_BENEATH | RESOLVE_NO_MAGICLINKS;

Error open_error(int err, std::string_view relative) {
  const std::string shown(relative);
  switch (err) {
    case EXDEV:
    case ELOOP:
      return make_error(errc::path_outside_worktree,
                        "path '" + shown + "' leads outside the worktree (through '..', an " +
                            "absolute or escaping symlink, or a /proc magic link)",
                        "use a path inside the worktree; symlinks may only point within it");
    case ENOENT:
      return make_error(errc::not_found, "no such file or directory: '" + shown + "'",
                        "check the path with list_directory or glob");
    case ENOTDIR:
      return make_error(errc::not_directory, "a component of '" + shown + "' is not a directory",
                        "check the path with list_directory");
    case EISDIR:
      return make_error(errc::is_directory, "'" + shown + "' is a directory",
                        "use list_directory to see its entries");
    case EACCES:
    case EPERM:
      return make_error(errc::sandbox_denied, "permission denied: '" + shown + "'",
                        "this path is not accessible to tools; choose another path");
    default:
      return errno_error(err, "cannot open", shown);
  }
}

}  // namespace

Result<Worktree> Worktree::open(const std::string& root) {
  char resolved[PATH_MAX];
  if (::realpath(root.c_str(), resolved) == nullptr) {
    return errno_error(errno, "cannot open worktree", root);
  }
  const int fd = ::open(resolved, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
  if (fd < 0) return errno_error(errno, "cannot open worktree", resolved);
  UniqueFd owned(fd);
  struct stat st {};
  if (::fstat(fd, &st) != 0) return errno_error(errno, "cannot stat worktree", resolved);
  return Worktree(std::move(owned), resolved, st.st_dev, st.st_ino);
}

Result<std::string> Worktree::relative(std::string_view argument) const {
  return worktree_relative_path(root_path_, argument);
}

Result<UniqueFd> Worktree::open(std::string_view relative, int flags, mode_t mode) const {
  const std::string path(relative.empty() ? "." : relative);
  const int fd = sys_openat2(root_.get(), path.c_str(), flags, mode, kResolve);
  if (fd >= 0) return UniqueFd(fd);
  Error error = open_error(errno, path);
  if (error.code != errc::not_found) return error;
  return not_found(path, std::move(error.message), std::move(error.hint));
}

Result<UniqueFd> Worktree::probe(std::string_view relative, int flags) const {
  const std::string path(relative.empty() ? "." : relative);
  const int fd = sys_openat2(root_.get(), path.c_str(), flags, 0, kResolve);
  if (fd < 0) return open_error(errno, path);
  return UniqueFd(fd);
}

Error Worktree::not_found(std::string_view relative, std::string message, std::string hint) const {
  Error error = make_error(errc::not_found, std::move(message), std::move(hint));
  if (auto nearest = nearest_existing_path(*this, relative)) {
    error.hint = "did you mean '" + *nearest + "'?" +
                 (error.hint.empty() ? std::string() : " If not, " + error.hint);
    error.details = {{"did_you_mean", *nearest}};
  }
  return error;
}

Result<ParentDir> Worktree::open_parent(std::string_view relative, bool create_parents) const {
  std::vector<std::string> parts = split_path(relative);
  if (parts.empty() || parts.back() == "..") {
    return make_error(errc::invalid_arguments,
                      "path '" + std::string(relative) + "' does not name a file",
                      "give the path of a file inside the worktree");
  }
  std::string leaf = std::move(parts.back());
  parts.pop_back();

  std::string parent = ".";
  UniqueFd dir;
  {
    auto opened = open(".", O_RDONLY | O_DIRECTORY);
    if (!opened) return std::move(opened).error();
    dir = std::move(*opened);
  }
  for (const std::string& part : parts) {
    parent = parent == "." ? part : parent + "/" + part;
    auto next = probe(parent, O_RDONLY | O_DIRECTORY);
    if (!next && next.error().code == errc::not_found && create_parents) {
      // `dir` was resolved beneath the root, so the new directory is too.
      if (::mkdirat(dir.get(), part.c_str(), 0777) != 0 && errno != EEXIST) {
        return errno_error(errno, "cannot create directory", parent);
      }
      next = probe(parent, O_RDONLY | O_DIRECTORY);
    }
    if (!next && next.error().code == errc::not_found) {
      Error missing = std::move(next).error();
      return not_found(relative, std::move(missing.message), std::move(missing.hint));
    }
    if (!next) return std::move(next).error();
    dir = std::move(*next);
  }
  std::string whole = parent == "." ? leaf : parent + "/" + leaf;
  return ParentDir{std::move(dir), std::move(leaf), std::move(whole)};
}

bool Worktree::is_git_metadata(std::string_view relative) {
  for (const std::string& part : split_path(relative)) {
    if (part == ".git") return true;
  }
  return false;
}

bool Worktree::dir_is_inside_git_metadata(int dir) const {
  struct stat git {};
  if (::fstatat(root_.get(), ".git", &git, AT_SYMLINK_NOFOLLOW) != 0 || !S_ISDIR(git.st_mode)) {
    return false;
  }
  UniqueFd current(::openat(dir, ".", O_PATH | O_DIRECTORY | O_CLOEXEC));
  // Bounded walk: PATH_MAX / 2 levels is deeper than any real tree.
  for (int depth = 0; current && depth < PATH_MAX / 2; ++depth) {
    struct stat st {};
    if (::fstat(current.get(), &st) != 0) return true;  // fail closed
    if (st.st_dev == git.st_dev && st.st_ino == git.st_ino) return true;
    if (st.st_dev == root_dev_ && st.st_ino == root_ino_) return false;
    UniqueFd up(::openat(current.get(), "..", O_PATH | O_DIRECTORY | O_CLOEXEC));
    if (!up) return true;
    struct stat up_st {};
    if (::fstat(up.get(), &up_st) != 0) return true;
    if (up_st.st_dev == st.st_dev && up_st.st_ino == st.st_ino) return false;  // reached "/"
    current = std::move(up);
  }
  return true;
}

}  // namespace loopr::tool
