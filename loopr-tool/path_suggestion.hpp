// "Did you mean": the existing path nearest to one a tool could not find
// (src/mian.c -> src/main.c, scr/main.c -> src/main.c, README -> README.md,
// readme.md -> README.md), for the hint of a not_found error
// (Worktree::not_found).
//
// The path is walked one component at a time from the worktree root, every
// step opened through Worktree::probe (openat2 RESOLVE_BENEATH), so nothing
// outside the worktree is ever named: a candidate that is a symlink leading
// out is passed over. At the first missing component the closest name in its
// (existing) folder is taken, and the rest is resolved the same way.
//
// Cost is bounded whatever the tree: at most kMaxSuggestionComponents
// components, at most kMaxCorrectedComponents of them corrected, each by
// reading at most kMaxFolderEntries entries of one folder and comparing each
// name with a banded edit distance of at most kMaxNameDistance.
// Thread-safe: no state beyond the worktree's fd.
#pragma once

#include <cstddef>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

namespace loopr::tool {

class Worktree;

inline constexpr std::size_t kMaxFolderEntries = 10'000;
inline constexpr std::size_t kMaxCorrectedComponents = 4;
inline constexpr std::size_t kMaxSuggestionComponents = 64;
inline constexpr std::size_t kMaxNameDistance = 8;
// How many of a folder's closest names are tried (opened) before giving up.
inline constexpr std::size_t kMaxTriedNames = 8;

// How close the folder entry `name` is to `wanted`, a name that was not
// found; lower is closer, nullopt when it is not close enough to suggest.
// Closest: the same name but for ASCII case (1); then `wanted` with an
// extension added ("README" -> "README.md", 3); otherwise twice the edit
// distance (loopr::edit_distance, ignoring ASCII case) when it is at most
// max(1, |wanted| / 3), and at most kMaxNameDistance. `name` equal to
// `wanted` is nullopt: it is what was not found.
std::optional<std::size_t> name_closeness(std::string_view wanted, std::string_view name);

struct NearNames {
  std::vector<std::string> names;  // closest first (ties by name), at most kMaxTriedNames
  std::size_t entries_read = 0;    // entries of the folder looked at ("." and ".." not counted)
};

// The names in the folder `dir` (an fd the caller keeps) closest to `wanted`
// by name_closeness(), reading at most `max_entries` of its entries. "." and
// ".." and .git (in any case) are never named.
NearNames nearest_names(int dir, std::string_view wanted,
                        std::size_t max_entries = kMaxFolderEntries);

// The existing path nearest to `relative` (a normalized worktree-relative
// path, Worktree::relative), itself relative to the worktree root; nullopt if
// no component needed correcting (the path exists), a component could not be
// corrected, the path leads outside the worktree or into .git, or a bound was
// reached.
std::optional<std::string> nearest_existing_path(const Worktree& worktree,
                                                 std::string_view relative);

}  // namespace loopr::tool
