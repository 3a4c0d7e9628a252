// The memory.* control methods (docs/control-protocol.md "Memory notes"):
// the person's view of the notes the memory tools keep, so nothing a model
// keeps is hidden from its user. Thin handlers over memory::Notebook, which
// owns what a note is; the params are read by proto/memory_messages.hpp, and
// here a repo path is resolved to its repository. Every note shown is the
// user's looprd serves: the control socket admits only that uid.
#include <limits.h>
#include <stdlib.h>
#include <sys/stat.h>
#include <unistd.h>

#include "daemon/methods.hpp"
#include "memory/repository.hpp"

namespace loopr::daemon {
namespace {

using nlohmann::json;

std::int64_t serving_uid() {
  return static_cast<std::int64_t>(::geteuid());
}

// An absolute path (proto checked it) as the repository its notes belong
// to: realpath, then memory::repository_of (a subfolder or a linked worktree
// names its repository), as a tool call from that folder would.
Result<std::optional<std::string>> repository_of(const std::optional<std::string>& path) {
  if (!path) return std::optional<std::string>();
  char resolved[PATH_MAX];
  struct stat st {};
  if (path->size() >= PATH_MAX || ::realpath(path->c_str(), resolved) == nullptr ||
      ::stat(resolved, &st) != 0 || !S_ISDIR(st.st_mode)) {
    return proto::invalid_params("repo '" + path->substr(0, PATH_MAX) + "' is not a folder",
                                 "pass an existing folder: the repository's, or one inside it");
  }
  return std::optional<std::string>(memory::repository_of(resolved));
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

Result<proto::Document> MethodRegistry::memory_list(const proto::MemoryListParams& params) {
  auto repo = repository_of(params.repo);
  if (!repo) return std::move(repo).error();
  auto listed = services_.notebook.list(
      serving_uid(), *repo,
      static_cast<std::size_t>(params.limit.value_or(proto::kDefaultMemoryListLimit)));
  if (!listed) return listed;
  (*listed)["repo"] = repo_json(*repo);
  return listed;
}

Result<proto::Document> MethodRegistry::memory_search(const proto::MemorySearchParams& params) {
  auto repo = repository_of(params.repo);
  if (!repo) return std::move(repo).error();
  if (params.include_conversation && !*repo) {
    return proto::invalid_params(
        "include_conversation needs `repo`: conversations are searched per "
        "repository",
        "name the repository whose loops' conversations to search");
  }
  auto found = services_.notebook.search(
      serving_uid(), *repo, params.query,
      static_cast<std::size_t>(params.top_k.value_or(proto::kDefaultMemoryTopK)),
      params.include_conversation);
  if (!found) return found;
  (*found)["repo"] = repo_json(*repo);
  return found;
}

void MethodRegistry::add_memory_methods() {
  namespace methods = proto::methods;
  add<methods::MemoryList>([this](ClientSession&, const proto::MemoryListParams& params) {
    return memory_list(params);
  });
  add<methods::MemorySearch>([this](ClientSession&, const proto::MemorySearchParams& params) {
    return memory_search(params);
  });
  add<methods::MemoryGet>(
      [this](ClientSession&, const proto::NoteIdParams& params) -> Result<proto::Document> {
        auto note = services_.notebook.show(serving_uid(), params.note_id);
        if (!note) return note_not_found(std::move(note).error());
        return note;
      });
  add<methods::MemoryDelete>(
      [this](ClientSession&, const proto::NoteIdParams& params) -> Result<proto::Document> {
        auto deleted = services_.notebook.remove(serving_uid(), params.note_id);
        if (!deleted) return note_not_found(std::move(deleted).error());
        return deleted;
      });
}

}  // namespace loopr::daemon
