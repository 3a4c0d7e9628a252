// Atomic replacement of one file in a directory already resolved beneath the
// worktree (Worktree::open_parent): temp file in the same directory, write,
// mode (kept, or 0666 & ~umask for a new file), owner kept when root, fsync,
// renameat over the leaf, fsync the directory. Readers see the old file or
// the new one, never a mix; the temp file is removed on any failure.
//
// Refused: a leaf that is a symlink (the error names its target and says to
// write that path instead), a directory, or a path inside .git.
#pragma once

#include <sys/stat.h>

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>

#include "common/error.hpp"
#include "loopr-tool/worktree.hpp"

namespace loopr::tool {

// What stands at parent.leaf now: nullopt if nothing, else its lstat.
// Errors: a symlink or a directory at the leaf.
Result<std::optional<struct stat>> existing_regular_file(const ParentDir& parent);

// Replaces (or creates) parent.leaf with `content`. `existing` is what
// existing_regular_file() returned, so the caller can check it first.
Result<void> atomic_replace(const ParentDir& parent, std::string_view content,
                            const std::optional<struct stat>& existing);

// Reads the whole regular file parent.leaf (up to max_bytes; larger is
// errc::too_large).
Result<std::string> read_whole_file(const ParentDir& parent, std::size_t max_bytes);

// Refuses writes into git metadata (by name, or a directory that resolves
// into the worktree's .git) with errc::protected_path.
Result<void> refuse_git_metadata(const Worktree& worktree, const ParentDir& parent);

// The same check for a path whose folders may not exist yet, made on the
// deepest folder that does, so refusing never leaves new folders behind
// (write_file must not create .git/hooks before it refuses .git/hooks/x).
Result<void> refuse_git_metadata_before_creating(const Worktree& worktree,
                                                 const std::string& relative);

// The largest file write_file and edit_file handle (edits are in memory).
inline constexpr std::size_t kMaxEditableBytes = 64u << 20;

// A file over kMaxEditableBytes exists where a change was asked: read_file
// gives such files no content_hash, so no read can ever allow the change;
// say that (too_large), rather than "read it first".
Error too_large_to_change(const std::string& relative, std::int64_t size);

}  // namespace loopr::tool
