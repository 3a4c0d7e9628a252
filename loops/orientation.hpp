// Orientation: what an iteration's first message tells the model about the
// repository before it calls a tool (issue 24), read from the loop's
// worktree through hardened git (loops/git/git_command.hpp), never by following
// the worktree's files on disk (a job may have planted links or FIFOs):
//   - the repository's instructions for agents: the first of
//     [context] instructions_files committed at HEAD (`git show HEAD:FILE`),
//     cut at a line's end to instructions_max_bytes;
//   - the file tree: `git ls-files --cached --others --exclude-standard`
//     (tracked files and new ones that .gitignore does not hide), drawn as
//     an indented tree; over tree_max_bytes, folders deeper than a level are
//     folded into "name/ (N files)", then whole lines are left out, and the
//     count of what is not shown is said;
//   - what earlier iterations committed on the loop's branch:
//     `git diff --stat base..HEAD` (empty when nothing was).
// Blocking (git): run it on the engine's git pool.
#pragma once

#include <cstddef>
#include <string>
#include <vector>

#include "common/error.hpp"
#include "config/settings.hpp"
#include "loops/git/worktrees.hpp"

namespace loopr::loops {

struct Orientation {
  std::string instructions_file;  // as named in settings; empty: none found
  std::string instructions;       // its text, cut to the cap
  bool instructions_cut = false;
  std::string tree;                  // indented, "dir/" lines and file lines
  std::size_t tree_files = 0;        // files in the worktree (git's view)
  std::size_t tree_files_shown = 0;  // of them, named in `tree`
  std::string diff_stat;             // base..HEAD; empty when nothing changed
};

Result<Orientation> orient(const WorktreeInfo& worktree, const std::string& base_commit,
                           const config::ContextSettings& settings);

// The tree drawing on its own (for tests): `paths` sorted or not, '/'-separated.
struct TreeDrawing {
  std::string text;
  std::size_t files_shown = 0;
};
TreeDrawing draw_tree(const std::vector<std::string>& paths, std::size_t max_bytes);

}  // namespace loopr::loops
