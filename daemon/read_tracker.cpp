#include "daemon/read_tracker.hpp"

namespace loopr::daemon {
namespace {

std::string key_of(const std::string& worktree, const std::string& path) {
  std::string key = worktree;
  key += '\0';
  key += path;
  return key;
}

}  // namespace

ReadTracker::Session& ReadTracker::session(const std::string& name) {
  auto it = sessions_.find(name);
  if (it != sessions_.end()) {
    lru_.splice(lru_.begin(), lru_, it->second.lru);
    return it->second;
  }
  if (sessions_.size() >= kMaxSessions) {
    sessions_.erase(lru_.back());
    lru_.pop_back();
  }
  lru_.push_front(name);
  Session& created = sessions_[name];
  created.lru = lru_.begin();
  return created;
}

void ReadTracker::remember(const std::string& name, const std::string& worktree,
                           const std::string& path, const std::string& content_hash) {
  Session& s = session(name);
  const std::string key = key_of(worktree, path);
  auto existing = s.hashes.find(key);
  if (existing != s.hashes.end()) s.by_age.erase(existing->second.second);
  const std::uint64_t stamp = ++stamp_;
  s.hashes[key] = {content_hash, stamp};
  s.by_age[stamp] = key;
  while (s.hashes.size() > kMaxEntriesPerSession) {
    auto oldest = s.by_age.begin();
    s.hashes.erase(oldest->second);
    s.by_age.erase(oldest);
  }
}

void ReadTracker::forget(const std::string& name, const std::string& worktree,
                         const std::string& path) {
  auto it = sessions_.find(name);
  if (it == sessions_.end()) return;
  auto entry = it->second.hashes.find(key_of(worktree, path));
  if (entry == it->second.hashes.end()) return;
  it->second.by_age.erase(entry->second.second);
  it->second.hashes.erase(entry);
}

void ReadTracker::forget_beneath(const std::string& name, const std::string& worktree,
                                 const std::string& folder) {
  auto it = sessions_.find(name);
  if (it == sessions_.end()) return;
  Session& s = it->second;
  auto erase_entry = [&s](auto entry) {
    s.by_age.erase(entry->second.second);
    return s.hashes.erase(entry);
  };
  const bool whole_worktree = folder.empty() || folder == ".";
  if (!whole_worktree) {
    if (auto exact = s.hashes.find(key_of(worktree, folder)); exact != s.hashes.end()) {
      erase_entry(exact);
    }
  }
  // Keys are "worktree NUL path", so the files beneath a folder are one
  // contiguous range of the map, starting at "worktree NUL folder/";
  // "folder2/x" sorts outside it.
  const std::string prefix = key_of(worktree, whole_worktree ? "" : folder + "/");
  for (auto entry = s.hashes.lower_bound(prefix);
       entry != s.hashes.end() && entry->first.compare(0, prefix.size(), prefix) == 0;) {
    entry = erase_entry(entry);
  }
}

std::optional<std::string> ReadTracker::hash_of(const std::string& name,
                                                const std::string& worktree,
                                                const std::string& path) {
  auto it = sessions_.find(name);
  if (it == sessions_.end()) return std::nullopt;
  lru_.splice(lru_.begin(), lru_, it->second.lru);
  auto entry = it->second.hashes.find(key_of(worktree, path));
  if (entry == it->second.hashes.end()) return std::nullopt;
  return entry->second.first;
}

void ReadTracker::forget_session(const std::string& name) {
  auto it = sessions_.find(name);
  if (it == sessions_.end()) return;
  lru_.erase(it->second.lru);
  sessions_.erase(it);
}

std::size_t ReadTracker::entry_count(const std::string& name) const {
  auto it = sessions_.find(name);
  return it == sessions_.end() ? 0 : it->second.hashes.size();
}

}  // namespace loopr::daemon
