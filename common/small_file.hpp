// The first line of a small file that a job may have written (a worktree's
// `.git` file, a git admin dir's HEAD): read without following a final
// symlink, without blocking (a FIFO would stall the caller, /dev/zero would
// never end), only from a regular file, at most PATH_MAX bytes.
#pragma once

#include <string>

namespace loopr {

// The file's first line without its newline and trailing spaces or CR;
// empty for anything else (missing, not regular, no line within PATH_MAX
// bytes, a NUL byte).
std::string first_line_of_small_file(const std::string& path);

}  // namespace loopr
