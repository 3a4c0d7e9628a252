#include "loopr-tool/path_suggestion.hpp"

#include <dirent.h>
#include <fcntl.h>
#include <unistd.h>

#include <algorithm>
#include <utility>

#include "common/edit_distance.hpp"
#include "loopr-tool/worktree.hpp"

namespace loopr::tool {
namespace {

// Extensions longer than this ("README" -> "README.markdown") are not guessed.
constexpr std::size_t kMaxAddedExtension = 10;

std::string fold_case(std::string_view text) {
  std::string folded(text);
  for (char& c : folded) {
    if (c >= 'A' && c <= 'Z') c = static_cast<char>(c - 'A' + 'a');
  }
  return folded;
}

bool is_git_name(std::string_view name) {
  return fold_case(name) == ".git";
}

std::string joined(const std::string& folder, std::string_view name) {
  return folder.empty() ? std::string(name) : folder + "/" + std::string(name);
}

}  // namespace

std::optional<std::size_t> name_closeness(std::string_view wanted, std::string_view name) {
  if (wanted.empty() || name == wanted) return std::nullopt;
  const std::string folded_wanted = fold_case(wanted);
  const std::string folded_name = fold_case(name);
  if (folded_name == folded_wanted) return 1;
  if (folded_name.size() > folded_wanted.size() + 1 &&
      folded_name.size() <= folded_wanted.size() + 1 + kMaxAddedExtension &&
      folded_name.starts_with(folded_wanted) && folded_name[folded_wanted.size()] == '.') {
    return 3;
  }
  const std::size_t allowed = std::clamp<std::size_t>(wanted.size() / 3, 1, kMaxNameDistance);
  const std::size_t distance = edit_distance(folded_wanted, folded_name, allowed);
  if (distance > allowed) return std::nullopt;
  return 2 * distance;
}

NearNames nearest_names(int dir, std::string_view wanted, std::size_t max_entries) {
  NearNames near;
  // A descriptor of its own: readdir moves the offset, and closedir closes it.
  const int listing_fd = ::openat(dir, ".", O_RDONLY | O_DIRECTORY | O_CLOEXEC);
  if (listing_fd < 0) return near;
  DIR* listing = ::fdopendir(listing_fd);
  if (listing == nullptr) {
    ::close(listing_fd);
    return near;
  }
  std::vector<std::pair<std::size_t, std::string>> ranked;  // sorted, at most kMaxTriedNames
  while (near.entries_read < max_entries) {
    const dirent* entry = ::readdir(listing);
    if (entry == nullptr) break;
    const std::string_view name = entry->d_name;
    if (name == "." || name == "..") continue;
    ++near.entries_read;
    if (is_git_name(name)) continue;
    const auto closeness = name_closeness(wanted, name);
    if (!closeness) continue;
    std::pair<std::size_t, std::string> item(*closeness, name);
    const auto at = std::lower_bound(ranked.begin(), ranked.end(), item);
    if (at - ranked.begin() >= static_cast<std::ptrdiff_t>(kMaxTriedNames)) continue;
    ranked.insert(at, std::move(item));
    if (ranked.size() > kMaxTriedNames) ranked.pop_back();
  }
  ::closedir(listing);
  for (auto& item : ranked)
    near.names.push_back(std::move(item.second));
  return near;
}

std::optional<std::string> nearest_existing_path(const Worktree& worktree,
                                                 std::string_view relative) {
  const std::vector<std::string> parts = split_path(relative);
  if (parts.empty() || parts.size() > kMaxSuggestionComponents) return std::nullopt;
  if (std::any_of(parts.begin(), parts.end(), is_git_name)) return std::nullopt;

  std::string resolved;  // a prefix that exists beneath the root; "" is the root
  std::size_t corrected = 0;
  for (std::size_t i = 0; i < parts.size(); ++i) {
    // O_PATH follows a symlink, and probe() refuses one that leads out.
    const int flags = O_PATH | (i + 1 < parts.size() ? O_DIRECTORY : 0);
    std::string exact = joined(resolved, parts[i]);
    auto opened = worktree.probe(exact, flags);
    if (opened) {
      resolved = std::move(exact);
      continue;
    }
    const std::string& code = opened.error().code;
    if (code != errc::not_found && code != errc::not_directory) return std::nullopt;
    if (++corrected > kMaxCorrectedComponents) return std::nullopt;
    auto folder = worktree.probe(resolved.empty() ? "." : resolved, O_RDONLY | O_DIRECTORY);
    if (!folder) return std::nullopt;
    bool found = false;
    for (const std::string& name : nearest_names(folder->get(), parts[i]).names) {
      std::string candidate = joined(resolved, name);
      if (worktree.probe(candidate, flags)) {
        resolved = std::move(candidate);
        found = true;
        break;
      }
    }
    if (!found) return std::nullopt;
  }
  if (corrected == 0) return std::nullopt;
  return resolved;
}

}  // namespace loopr::tool
