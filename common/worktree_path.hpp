// Lexical names of paths inside a worktree, shared by loopr-tool (which then
// opens them with openat2, see loopr-tool/worktree.hpp) and looprd's
// read-before-edit tracking (which must name a file exactly as the tool does).
// Pure string functions: no file system access, thread-safe.
#pragma once

#include <string>
#include <string_view>
#include <vector>

#include "common/error.hpp"

namespace loopr {

// Splits a relative path into its components, dropping empty ones and ".".
std::vector<std::string> split_path(std::string_view relative);

// Maps a tool's path argument to a normalized path relative to `root_path`
// (absolute, itself normalized): "." and empty components dropped, ".."
// folded lexically. A ".." that climbs above the root, or an absolute path
// not under root_path, is errc::path_outside_worktree; an empty path or one
// with a NUL byte is errc::invalid_arguments. Returns "." for the root. The
// result is only a name: symlinks are for openat2 to refuse.
Result<std::string> worktree_relative_path(std::string_view root_path, std::string_view argument);

}  // namespace loopr
