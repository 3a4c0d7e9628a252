// Gitignore rules, with git's semantics (gitignore(5)):
// - one rule per line; blank lines and `#` comments skipped; `\#` and `\!`
//   escape a leading `#`/`!`; trailing spaces dropped unless escaped (`\ `);
// - `!` negates (re-includes); a trailing `/` matches directories only;
// - a rule with a '/' before its end is anchored to the directory holding the
//   .gitignore; one without matches the basename at any depth below it;
// - `*`, `?`, `[...]`, `**` as in GlobPattern (no `{}` alternation);
// - within a file the last matching rule wins; a deeper .gitignore wins over
//   a shallower one; .git/info/exclude ranks below every .gitignore;
// - a path under an ignored directory stays ignored: walkers never descend
//   into an ignored directory, so a negation cannot re-include its files.
// Not read: core.excludesFile and the global git config (tools must not
// depend on the user's home).
//
// Thread-safety: GitignoreFile and IgnoreScope are immutable once built and
// shared between walker threads through shared_ptr<const IgnoreScope>.
#pragma once

#include <memory>
#include <string>
#include <string_view>
#include <vector>

#include "common/glob_pattern.hpp"

namespace loopr::tool {

// Bytes of a .gitignore read at most; the rest of a larger file is ignored.
inline constexpr std::size_t kMaxGitignoreBytes = 1u << 20;

enum class IgnoreVerdict { none, ignore, include };

class GitignoreFile {
 public:
  // Lines that are not valid patterns are skipped, as git does.
  static GitignoreFile parse(std::string_view text);

  // `relative`: the path relative to the directory holding this file.
  IgnoreVerdict match(std::string_view relative, bool is_dir) const;
  bool empty() const { return rules_.empty(); }
  std::size_t size() const { return rules_.size(); }

 private:
  struct Rule {
    GlobPattern pattern;
    bool negated;
    bool dir_only;
    bool basename_only;
  };
  std::vector<Rule> rules_;
};

// Reads `name` in the directory `dir_fd` (borrowed, not closed) with
// openat(O_NOFOLLOW | O_NONBLOCK): a symlinked, missing, unreadable or
// non-regular file yields an empty rule set. At most kMaxGitignoreBytes.
GitignoreFile read_gitignore(int dir_fd, const char* name);

// The rules in force for one directory: its own .gitignore plus its
// ancestors' (a chain of immutable nodes), plus .git/info/exclude at the root.
class IgnoreScope {
 public:
  using Ptr = std::shared_ptr<const IgnoreScope>;

  // The worktree root's scope. `root_fd` is borrowed: reads .gitignore and
  // .git/info/exclude (each component opened with O_NOFOLLOW).
  static Ptr for_root(int root_fd);
  // The scope a walk of `start` (relative to the worktree root, "." for the
  // root) begins with: the root's, plus the .gitignore of each directory
  // from the root down to `start`'s parent. `start`'s own .gitignore is not
  // read (the walker reads it with the directory); nor does a rule that
  // ignores `start` itself apply (an explicit path is walked). Each
  // component is opened with O_NOFOLLOW from `root_fd` (borrowed); a
  // component that cannot be opened ends the chain there.
  static Ptr for_walk_of(int root_fd, std::string_view start);
  // The scope of `dir_relative` (relative to the worktree root, "." for the
  // root), a child directory of `parent`'s directory, given its rules.
  // Returns `parent` itself when `rules` is empty.
  static Ptr child(const Ptr& parent, std::string dir_relative, GitignoreFile rules);

  // `relative`: path from the worktree root of an entry inside (or below) this
  // scope's directory.
  bool ignored(std::string_view relative, bool is_dir) const;

  // A scope with no rules at all (nothing is ignored except by the walker's
  // own .git rule).
  static Ptr empty();

 private:
  Ptr parent_;
  std::string base_;  // directory relative to the root; "." for the root
  GitignoreFile rules_;
  std::shared_ptr<const GitignoreFile> exclude_;  // .git/info/exclude, shared by the chain
};

}  // namespace loopr::tool
