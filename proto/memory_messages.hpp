// Typed params of the memory.* and repo.* control methods
// (docs/control-protocol.md "Memory notes", "Repository settings").
// parse_* read the wire shape (types, ranges, an absolute path) and refuse
// as invalid_params (-32602) with the messages looprd has always answered;
// whether a folder exists, and which repository it belongs to, is looprd's
// to find out. Never throw.
#pragma once

#include <cstdint>
#include <nlohmann/json.hpp>
#include <optional>
#include <string>

#include "common/error.hpp"

namespace loopr::proto {

inline constexpr std::int64_t kDefaultMemoryListLimit = 100;
inline constexpr std::int64_t kMaxMemoryListLimit = 1000;
inline constexpr std::int64_t kDefaultMemoryTopK = 10;
inline constexpr std::int64_t kMaxMemoryTopK = 100;

// memory.list. repo: an absolute path (a folder of the repository, or one
// inside it); unset: every note.
struct MemoryListParams {
  std::optional<std::string> repo;
  std::optional<std::int64_t> limit;  // 1 to kMaxMemoryListLimit; unset: the default
  bool operator==(const MemoryListParams&) const = default;
};

// memory.search.
struct MemorySearchParams {
  std::string query;  // not empty
  std::optional<std::string> repo;
  std::optional<std::int64_t> top_k;  // 1 to kMaxMemoryTopK; unset: the default
  bool include_conversation = false;
  bool operator==(const MemorySearchParams&) const = default;
};

// memory.get, memory.delete.
struct NoteIdParams {
  std::string note_id;  // 1 to 256 bytes
  bool operator==(const NoteIdParams&) const = default;
};

// repo.trust, repo.untrust, repo.show: a folder, as sent (any string).
struct RepoParams {
  std::string repo;
  bool operator==(const RepoParams&) const = default;
};

nlohmann::json to_json(const MemoryListParams& params);
nlohmann::json to_json(const MemorySearchParams& params);
nlohmann::json to_json(const NoteIdParams& params);
nlohmann::json to_json(const RepoParams& params);

Result<MemoryListParams> parse_memory_list_params(const nlohmann::json& params);
Result<MemorySearchParams> parse_memory_search_params(const nlohmann::json& params);
Result<NoteIdParams> parse_note_id_params(const nlohmann::json& params);
Result<RepoParams> parse_repo_params(const nlohmann::json& params);

}  // namespace loopr::proto
