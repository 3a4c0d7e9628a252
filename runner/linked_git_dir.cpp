#include "runner/linked_git_dir.hpp"

#include <sys/stat.h>

#include <filesystem>

#include "common/open_no_symlinks.hpp"

namespace loopr::runner {
namespace {

constexpr std::size_t kGitFileCap = 4096;

// The first line of a small regular file, without its newline. (Opened
// O_NONBLOCK: a FIFO planted as `.git` must not hang the job's setup.)
std::optional<std::string> first_line(const UniqueFd& fd) {
  struct stat st {};
  if (!fd || ::fstat(fd.get(), &st) != 0 || !S_ISREG(st.st_mode)) return std::nullopt;
  std::string text(kGitFileCap, '\0');
  const ssize_t n = ::read(fd.get(), text.data(), text.size());
  if (n <= 0 || static_cast<std::size_t>(n) == text.size()) return std::nullopt;
  text.resize(static_cast<std::size_t>(n));
  text = text.substr(0, text.find('\n'));
  if (text.find('\0') != std::string::npos) return std::nullopt;
  return text;
}

// `value` as git writes it: absolute, or relative to `base` (git >= 2.48
// with worktree.useRelativePaths); lexically normal either way.
std::string absolute_from(const std::string& base, const std::string& value) {
  return (std::filesystem::path(base) / value).lexically_normal().string();
}

}  // namespace

std::optional<LinkedGitDir> find_linked_git_dir(const std::string& worktree) {
  const std::string dot_git = worktree + "/.git";
  const auto gitfile = first_line(open_no_symlinks(AT_FDCWD, dot_git, O_RDONLY | O_NONBLOCK));
  if (!gitfile || gitfile->rfind("gitdir: ", 0) != 0) return std::nullopt;
  const std::filesystem::path admin = absolute_from(worktree, gitfile->substr(8));
  const std::string name = admin.filename().string();
  if (name.empty() || name == "." || name == ".." ||
      admin.parent_path().filename() != "worktrees") {
    return std::nullopt;
  }
  LinkedGitDir found;
  found.path = admin.parent_path().parent_path().string();
  found.folder = open_no_symlinks(AT_FDCWD, found.path, O_PATH | O_DIRECTORY);
  if (!found.folder) return std::nullopt;
  const std::string back_file = "worktrees/" + name + "/gitdir";
  const auto back = first_line(
      open_no_symlinks(found.folder.get(), back_file, O_RDONLY | O_NONBLOCK, RESOLVE_BENEATH));
  if (!back || absolute_from(admin.string(), *back) != dot_git) return std::nullopt;
  return found;
}

}  // namespace loopr::runner
