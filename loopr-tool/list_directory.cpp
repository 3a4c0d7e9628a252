// list_directory {path=".", recursive=false, max_depth=10}: entries sorted by
// path, walked through directory fds with O_NOFOLLOW: symlinks are listed,
// never followed; .git is listed but not entered. At most kMaxEntries are
// returned, and the result says when more were seen.
#include <dirent.h>
#include <fcntl.h>
#include <unistd.h>

#include <algorithm>

#include "loopr-tool/arguments.hpp"
#include "loopr-tool/tools.hpp"

namespace loopr::tool {
namespace {

constexpr std::size_t kMaxEntries = 2000;
// Stop walking once this many entries were seen: the count is then a floor.
constexpr std::size_t kMaxSeen = 100000;

struct Entry {
  std::string path;
  std::uint64_t size;
  bool is_dir;
  bool is_symlink;
};

void walk(int dir, const std::string& prefix, int depth, int max_depth, bool recursive,
          std::vector<Entry>& out, std::size_t& seen) {
  const int listing_fd = ::dup(dir);
  if (listing_fd < 0) return;
  DIR* listing = ::fdopendir(listing_fd);
  if (listing == nullptr) {
    ::close(listing_fd);
    return;
  }
  std::vector<std::string> subdirs;
  while (const dirent* entry = ::readdir(listing)) {
    const std::string name = entry->d_name;
    if (name == "." || name == "..") continue;
    if (++seen > kMaxSeen) break;
    struct stat st {};
    if (::fstatat(dir, name.c_str(), &st, AT_SYMLINK_NOFOLLOW) != 0) continue;
    const std::string path = prefix.empty() ? name : prefix + "/" + name;
    const bool is_dir = S_ISDIR(st.st_mode);
    out.push_back(Entry{path, is_dir ? 0 : static_cast<std::uint64_t>(st.st_size), is_dir,
                        S_ISLNK(st.st_mode)});
    if (is_dir && recursive && depth < max_depth && name != ".git") subdirs.push_back(name);
  }
  ::closedir(listing);
  for (const std::string& name : subdirs) {
    if (seen > kMaxSeen) return;
    UniqueFd sub(::openat(dir, name.c_str(), O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC));
    if (!sub) continue;
    walk(sub.get(), prefix.empty() ? name : prefix + "/" + name, depth + 1, max_depth, recursive,
         out, seen);
  }
}

}  // namespace

Result<Json> list_directory(const Worktree& worktree, const Json& raw) {
  auto args = Arguments::parse(raw, "list_directory", {"path", "recursive", "max_depth"});
  if (!args) return std::move(args).error();
  auto path = args->string_or("path", ".");
  if (!path) return std::move(path).error();
  auto recursive = args->boolean_or("recursive", false);
  if (!recursive) return std::move(recursive).error();
  auto max_depth = args->integer_or("max_depth", 10, 1, 64);
  if (!max_depth) return std::move(max_depth).error();
  auto rel = worktree.relative(*path);
  if (!rel) return std::move(rel).error();
  auto dir = worktree.open(*rel, O_RDONLY | O_DIRECTORY);
  if (!dir) return std::move(dir).error();

  std::vector<Entry> entries;
  std::size_t seen = 0;
  walk(dir->get(), *rel == "." ? "" : *rel, 1, static_cast<int>(*max_depth), *recursive, entries,
       seen);
  std::sort(entries.begin(), entries.end(),
            [](const Entry& a, const Entry& b) { return a.path < b.path; });
  const bool truncated = entries.size() > kMaxEntries || seen > kMaxSeen;
  Json listed = Json::array();
  for (std::size_t i = 0; i < entries.size() && i < kMaxEntries; ++i) {
    const Entry& e = entries[i];
    listed.push_back(
        {{"path", e.path}, {"size", e.size}, {"is_dir", e.is_dir}, {"is_symlink", e.is_symlink}});
  }
  Json result = {{"path", *rel}, {"entries", listed}, {"truncated", truncated}};
  if (truncated) {
    result["total_seen"] = std::min(seen, kMaxSeen);
    result["hint"] = "only the first " + std::to_string(kMaxEntries) +
                     " entries are shown; list a subfolder or lower max_depth";
  }
  return result;
}

}  // namespace loopr::tool
