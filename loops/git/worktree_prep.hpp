// Worktrees that are ready to work in (issue 25): what a new loop worktree
// is given before its first iteration, besides what git checked out.
//
// - [worktrees] include: files and folders of the user's checkout that git
//   does not track (node_modules, .env, build/, .venv) copied into the new
//   worktree; a child loop's worktree gets, on top of those, every ignored
//   path of its parent's worktree (its build outputs), so a plan builds cold
//   at most once.
// - Copies are copy-on-write where the file system can (FICLONE), else
//   copy_file_range: never a hard link, never a link into the source. Modes
//   (less set-id bits) and mtimes are kept. Symlinks stay symlinks, except
//   that one pointing into the source (or the user's checkout) is re-pointed
//   at the same place in the new worktree, and a relative one that climbs out
//   of the source is made absolute (where it pointed before), so nothing in
//   the worktree leads back into the user's files. Every path is opened
//   component by component without following a link (a parent's worktree
//   is a loop's, untrusted): a pattern never reaches outside the source.
//   Tracked paths of the new worktree are never overwritten. No copy enters
//   a .git (at any depth), the new worktree or the folder of all loops'
//   worktrees (when it lies inside the source: another loop's files).
// - Room: a copy keeps a sparse file's holes, counts what it writes (not
//   what reflink shares) against CopyLimits.max_bytes, and never leaves the
//   worktree's file system with less than a reserve free; either stops the
//   preparation with an error that names the limit.
// - Warm builds: each tracked file of the new worktree whose bytes equal the
//   source's gets the source's mtime, so the copied build outputs are not
//   older than the sources they were built from. A copied build folder
//   (one holding CMakeCache.txt or config.status) has the source's absolute
//   path rewritten to the worktree's in its text files, mtimes kept. Binary
//   files are not rewritten, except that an executable or shared library
//   whose RUNPATH names the old path (the checkout's build folder, which the
//   sandbox hides) has it re-pointed in place as "$ORIGIN/..." (it is always
//   shorter), else is removed so the build links it again; one that names
//   the old path only elsewhere (a string, debug info) is kept; object files
//   keep the old path in their debug info (harmless to a build); Ninja's
//   .ninja_deps keeps the old paths (the report says so; Ninja then
//   rebuilds what those deps name).
//
// Synchronous and stateless: call from the git pool (offload).
#pragma once

#include <cstdint>
#include <nlohmann/json.hpp>
#include <string>
#include <vector>

#include "common/error.hpp"
#include "loops/git/worktree_info.hpp"

namespace loopr::loops {

struct PrepReport {
  std::string source;                // the folder copied from
  std::vector<std::string> entries;  // top-level paths brought in (relative)
  std::uint64_t files = 0;           // regular files copied
  std::uint64_t bytes = 0;
  std::uint64_t reflinked = 0;  // of them, shared copy-on-write
  std::uint64_t symlinks = 0;
  std::uint64_t symlinks_repointed = 0;  // made to point into the worktree or absolute
  std::uint64_t skipped_tracked = 0;     // paths git tracks in the worktree: left as checked out
  std::uint64_t skipped_special = 0;     // fifos, sockets, devices
  std::uint64_t mtimes_aligned = 0;      // tracked files given the source's mtime
  std::vector<std::string> relocated;    // build folders whose absolute paths were rewritten
  std::uint64_t files_relocated = 0;
  // Executables and shared libraries of a build folder whose RUNPATH named
  // the old path: re-pointed in place ($ORIGIN-relative, mtime kept), or,
  // where that does not fit, removed so the build links them again.
  std::uint64_t runpaths_rewritten = 0;
  std::uint64_t binaries_removed = 0;
  std::vector<std::string> notes;  // what could not be done, for the journal

  nlohmann::json to_json() const;
};

struct CopyLimits {
  std::uint64_t max_bytes = std::uint64_t{16} << 30;  // [worktrees] copy_limit_mb
  // Free space a copy must leave; 0: 1 GiB, or 5 % of a smaller file system.
  std::uint64_t min_free_bytes = 0;
};

// Brings `include` (patterns relative to the source's top: glob(7) per path
// component, a trailing '/' for folders only) into `dest` from the user's
// checkout (dest.repo); when `parent_branch` is not empty and the worktree
// on that branch still exists, from that worktree instead, with its ignored
// paths too. Then aligns mtimes and relocates build folders. A pattern that
// matches nothing is not an error (noted).
Result<PrepReport> bring_into_worktree(const WorktreeInfo& dest,
                                       const std::vector<std::string>& include,
                                       const std::string& parent_branch,
                                       const CopyLimits& limits = {});

}  // namespace loopr::loops
