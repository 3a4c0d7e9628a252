// Notebook: the memory tools (issue 13) — memory_save, memory_update,
// memory_delete, memory_search — and what `looprctl memory` shows the
// person, over the Store's memory notes (store/memory_notes.cpp).
//
// Who sees what: every note belongs to the user looprd serves (a Caller's
// uid; looprd accepts only its own user's connections) and either to one
// repository or to the user alone. A call made from a repository (scope
// "repo", the default) sees that repository's notes and the user's own;
// scope "user" sees only the user's own. No tool call reaches another
// repository's notes (a prompt-injected loop in one repository cannot read
// what loops of another kept); the person sees every note (list, search).
// A note outside what a call sees is "not found" to it, for reading,
// changing and deleting alike.
//
// Bounds ([memory] in loopr.toml): a note's text (max_note_bytes), notes per
// repository and of the user's own (max_notes), tags (16 of 64 bytes, from
// the schema), results (top_k <= 20, every hit's text cut so the whole
// answer fits the tool's output cap). Each refusal says what to do instead.
//
// Tool arguments arrive checked against the catalog's schema; tool failures
// are Errors with code, message and hint written for a model.
// Threads: io thread only (the Store's).
#pragma once

#include <cstddef>
#include <cstdint>
#include <nlohmann/json.hpp>
#include <optional>
#include <string>

#include "common/error.hpp"
#include "config/settings.hpp"
#include "store/store.hpp"

namespace loopr::memory {

struct Caller {
  std::int64_t uid = 0;
  std::string repo;    // realpath of the repository the call comes from
  std::string source;  // recorded with a saved note: "loop:<id>" or "client"
};

class Notebook {
 public:
  Notebook(store::Store& store, const config::MemorySettings& limits);

  // Tools. `max_output_bytes` is the catalog's cap of the tool's output:
  // memory_search cuts hit texts so its answer stays under it.
  //   memory_save {content, tags?, scope?} -> {note_id, message}
  //   memory_update {note_id, content, tags?} -> {note_id, message}
  //   memory_delete {note_id} -> {note_id, deleted: true, message}
  //   memory_search {query, top_k?, scope?, include_conversation?} ->
  //     {results: [{note_id, text, score, snippet, source, scope, updated_at,
  //      tags}], message}: source is who saved the note ("loop:<id>",
  //     "client"), scope "repo" or "user"; conversation hits have note_id
  //     null, source "conversation:<loop id>", and loop_id/iteration.
  Result<nlohmann::json> call(const std::string& tool, const nlohmann::json& args,
                              const Caller& caller, std::size_t max_output_bytes);
  static bool handles(const std::string& tool);

  // For the person (the memory.* control methods). `repo` nullopt: every
  // note of the user. Notes as note_json().
  Result<nlohmann::json> list(std::int64_t uid, const std::optional<std::string>& repo,
                              std::size_t limit) const;
  Result<nlohmann::json> search(std::int64_t uid, const std::optional<std::string>& repo,
                                const std::string& query, std::size_t top_k,
                                bool include_conversation) const;
  // A note of the user wherever it belongs; not_found otherwise.
  Result<nlohmann::json> show(std::int64_t uid, const std::string& note_id) const;
  Result<nlohmann::json> remove(std::int64_t uid, const std::string& note_id);

  // {note_id, text, tags, scope: "repo"|"user", repo, source, created_at,
  //  updated_at} (times as ISO 8601 UTC).
  static nlohmann::json note_json(const store::MemoryNote& note);

 private:
  store::Store& store_;
  const config::MemorySettings& limits_;
};

}  // namespace loopr::memory
