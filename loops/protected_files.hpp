// Protected files (issue 27, [validation] protected_paths): what a loop may
// not change to pass its validation — typically its tests.
//
// Two guards, the second of which makes the guarantee:
// - a file tool (file_access write or delete) whose path a pattern protects
//   is refused before it runs, with an error that names the setting and the
//   pattern (ProtectedPaths here);
// - before each iteration is committed, and so before it is validated,
//   every protected file that differs from the loop's base commit — changed
//   by a command, through a link, by git itself, or added — is put back as
//   the base commit has it, and the model is told which
//   (loops/git/protected_restore.hpp). The branch never holds a change to a
//   protected file, and the validation always runs them as they were, so a
//   loop cannot pass because one changed.
//
// A pattern is a GlobPattern (common/glob_pattern.hpp) relative to the
// repository's top, and protects the paths it matches and everything beneath
// them ("tests" and "tests/**" both protect tests/a/b.c), as a git pathspec
// with the glob magic does (the restore asks git with exactly that).
#pragma once

#include <optional>
#include <string>
#include <vector>

#include "common/error.hpp"
#include "common/glob_pattern.hpp"

namespace loopr::loops {

class ProtectedPaths {
 public:
  // Compiles the patterns (checked when the settings were read; a pattern
  // that no longer compiles is an Error naming it).
  static Result<ProtectedPaths> compile(const std::vector<std::string>& patterns);

  bool empty() const { return patterns_.empty(); }
  const std::vector<std::string>& sources() const { return sources_; }

  // The pattern that protects `path` (relative to the worktree's top,
  // '/'-separated, lexically normal), or nullopt.
  std::optional<std::string> protecting(const std::string& path) const;
  // Whether a pattern may protect something beneath `folder` (relative, as
  // above): true unless every pattern's leading literal folders lead
  // elsewhere ("tests/**" protects nothing beneath "node_modules"; "**/x"
  // may protect something beneath any folder).
  bool may_protect_beneath(const std::string& folder) const;

 private:
  std::vector<std::string> sources_;
  std::vector<GlobPattern> patterns_;
};

}  // namespace loopr::loops
