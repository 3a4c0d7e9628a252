// file_delete {path, recursive=false}: unlinks relative to the parent fd.
// Folders need recursive=true and are removed depth-first through fds opened
// with O_NOFOLLOW | O_DIRECTORY: a symlink is removed itself, never followed.
// The worktree root and git metadata are refused.
#include <dirent.h>
#include <fcntl.h>
#include <unistd.h>

#include "loopr-tool/arguments.hpp"
#include "loopr-tool/atomic_write.hpp"
#include "loopr-tool/tools.hpp"

namespace loopr::tool {
namespace {

constexpr int kMaxDepth = 256;

// Empties the folder `dir` (owned by the caller); counts what it removes.
Result<void> remove_contents(int dir, const std::string& shown, int depth, std::uint64_t& removed) {
  if (depth > kMaxDepth) {
    return make_error(errc::too_large, "'" + shown + "' is nested deeper than " +
                                           std::to_string(kMaxDepth) + " folders",
                      "delete its deeper parts first");
  }
  const int listing_fd = ::dup(dir);
  if (listing_fd < 0) return errno_error(errno, "cannot read folder", shown);
  DIR* listing = ::fdopendir(listing_fd);
  if (listing == nullptr) {
    ::close(listing_fd);
    return errno_error(errno, "cannot read folder", shown);
  }
  std::vector<std::pair<std::string, bool>> entries;
  while (const dirent* entry = ::readdir(listing)) {
    const std::string name = entry->d_name;
    if (name == "." || name == "..") continue;
    struct stat st {};
    if (::fstatat(dir, name.c_str(), &st, AT_SYMLINK_NOFOLLOW) != 0) continue;
    entries.emplace_back(name, S_ISDIR(st.st_mode));
  }
  ::closedir(listing);
  for (const auto& [name, is_dir] : entries) {
    const std::string child = shown + "/" + name;
    if (is_dir) {
      UniqueFd sub(::openat(dir, name.c_str(), O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC));
      if (!sub) return errno_error(errno, "cannot open folder", child);
      if (auto r = remove_contents(sub.get(), child, depth + 1, removed); !r) return r;
    }
    if (::unlinkat(dir, name.c_str(), is_dir ? AT_REMOVEDIR : 0) != 0) {
      return errno_error(errno, "cannot delete", child);
    }
    ++removed;
  }
  return {};
}

}  // namespace

Result<Json> file_delete(const Worktree& worktree, const Json& raw) {
  auto args = Arguments::parse(raw, "file_delete", {"path", "recursive"});
  if (!args) return std::move(args).error();
  auto path = args->required_string("path");
  if (!path) return std::move(path).error();
  auto recursive = args->boolean_or("recursive", false);
  if (!recursive) return std::move(recursive).error();
  auto rel = worktree.relative(*path);
  if (!rel) return std::move(rel).error();
  if (*rel == ".") {
    return make_error(errc::protected_path, "the worktree root cannot be deleted",
                      "delete the files or folders inside it instead");
  }
  auto parent = worktree.open_parent(*rel, /*create_parents=*/false);
  if (!parent) return std::move(parent).error();
  if (auto r = refuse_git_metadata(worktree, *parent); !r) return std::move(r).error();

  struct stat st {};
  if (::fstatat(parent->dir.get(), parent->leaf.c_str(), &st, AT_SYMLINK_NOFOLLOW) != 0) {
    if (errno == ENOENT) {
      return worktree.not_found(*rel, "no such file or folder: '" + *rel + "'",
                                "check the path with list_directory");
    }
    return errno_error(errno, "cannot stat", *rel);
  }
  std::uint64_t removed = 0;
  std::string kind = S_ISLNK(st.st_mode) ? "symlink" : "file";
  if (S_ISDIR(st.st_mode)) {
    kind = "directory";
    if (!*recursive) {
      return make_error(errc::is_directory, "'" + *rel + "' is a folder",
                        "pass recursive: true to delete it and everything in it");
    }
    UniqueFd dir(::openat(parent->dir.get(), parent->leaf.c_str(),
                          O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC));
    if (!dir) return errno_error(errno, "cannot open folder", *rel);
    if (auto r = remove_contents(dir.get(), *rel, 1, removed); !r) return std::move(r).error();
  }
  if (::unlinkat(parent->dir.get(), parent->leaf.c_str(), S_ISDIR(st.st_mode) ? AT_REMOVEDIR : 0) !=
      0) {
    return errno_error(errno, "cannot delete", *rel);
  }
  return Json{{"path", *rel}, {"deleted", kind}, {"entries_removed", removed + 1}};
}

}  // namespace loopr::tool
