// list_directory {path=".", recursive=false, max_depth=10,
// include_ignored=false}: entries sorted by path, walked through directory
// fds with O_NOFOLLOW: symlinks are listed, never followed; .git is listed
// but not entered. Entries that .gitignore files or .git/info/exclude ignore
// are left out, as glob and grep leave them (gitignore.hpp, the same rules
// and ranking; an ignored folder is not entered and counts as one), and the
// result says how many ("ignored") unless include_ignored lists them too.
// The listed folder itself is listed even if ignored (an explicit path). At
// most kMaxEntries are returned, and the result says when more were seen.
#include <dirent.h>
#include <fcntl.h>
#include <unistd.h>

#include <algorithm>

#include "loopr-tool/arguments.hpp"
#include "loopr-tool/gitignore.hpp"
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

struct ListingWalk {
  ListingWalk(int depth_limit, bool descend, bool gitignore)
      : max_depth(depth_limit), recursive(descend), honour_gitignore(gitignore) {}

  int max_depth;
  bool recursive;
  bool honour_gitignore;
  std::vector<Entry> out;
  std::size_t seen = 0;
  std::size_t ignored = 0;  // entries left out because ignored, outside ignored folders

  // `dir` borrowed; `relative` its path from the worktree root ("." for the
  // root); `scope` the rules in force above it.
  void visit(int dir, const std::string& relative, int depth, IgnoreScope::Ptr scope) {
    if (honour_gitignore) {
      scope = IgnoreScope::child(scope, relative, read_gitignore(dir, ".gitignore"));
    }
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
      const std::string path = relative == "." ? name : relative + "/" + name;
      const bool is_dir = S_ISDIR(st.st_mode);
      if (honour_gitignore && name != ".git" && scope->ignored(path, is_dir)) {
        ++ignored;
        continue;
      }
      out.push_back(Entry{path, is_dir ? 0 : static_cast<std::uint64_t>(st.st_size), is_dir,
                          S_ISLNK(st.st_mode)});
      if (is_dir && recursive && depth < max_depth && name != ".git") subdirs.push_back(name);
    }
    ::closedir(listing);
    for (const std::string& name : subdirs) {
      if (seen > kMaxSeen) return;
      UniqueFd sub(::openat(dir, name.c_str(), O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC));
      if (!sub) continue;
      visit(sub.get(), relative == "." ? name : relative + "/" + name, depth + 1, scope);
    }
  }
};

}  // namespace

Result<Json> list_directory(const Worktree& worktree, const Json& raw) {
  auto args = Arguments::parse(raw, "list_directory",
                               {"path", "recursive", "max_depth", "include_ignored"});
  if (!args) return std::move(args).error();
  auto path = args->string_or("path", ".");
  if (!path) return std::move(path).error();
  auto recursive = args->boolean_or("recursive", false);
  if (!recursive) return std::move(recursive).error();
  auto max_depth = args->integer_or("max_depth", 10, 1, 64);
  if (!max_depth) return std::move(max_depth).error();
  auto include_ignored = args->boolean_or("include_ignored", false);
  if (!include_ignored) return std::move(include_ignored).error();
  auto rel = worktree.relative(*path);
  if (!rel) return std::move(rel).error();
  auto dir = worktree.open(*rel, O_RDONLY | O_DIRECTORY);
  if (!dir) return std::move(dir).error();

  ListingWalk walk(static_cast<int>(*max_depth), *recursive, !*include_ignored);
  walk.visit(dir->get(), *rel, 1,
             walk.honour_gitignore ? IgnoreScope::for_walk_of(worktree.root_fd(), *rel)
                                   : IgnoreScope::empty());
  std::vector<Entry>& entries = walk.out;
  std::sort(entries.begin(), entries.end(),
            [](const Entry& a, const Entry& b) { return a.path < b.path; });
  const bool truncated = entries.size() > kMaxEntries || walk.seen > kMaxSeen;
  Json listed = Json::array();
  for (std::size_t i = 0; i < entries.size() && i < kMaxEntries; ++i) {
    const Entry& e = entries[i];
    listed.push_back(
        {{"path", e.path}, {"size", e.size}, {"is_dir", e.is_dir}, {"is_symlink", e.is_symlink}});
  }
  Json result = {{"path", *rel}, {"entries", listed}, {"truncated", truncated}};
  std::string hint;
  if (truncated) {
    result["total_seen"] = std::min(walk.seen, kMaxSeen);
    hint = "only the first " + std::to_string(kMaxEntries) +
           " entries are shown; list a subfolder or lower max_depth";
  }
  if (walk.ignored > 0) {
    result["ignored"] = walk.ignored;
    if (!hint.empty()) hint += "; ";
    hint += std::to_string(walk.ignored) + (walk.ignored == 1 ? " entry" : " entries") +
            " ignored by .gitignore (or .git/info/exclude) left out, an ignored folder counted "
            "once and not entered; pass include_ignored: true to list them";
  }
  if (!hint.empty()) result["hint"] = hint;
  return result;
}

}  // namespace loopr::tool
