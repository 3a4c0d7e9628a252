// Worktree: every path a tool touches is resolved here, beneath one directory
// fd, with openat2(RESOLVE_BENEATH | RESOLVE_NO_MAGICLINKS) (Linux >= 5.6).
// Never "canonicalize, check the prefix, then open": that races with a symlink
// swap. A path argument may be relative to the worktree or absolute inside it;
// anything else is path_outside_worktree.
//
// Ownership: a Worktree owns its root directory fd; returned UniqueFds are the
// caller's. Thread-safety: const methods may be called from several threads.
#pragma once

#include <sys/stat.h>
#include <sys/types.h>

#include <string>
#include <string_view>
#include <vector>

#include "common/error.hpp"
#include "common/unique_fd.hpp"
#include "common/worktree_path.hpp"

namespace loopr::tool {

// A directory fd (O_RDONLY | O_DIRECTORY, so it can be fsync'd) and one name
// inside it: the target of a create, replace or unlink.
struct ParentDir {
  UniqueFd dir;
  std::string leaf;      // a single component: never "", "." or ".."
  std::string relative;  // the whole normalized relative path, for messages
};

class Worktree {
 public:
  // Opens `root` (which must be an existing directory). The root path is
  // made absolute with realpath(3) once, here, so absolute tool arguments can
  // be mapped to relative ones; all later resolution goes through the fd.
  static Result<Worktree> open(const std::string& root);

  int root_fd() const { return root_.get(); }
  const std::string& root_path() const { return root_path_; }

  // worktree_relative_path(root_path(), path_argument): maps a tool's path
  // argument to a normalized path relative to the root:
  // "." and empty components dropped, ".." folded lexically (a ".." that
  // climbs above the root is path_outside_worktree). Absolute paths must lie
  // under root_path(). Returns "." for the root itself. The result is only a
  // name: opening it still goes through openat2, which refuses symlink escapes.
  Result<std::string> relative(std::string_view path_argument) const;

  // openat2(root, relative, {flags | O_CLOEXEC, mode, RESOLVE_BENEATH |
  // RESOLVE_NO_MAGICLINKS}). Errors are tool errors that name the path:
  // EXDEV/ELOOP escapes -> path_outside_worktree, ENOENT -> not_found.
  // A missing path is not_found() with the nearest existing path suggested.
  Result<UniqueFd> open(std::string_view relative, int flags, mode_t mode = 0) const;

  // open() for a caller that only asks whether a path is there (or walks a
  // tree): a missing path is a plain not_found, without the search for a
  // near name that open() makes.
  Result<UniqueFd> probe(std::string_view relative, int flags) const;

  // The not_found error for `relative`, a path a tool was given: `message`
  // and `hint` as given, and when an existing path is close to it
  // (nearest_existing_path, loopr-tool/path_suggestion.hpp) the hint starts
  // with "did you mean '<path>'?" and details.did_you_mean names it. Every
  // not_found for a tool's path argument is made here (read_whole_file's, for
  // a file gone since it was found, excepted). Costs a bounded walk of the
  // tree: call it for the error a tool returns, not for a path it probes.
  Error not_found(std::string_view relative, std::string message, std::string hint) const;

  // Opens the directory that will hold `relative`'s last component. With
  // create_parents, missing directories are made (mode 0777 & ~umask), each one
  // created relative to a parent resolved beneath the root; without, a missing
  // one is not_found() with the nearest existing path to all of `relative`.
  Result<ParentDir> open_parent(std::string_view relative, bool create_parents) const;

  // True if a component of the normalized relative path is ".git". Tools never
  // write there: git metadata is how code gets run outside the sandbox.
  static bool is_git_metadata(std::string_view relative);

  // True if `dir` is the worktree's .git directory or lies beneath it (found
  // by walking ".." up to the root), so a symlink to .git is caught too.
  bool dir_is_inside_git_metadata(int dir) const;

 private:
  Worktree(UniqueFd root, std::string root_path, dev_t dev, ino_t ino)
      : root_(std::move(root)), root_path_(std::move(root_path)), root_dev_(dev), root_ino_(ino) {}

  UniqueFd root_;
  std::string root_path_;
  dev_t root_dev_;
  ino_t root_ino_;
};

using loopr::split_path;  // common/worktree_path.hpp

}  // namespace loopr::tool
