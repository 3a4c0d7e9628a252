// looprctl memory list | search | show | delete (docs/control-protocol.md,
// "Memory notes"): the notes loops keep with the memory tools, shown to
// their user. Like client/commands.hpp's commands, each opens its own
// connection, prints text for a person on `out` (the daemon's result as
// JSON with --json), failures on `err`, and returns the process exit status
// (client/failure.hpp). The CLI wiring is client/cli.cpp; the rendering
// client/memory_view.hpp.
#pragma once

#include <cstdint>
#include <optional>
#include <string>

#include "client/commands.hpp"

namespace loopr::client {

// memory list: memory.list. `repo` empty: every note of the user; else the
// notes of the repository that folder belongs to and the user's own (made
// absolute before it is sent).
struct MemoryListOptions {
  std::string repo;
  std::optional<std::int64_t> limit;  // unset: the daemon's default (100)
};
int run_memory_list(const CommandContext& context, const MemoryListOptions& options);

// memory search: memory.search; the hits best first, or "no notes match".
struct MemorySearchOptions {
  std::string query;
  std::string repo;                   // as for list
  std::optional<std::int64_t> top_k;  // unset: the daemon's default (10)
  bool conversation = false;          // also the repository's loops' turns
};
int run_memory_search(const CommandContext& context, const MemorySearchOptions& options);

// memory show: memory.get; every field of the note, then its whole text.
int run_memory_show(const CommandContext& context, const std::string& note_id);
// memory delete: memory.delete; "deleted NOTE_ID".
int run_memory_delete(const CommandContext& context, const std::string& note_id);

}  // namespace loopr::client
