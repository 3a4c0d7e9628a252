// ReadTracker: read-before-edit (DESIGN.md §6 step 3). Remembers, per session
// (a loop id, or one client connection), the content hash of each file as the
// session last saw it: after a read_file, or after its own write or edit.
// The router hands that hash to write_file/edit_file as `expected_hash`, so a
// file that changed since is refused as stale_read; a file the session never
// saw may only be created (`create_only`), never overwritten blind.
//
// Keys are (worktree realpath, path as common/worktree_path.hpp names it), so
// "src/../a.c" and "a.c" are one file. Memory is capped: past
// kMaxEntriesPerSession a session forgets its oldest entries (the model then
// has to read those files again), and past kMaxSessions the least recently
// used session is forgotten whole.
// Threads: used only on the daemon's io thread.
#pragma once

#include <cstdint>
#include <list>
#include <map>
#include <optional>
#include <string>
#include <unordered_map>

namespace loopr::daemon {

class ReadTracker {
 public:
  static constexpr std::size_t kMaxEntriesPerSession = 4096;
  static constexpr std::size_t kMaxSessions = 1024;

  void remember(const std::string& session, const std::string& worktree, const std::string& path,
                const std::string& content_hash);
  void forget(const std::string& session, const std::string& worktree, const std::string& path);
  // Forgets every file at or beneath `folder` (a recursive delete); "" or "."
  // is the whole worktree. "src" does not cover "src2/a.c".
  void forget_beneath(const std::string& session, const std::string& worktree,
                      const std::string& folder);
  std::optional<std::string> hash_of(const std::string& session, const std::string& worktree,
                                     const std::string& path);
  void forget_session(const std::string& session);

  std::size_t session_count() const { return sessions_.size(); }
  std::size_t entry_count(const std::string& session) const;

 private:
  struct Session {
    std::map<std::string, std::pair<std::string, std::uint64_t>> hashes;  // key → (hash, stamp)
    std::map<std::uint64_t, std::string> by_age;                          // stamp → key
    std::list<std::string>::iterator lru;
  };
  Session& session(const std::string& name);

  std::unordered_map<std::string, Session> sessions_;
  std::list<std::string> lru_;  // most recently used first
  std::uint64_t stamp_ = 0;
};

}  // namespace loopr::daemon
