// glob {pattern, path=".", include_binary=false}: files beneath `path` whose
// path relative to `path` matches `pattern` (glob_pattern.hpp), newest first.
// Walks with tree_walker (gitignore honoured, symlinks not followed, .git
// skipped). Returned paths are relative to the worktree root, so they can be
// passed to read_file as they are.
#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <vector>

#include "loopr-tool/arguments.hpp"
#include "loopr-tool/binary_detection.hpp"
#include "common/glob_pattern.hpp"
#include "loopr-tool/tools.hpp"
#include "loopr-tool/tree_walker.hpp"

namespace loopr::tool {
namespace {

constexpr std::size_t kMaxGlobResults = 1000;

struct Found {
  struct timespec mtime;
  std::string path;
};

bool newer_first(const Found& a, const Found& b) {
  if (a.mtime.tv_sec != b.mtime.tv_sec) return a.mtime.tv_sec > b.mtime.tv_sec;
  if (a.mtime.tv_nsec != b.mtime.tv_nsec) return a.mtime.tv_nsec > b.mtime.tv_nsec;
  return a.path < b.path;
}

// True if the file's first kBinarySniffBytes hold a NUL. `dir_fd` borrowed.
bool file_looks_binary(int dir_fd, const char* name) {
  UniqueFd fd(::openat(dir_fd, name, O_RDONLY | O_NOFOLLOW | O_NONBLOCK | O_NOCTTY | O_CLOEXEC));
  if (!fd) return false;
  char head[kBinarySniffBytes];
  std::size_t done = 0;
  while (done < sizeof head) {
    const ssize_t n = ::read(fd.get(), head + done, sizeof head - done);
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0) break;
    done += static_cast<std::size_t>(n);
  }
  return looks_binary(std::string_view(head, done));
}

}  // namespace

Result<Json> glob(const Worktree& worktree, const Json& args) {
  auto parsed = Arguments::parse(args, "glob", {"pattern", "path", "include_binary"});
  if (!parsed) return std::move(parsed).error();
  auto pattern_text = parsed->required_string("pattern");
  if (!pattern_text) return std::move(pattern_text).error();
  auto path_argument = parsed->string_or("path", ".");
  if (!path_argument) return std::move(path_argument).error();
  auto include_binary = parsed->boolean_or("include_binary", false);
  if (!include_binary) return std::move(include_binary).error();

  auto base = worktree.relative(*path_argument);
  if (!base) return std::move(base).error();
  std::string_view pattern_view = *pattern_text;
  while (pattern_view.starts_with("./"))
    pattern_view.remove_prefix(2);
  auto pattern = GlobPattern::compile(pattern_view);
  if (!pattern) return std::move(pattern).error();

  const unsigned threads = default_walk_threads();
  std::vector<std::vector<Found>> found(threads);
  std::atomic<std::uint64_t> skipped_binary{0};
  const std::size_t prefix = *base == "." ? 0 : base->size() + 1;
  auto walked =
      walk_tree(worktree, *base, WalkOptions{threads, kMaxWalkDepth, true},
                [&](const WalkEntry& entry, unsigned worker) {
                  if (!pattern->match(entry.relative.substr(prefix))) return;
                  const std::string name(entry.name);
                  struct stat st {};
                  if (::fstatat(entry.dir_fd, name.c_str(), &st, AT_SYMLINK_NOFOLLOW) != 0 ||
                      !S_ISREG(st.st_mode)) {
                    return;
                  }
                  if (!*include_binary && file_looks_binary(entry.dir_fd, name.c_str())) {
                    skipped_binary.fetch_add(1, std::memory_order_relaxed);
                    return;
                  }
                  found[worker].push_back(Found{st.st_mtim, std::string(entry.relative)});
                });
  if (!walked) return std::move(walked).error();

  std::vector<Found> all;
  for (auto& part : found) {
    std::move(part.begin(), part.end(), std::back_inserter(all));
  }
  const std::size_t total = all.size();
  const std::size_t shown = std::min(total, kMaxGlobResults);
  std::partial_sort(all.begin(), all.begin() + static_cast<long>(shown), all.end(), newer_first);

  Json matches = Json::array();
  for (std::size_t i = 0; i < shown; ++i)
    matches.push_back(std::move(all[i].path));
  Json result = {{"pattern", *pattern_text},
                 {"path", *base},
                 {"matches", std::move(matches)},
                 {"count", total},
                 {"truncated", total > shown},
                 {"skipped_binary", skipped_binary.load()},
                 {"skipped_symlinks", walked->skipped_symlinks}};
  std::string hint;
  if (total > shown) {
    hint = "showing the " + std::to_string(shown) + " newest of " + std::to_string(total) +
           " matches; narrow the search with a more specific pattern or a deeper path";
  } else if (total == 0 && pattern_view.find('/') == std::string_view::npos) {
    hint = "the pattern is matched against the whole path relative to '" + *base + "'; use \"**/" +
           std::string(pattern_view) + "\" to match at any depth";
  }
  if (skipped_binary.load() > 0) {
    if (!hint.empty()) hint += "; ";
    hint += std::to_string(skipped_binary.load()) +
            " binary files were left out: pass include_binary: true to list them";
  }
  if (!hint.empty()) result["hint"] = hint;
  return result;
}

}  // namespace loopr::tool
