#include "memory/repository.hpp"

#include <fcntl.h>
#include <limits.h>
#include <stdlib.h>
#include <sys/stat.h>
#include <unistd.h>

#include <string_view>

#include "common/small_file.hpp"
#include "common/unique_fd.hpp"

namespace loopr::memory {
namespace {

std::string realpath_or_empty(const std::string& path) {
  char resolved[PATH_MAX];
  return ::realpath(path.c_str(), resolved) != nullptr ? std::string(resolved) : std::string();
}

std::string parent_of(const std::string& path) {
  const auto slash = path.find_last_of('/');
  if (slash == std::string::npos || slash == 0) return "/";
  return path.substr(0, slash);
}

// For a linked worktree's .git file: the main repository's folder, or empty.
std::string main_repository(const std::string& folder, const std::string& dot_git) {
  std::string line = first_line_of_small_file(dot_git);
  constexpr std::string_view kPrefix = "gitdir: ";
  if (line.compare(0, kPrefix.size(), kPrefix) != 0) return {};
  std::string gitdir = line.substr(kPrefix.size());
  if (gitdir.empty()) return {};
  if (gitdir.front() != '/') gitdir = folder + "/" + gitdir;
  std::string common = first_line_of_small_file(gitdir + "/commondir");
  std::string common_dir = common.empty()          ? gitdir
                           : common.front() == '/' ? common
                                                   : gitdir + "/" + common;
  common_dir = realpath_or_empty(common_dir);
  if (common_dir.empty()) return {};
  return parent_of(common_dir);
}

}  // namespace

std::string repository_of(const std::string& worktree) {
  for (std::string folder = worktree;; folder = parent_of(folder)) {
    const std::string dot_git = (folder == "/" ? std::string() : folder) + "/.git";
    struct stat st {};
    if (::lstat(dot_git.c_str(), &st) == 0) {
      if (S_ISDIR(st.st_mode)) return folder;
      if (S_ISREG(st.st_mode)) {
        std::string main = main_repository(folder, dot_git);
        return main.empty() ? folder : main;
      }
    }
    if (folder == "/") break;
  }
  return worktree;
}

}  // namespace loopr::memory
