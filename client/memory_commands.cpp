// looprctl memory list | search | show | delete.
#include "client/memory_commands.hpp"

#include <ostream>

#include "client/client_paths.hpp"
#include "client/loop_view.hpp"
#include "client/memory_view.hpp"
#include "client/terminal.hpp"
#include "client/text_format.hpp"
#include "proto/memory_messages.hpp"

namespace loopr::client {
namespace {

using nlohmann::json;

// Adds `repo` to `params` as an absolute path when one was given.
// `repo` as the absolute folder the request names; unset when empty.
Result<void> add_repo(std::optional<std::string>& params_repo, const std::string& repo) {
  if (repo.empty()) return {};
  auto folder = absolute_folder(repo, "the repository", "--repo");
  if (!folder) return std::move(folder).error();
  params_repo = std::move(*folder);
  return {};
}

// memory.list's default and largest limit (docs/control-protocol.md).
constexpr std::size_t kDefaultLimit = 100;
constexpr std::size_t kMaxLimit = 1000;

// The repository a listing or a search covered (its result's `repo`), or "".
std::string covered_repo(const json& result) {
  const json& repo = member(result, "repo");
  return repo.is_string() ? printable(repo.get<std::string>()) : std::string();
}

// The object result of `method`, or the call's failure.
Result<json> call_for_object(const CommandContext& context, const std::string& method,
                             json params) {
  auto client = context.open();
  if (!client) return std::move(client).error();
  auto result = client->call(method, std::move(params));
  if (!result) return result;
  if (!result->is_object()) {
    return make_error(errc::protocol, "the " + method + " result is not an object");
  }
  return result;
}

}  // namespace

int run_memory_list(const CommandContext& context, const MemoryListOptions& options) {
  proto::MemoryListParams params;
  if (auto added = add_repo(params.repo, options.repo); !added) {
    return context.fail(added.error());
  }
  params.limit = options.limit;
  auto result = call_for_object(context, "memory.list", proto::to_json(params));
  if (!result) return context.fail(result.error());
  auto notes = objects_in(*result, "notes", "memory.list");
  if (!notes) return context.fail(notes.error());
  if (context.json) {
    context.print_json(*result);
    return to_int(ExitStatus::ok);
  }
  if (notes->empty()) {
    const std::string repo = covered_repo(*result);
    context.out << (repo.empty() ? "no notes" : "no notes for " + repo + ", and none of your own")
                << '\n';
    return to_int(ExitStatus::ok);
  }
  print_note_table(*notes, terminal_style(context.out), context.out);
  const std::size_t shown = notes->size();
  const std::size_t limit =
      options.limit ? static_cast<std::size_t>(*options.limit) : kDefaultLimit;
  if (shown >= limit) {
    context.out << "(the " << shown << " most recently updated"
                << (limit < kMaxLimit ? "; --limit " + std::to_string(kMaxLimit) + " shows more"
                                      : "; memory search finds the others")
                << ")\n";
  }
  return to_int(ExitStatus::ok);
}

int run_memory_search(const CommandContext& context, const MemorySearchOptions& options) {
  if (blank(options.query)) {
    return context.fail(make_error(failure::usage, "the query is empty",
                                   "pass the words to look for, e.g. looprctl memory search "
                                   "\"linker memory\""));
  }
  proto::MemorySearchParams params;
  params.query = options.query;
  if (auto added = add_repo(params.repo, options.repo); !added) {
    return context.fail(added.error());
  }
  params.top_k = options.top_k;
  params.include_conversation = options.conversation;
  auto result = call_for_object(context, "memory.search", proto::to_json(params));
  if (!result) return context.fail(result.error());
  auto hits = objects_in(*result, "results", "memory.search");
  if (!hits) return context.fail(hits.error());
  if (context.json) {
    context.print_json(*result);
    return to_int(ExitStatus::ok);
  }
  if (hits->empty()) {
    const std::string repo = covered_repo(*result);
    context.out << "no notes match"
                << (repo.empty() ? "" : " among the notes of " + repo + " and your own") << '\n';
    return to_int(ExitStatus::ok);
  }
  print_search_hits(*hits, terminal_style(context.out), context.out);
  return to_int(ExitStatus::ok);
}

int run_memory_show(const CommandContext& context, const std::string& note_id) {
  auto result =
      call_for_object(context, "memory.get", proto::to_json(proto::NoteIdParams{note_id}));
  if (!result) return context.fail(result.error());
  if (context.json) {
    context.print_json(*result);
    return to_int(ExitStatus::ok);
  }
  print_note(*result, context.out);
  return to_int(ExitStatus::ok);
}

int run_memory_delete(const CommandContext& context, const std::string& note_id) {
  auto result =
      call_for_object(context, "memory.delete", proto::to_json(proto::NoteIdParams{note_id}));
  if (!result) return context.fail(result.error());
  if (context.json) {
    context.print_json(*result);
    return to_int(ExitStatus::ok);
  }
  context.out << "deleted " << printable(note_id) << '\n';
  return to_int(ExitStatus::ok);
}

}  // namespace loopr::client
