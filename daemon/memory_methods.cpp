// The memory.* control methods (docs/control-protocol.md "Memory notes"):
// the person's view of the notes the memory tools keep, so nothing a model
// keeps is hidden from its user. Thin handlers over memory::Notebook, which
// owns what a note is; here only the parameters are read. Every note shown
// is the user's looprd serves: the control socket admits only that uid.
#include <limits.h>
#include <stdlib.h>
#include <sys/stat.h>
#include <unistd.h>

#include "daemon/methods.hpp"
#include "memory/repository.hpp"

namespace loopr::daemon {
namespace {

using nlohmann::json;

constexpr std::int64_t kDefaultListLimit = 100;
constexpr std::int64_t kMaxListLimit = 1000;
constexpr std::int64_t kDefaultTopK = 10;
constexpr std::int64_t kMaxTopK = 100;
// Note ids are "note-" and a UUID; anything longer names no note.
constexpr std::size_t kMaxNoteIdBytes = 256;

Error invalid(std::string message, std::string hint = {}) {
  return make_error(errc::invalid_arguments, std::move(message), std::move(hint));
}

std::int64_t serving_uid() {
  return static_cast<std::int64_t>(::geteuid());
}

// params.repo, a folder, as the repository its notes belong to: realpath,
// then memory::repository_of (a subfolder or a linked worktree names its
// repository), as a tool call from that folder would. nullopt when absent.
Result<std::optional<std::string>> repository_param(const json& params) {
  auto it = params.find("repo");
  if (it == params.end() || it->is_null()) return std::optional<std::string>();
  if (!it->is_string()) return invalid("repo must be a string, the absolute path of a folder");
  const std::string& path = it->get_ref<const std::string&>();
  if (path.empty() || path.front() != '/') {
    return invalid("repo must be an absolute path, got '" + path.substr(0, PATH_MAX) + "'",
                   "pass the repository's folder (or one inside it), e.g. /home/me/src/app; "
                   "leave repo out for every note");
  }
  char resolved[PATH_MAX];
  struct stat st {};
  if (path.size() >= PATH_MAX || ::realpath(path.c_str(), resolved) == nullptr ||
      ::stat(resolved, &st) != 0 || !S_ISDIR(st.st_mode)) {
    return invalid("repo '" + path.substr(0, PATH_MAX) + "' is not a folder",
                   "pass an existing folder: the repository's, or one inside it");
  }
  return std::optional<std::string>(memory::repository_of(resolved));
}

// params[key] as a whole number in [1, max]; `fallback` when absent.
Result<std::int64_t> count_param(const json& params, const char* key, std::int64_t fallback,
                                 std::int64_t max) {
  auto it = params.find(key);
  if (it == params.end() || it->is_null()) return fallback;
  const std::string range = "a whole number from 1 to " + std::to_string(max);
  if (!it->is_number_integer()) return invalid(std::string(key) + " must be " + range);
  const bool in_range = it->is_number_unsigned()
                            ? it->get<std::uint64_t>() >= 1 &&
                                  it->get<std::uint64_t>() <= static_cast<std::uint64_t>(max)
                            : it->get<std::int64_t>() >= 1 && it->get<std::int64_t>() <= max;
  if (!in_range) return invalid(std::string(key) + " must be " + range + ", got " + it->dump());
  return it->get<std::int64_t>();
}

Result<bool> bool_param(const json& params, const char* key) {
  auto it = params.find(key);
  if (it == params.end() || it->is_null()) return false;
  if (!it->is_boolean()) return invalid(std::string(key) + " must be true or false");
  return it->get<bool>();
}

Result<std::string> note_id_param(const json& params) {
  auto it = params.find("note_id");
  if (it == params.end() || !it->is_string() || it->get_ref<const std::string&>().empty() ||
      it->get_ref<const std::string&>().size() > kMaxNoteIdBytes) {
    return invalid("note_id must be a note's id, e.g. note-0c5f3b8e-6d4a-4f0e-9b1a-2d7c8e9f0a1b",
                   "`looprctl memory list` shows the notes and their ids");
  }
  return it->get<std::string>();
}

// A note the user does not have: 1005, its hint kept from the Notebook.
Error note_not_found(Error error) {
  if (error.code != errc::not_found) return error;
  error.details = {{"rpc_code", static_cast<int>(proto::ControlErrorCode::note_not_found)}};
  return error;
}

json repo_json(const std::optional<std::string>& repo) {
  return repo ? json(*repo) : json(nullptr);
}

}  // namespace

asio::awaitable<Result<json>> MethodRegistry::memory_list(ClientSession&, json params) {
  auto repo = repository_param(params);
  if (!repo) co_return std::move(repo).error();
  auto limit = count_param(params, "limit", kDefaultListLimit, kMaxListLimit);
  if (!limit) co_return std::move(limit).error();
  auto listed = services_.notebook.list(serving_uid(), *repo, static_cast<std::size_t>(*limit));
  if (!listed) co_return listed;
  (*listed)["repo"] = repo_json(*repo);
  co_return listed;
}

asio::awaitable<Result<json>> MethodRegistry::memory_search(ClientSession&, json params) {
  auto query = params.find("query");
  if (query == params.end() || !query->is_string() ||
      query->get_ref<const std::string&>().empty()) {
    co_return invalid("memory.search needs `query`, the words to look for",
                      "any text is accepted; it is searched as plain words");
  }
  auto repo = repository_param(params);
  if (!repo) co_return std::move(repo).error();
  auto top_k = count_param(params, "top_k", kDefaultTopK, kMaxTopK);
  if (!top_k) co_return std::move(top_k).error();
  auto conversation = bool_param(params, "include_conversation");
  if (!conversation) co_return std::move(conversation).error();
  if (*conversation && !*repo) {
    co_return invalid(
        "include_conversation needs `repo`: conversations are searched per "
        "repository",
        "name the repository whose loops' conversations to search");
  }
  auto found = services_.notebook.search(serving_uid(), *repo, query->get<std::string>(),
                                         static_cast<std::size_t>(*top_k), *conversation);
  if (!found) co_return found;
  (*found)["repo"] = repo_json(*repo);
  co_return found;
}

asio::awaitable<Result<json>> MethodRegistry::memory_get(ClientSession&, json params) {
  auto note_id = note_id_param(params);
  if (!note_id) co_return std::move(note_id).error();
  auto note = services_.notebook.show(serving_uid(), *note_id);
  if (!note) co_return note_not_found(std::move(note).error());
  co_return note;
}

asio::awaitable<Result<json>> MethodRegistry::memory_delete(ClientSession&, json params) {
  auto note_id = note_id_param(params);
  if (!note_id) co_return std::move(note_id).error();
  auto deleted = services_.notebook.remove(serving_uid(), *note_id);
  if (!deleted) co_return note_not_found(std::move(deleted).error());
  co_return deleted;
}

void MethodRegistry::add_memory_methods() {
  add<proto::methods::MemoryList>([this](ClientSession& session, proto::UntypedParams params) {
    return memory_list(session, std::move(params));
  });
  add<proto::methods::MemorySearch>([this](ClientSession& session, proto::UntypedParams params) {
    return memory_search(session, std::move(params));
  });
  add<proto::methods::MemoryGet>([this](ClientSession& session, proto::UntypedParams params) {
    return memory_get(session, std::move(params));
  });
  add<proto::methods::MemoryDelete>([this](ClientSession& session, proto::UntypedParams params) {
    return memory_delete(session, std::move(params));
  });
}

}  // namespace loopr::daemon
