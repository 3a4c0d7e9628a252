#include "proto/memory_messages.hpp"

#include <limits.h>

#include <utility>

#include "proto/control_messages.hpp"

namespace loopr::proto {
namespace {

using nlohmann::json;

// Note ids are "note-" and a UUID; anything longer names no note.
constexpr std::size_t kMaxNoteIdBytes = 256;

// params.repo: absent or null → nullopt; else an absolute path.
Result<std::optional<std::string>> repository_path(const json& params) {
  auto it = params.find("repo");
  if (it == params.end() || it->is_null()) return std::optional<std::string>();
  if (!it->is_string())
    return invalid_params("repo must be a string, the absolute path of a folder");
  const std::string& path = it->get_ref<const std::string&>();
  if (path.empty() || path.front() != '/') {
    return invalid_params("repo must be an absolute path, got '" + path.substr(0, PATH_MAX) + "'",
                          "pass the repository's folder (or one inside it), e.g. /home/me/src/app; "
                          "leave repo out for every note");
  }
  return std::optional<std::string>(path);
}

// params[key] as a whole number in [1, max]; nullopt when absent.
Result<std::optional<std::int64_t>> count_param(const json& params, const char* key,
                                                std::int64_t max) {
  auto it = params.find(key);
  if (it == params.end() || it->is_null()) return std::optional<std::int64_t>();
  const std::string range = "a whole number from 1 to " + std::to_string(max);
  if (!it->is_number_integer()) return invalid_params(std::string(key) + " must be " + range);
  const bool in_range = it->is_number_unsigned()
                            ? it->get<std::uint64_t>() >= 1 &&
                                  it->get<std::uint64_t>() <= static_cast<std::uint64_t>(max)
                            : it->get<std::int64_t>() >= 1 && it->get<std::int64_t>() <= max;
  if (!in_range) {
    return invalid_params(std::string(key) + " must be " + range + ", got " + it->dump());
  }
  return std::optional<std::int64_t>(it->get<std::int64_t>());
}

}  // namespace

json to_json(const MemoryListParams& params) {
  json out = json::object();
  if (params.repo) out["repo"] = *params.repo;
  if (params.limit) out["limit"] = *params.limit;
  return out;
}

json to_json(const MemorySearchParams& params) {
  json out = {{"query", params.query}};
  if (params.repo) out["repo"] = *params.repo;
  if (params.top_k) out["top_k"] = *params.top_k;
  if (params.include_conversation) out["include_conversation"] = true;
  return out;
}

json to_json(const NoteIdParams& params) {
  return json{{"note_id", params.note_id}};
}

json to_json(const RepoParams& params) {
  return json{{"repo", params.repo}};
}

Result<MemoryListParams> parse_memory_list_params(const json& params) {
  MemoryListParams out;
  auto repo = repository_path(params);
  if (!repo) return std::move(repo).error();
  out.repo = std::move(*repo);
  auto limit = count_param(params, "limit", kMaxMemoryListLimit);
  if (!limit) return std::move(limit).error();
  out.limit = *limit;
  return out;
}

Result<MemorySearchParams> parse_memory_search_params(const json& params) {
  auto query = params.find("query");
  if (query == params.end() || !query->is_string() ||
      query->get_ref<const std::string&>().empty()) {
    return invalid_params("memory.search needs `query`, the words to look for",
                          "any text is accepted; it is searched as plain words");
  }
  MemorySearchParams out;
  out.query = query->get<std::string>();
  auto repo = repository_path(params);
  if (!repo) return std::move(repo).error();
  out.repo = std::move(*repo);
  auto top_k = count_param(params, "top_k", kMaxMemoryTopK);
  if (!top_k) return std::move(top_k).error();
  out.top_k = *top_k;
  auto conversation = flag_param(params, "include_conversation");
  if (!conversation) return std::move(conversation).error();
  out.include_conversation = *conversation;
  return out;
}

Result<NoteIdParams> parse_note_id_params(const json& params) {
  auto it = params.find("note_id");
  if (it == params.end() || !it->is_string() || it->get_ref<const std::string&>().empty() ||
      it->get_ref<const std::string&>().size() > kMaxNoteIdBytes) {
    return invalid_params(
        "note_id must be a note's id, e.g. note-0c5f3b8e-6d4a-4f0e-9b1a-2d7c8e9f0a1b",
        "`looprctl memory list` shows the notes and their ids");
  }
  return NoteIdParams{it->get<std::string>()};
}

Result<RepoParams> parse_repo_params(const json& params) {
  auto it = params.is_object() ? params.find("repo") : params.end();
  if (it == params.end() || !it->is_string()) {
    return invalid_params("the request needs `repo`, the absolute path of the repository's folder");
  }
  return RepoParams{it->get<std::string>()};
}

}  // namespace loopr::proto
