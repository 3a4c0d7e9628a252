// walk_tree: visits the regular files beneath one directory of the worktree.
//
// - Directories are opened with openat(parent_fd, name, O_DIRECTORY |
//   O_NOFOLLOW | O_CLOEXEC) from an already-open parent, the start directory
//   through Worktree::open (openat2 RESOLVE_BENEATH). Entries are read with
//   getdents64. Symlinks are never followed: a symlink (to a file or a
//   directory) is skipped and counted in WalkStats::skipped_symlinks.
// - `.git` (directory or gitfile) is always skipped; other hidden entries are
//   visited. .gitignore files are applied (gitignore.hpp), including those of
//   the start directory's ancestors up to the worktree root. The start
//   directory itself is walked even if a rule ignores it (an explicit path).
// - Depth is bounded by WalkOptions::max_depth (directories below are
//   counted in skipped_depth). Open directory fds are bounded: at most
//   kMaxHeldDirFds are held by queued work; beyond that a queued directory
//   is re-opened from the root by its path through Worktree::open.
// - Parallel: `threads` workers (the caller's thread is worker 0) consume a
//   LIFO queue of directories and batches of files. The visitor is called
//   concurrently from different workers, never twice at once with the same
//   worker index; the visiting order is unspecified (callers sort).
#pragma once

#include <atomic>
#include <cstddef>
#include <cstdint>
#include <functional>
#include <string_view>

#include "common/error.hpp"
#include "loopr-tool/worktree.hpp"

namespace loopr::tool {

inline constexpr int kMaxWalkDepth = 64;
inline constexpr std::size_t kMaxHeldDirFds = 256;

struct WalkOptions {
  unsigned threads = 1;  // 1..kMaxWalkThreads
  int max_depth = kMaxWalkDepth;
  bool gitignore = true;
};

inline constexpr unsigned kMaxWalkThreads = 8;
// min(available cores, kMaxWalkThreads), at least 1.
unsigned default_walk_threads();

struct WalkEntry {
  int dir_fd;                 // the file's directory; borrowed, valid during the call only
  std::string_view name;      // the file's name in dir_fd
  std::string_view relative;  // the file's path from the worktree root
};

struct WalkStats {
  std::uint64_t files = 0;             // files given to the visitor
  std::uint64_t directories = 0;       // directories read
  std::uint64_t skipped_symlinks = 0;  // symlinks not followed
  std::uint64_t skipped_depth = 0;     // directories deeper than max_depth
  std::uint64_t unreadable = 0;        // directories that could not be opened or read
};

// Called for each regular file that is not ignored. `worker` < threads.
using FileVisitor = std::function<void(const WalkEntry& entry, unsigned worker)>;

// Walks the directory `start` (a normalized relative path from
// Worktree::relative; "." for the root). Errors: opening `start` (not_found,
// path_outside_worktree, not_directory, ...). Setting `*stop` (may be null)
// from the visitor ends the walk early. An exception thrown by the visitor
// stops all workers and is rethrown on the calling thread.
Result<WalkStats> walk_tree(const Worktree& worktree, std::string_view start,
                            const WalkOptions& options, const FileVisitor& visit,
                            std::atomic<bool>* stop = nullptr);

}  // namespace loopr::tool
