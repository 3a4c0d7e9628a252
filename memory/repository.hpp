// repository_of: the repository a worktree belongs to, the key of its
// repository-scoped memory notes. A folder with a .git directory is its own
// repository; a linked worktree (.git is a file "gitdir: <main>/.git/
// worktrees/<name>") belongs to the main repository named by that gitdir's
// commondir; a folder inside a repository belongs to the nearest such
// folder above it; a folder in no repository is its own key.
//
// The worktree's files are not trusted: a job can rewrite .git. So a loop's
// calls carry the repository loopr made the loop for (ToolCallRequest::repo)
// and this is used only for a client's own calls, where the client names
// any folder it likes anyway (same user, SO_PEERCRED). It never blocks or
// reads much whatever a job planted: .git and commondir are read only when
// they are small regular files (no FIFO, no device, no final symlink).
// Threads: any.
#pragma once

#include <string>

namespace loopr::memory {

// `worktree` is a realpath; so is the result.
std::string repository_of(const std::string& worktree);

}  // namespace loopr::memory
