// write_file {path, content}: creates parent folders and replaces the file
// atomically (atomic_write.hpp), keeping its mode.
// Two arguments only the daemon sends (they are not in the model's schema):
//   expected_hash  content_hash of the session's last read_file; a file that
//                  changed since is refused as stale_read. One that is gone
//                  is created: nothing anyone wrote can be lost.
//   create_only    the session never read the file: an existing file is
//                  refused as not_read_first, only creating one is allowed.
// A file over kMaxEditableBytes is refused as too_large before either check:
// read_file cannot hash it, so no read would ever allow overwriting it.
#include <fcntl.h>

#include "loopr-tool/arguments.hpp"
#include "loopr-tool/atomic_write.hpp"
#include "loopr-tool/content_hash.hpp"
#include "loopr-tool/tools.hpp"

namespace loopr::tool {

Result<Json> write_file(const Worktree& worktree, const Json& raw) {
  auto args =
      Arguments::parse(raw, "write_file", {"path", "content", "expected_hash", "create_only"});
  if (!args) return std::move(args).error();
  auto path = args->required_string("path");
  if (!path) return std::move(path).error();
  auto content = args->required_string("content");
  if (!content) return std::move(content).error();
  auto expected = args->optional_string("expected_hash");
  if (!expected) return std::move(expected).error();
  auto create_only = args->boolean_or("create_only", false);
  if (!create_only) return std::move(create_only).error();
  if (content->size() > kMaxEditableBytes) {
    return make_error(errc::too_large,
                      "content is over " + std::to_string(kMaxEditableBytes >> 20) + " MiB",
                      "write large files in parts or generate them "
                      "with run_command");
  }
  auto rel = worktree.relative(*path);
  if (!rel) return std::move(rel).error();
  if (auto r = refuse_git_metadata_before_creating(worktree, *rel); !r) {
    return std::move(r).error();
  }
  auto parent = worktree.open_parent(*rel, /*create_parents=*/true);
  if (!parent) return std::move(parent).error();
  if (auto r = refuse_git_metadata(worktree, *parent); !r) return std::move(r).error();
  auto existing = existing_regular_file(*parent);
  if (!existing) return std::move(existing).error();

  if (existing->has_value() &&
      static_cast<std::uint64_t>((**existing).st_size) > kMaxEditableBytes) {
    return too_large_to_change(*rel, (**existing).st_size);
  }
  if (*create_only && existing->has_value()) {
    return make_error(errc::not_read_first,
                      "'" + *rel +
                          "' already exists and has not been read in this session; "
                          "overwriting it needs a prior read",
                      "read it first with read_file, then write it again (or change part of it "
                      "with edit_file)");
  }
  if (expected->has_value() && existing->has_value()) {
    auto current = read_whole_file(*parent, kMaxEditableBytes);
    if (!current) return std::move(current).error();
    if (content_hash(*current) != **expected) {
      Error error = make_error(errc::stale_read,
                               "'" + *rel + "' changed since it was last read (now " +
                                   std::to_string(current->size()) + " bytes)",
                               "read it again with read_file, then redo the write on the current "
                               "content");
      error.details = {{"current_hash", content_hash(*current)}, {"expected_hash", **expected}};
      return error;
    }
  }
  if (auto r = atomic_replace(*parent, *content, *existing); !r) return std::move(r).error();
  return Json{{"path", *rel},
              {"bytes_written", content->size()},
              {"created", !existing->has_value()},
              {"content_hash", content_hash(*content)}};
}

}  // namespace loopr::tool
