// Attachments: the worktree files an oracle question carries, read through
// the caller's FileReader (looprd: the read_file tool through its router, so
// every read is sandboxed, capped, recorded and evented like a model's) and
// cut to [oracle] max_file_bytes each and a byte budget for all of them.
//
// The text is read_file's numbered lines ("%6d|line"), kept as they are: the
// oracle can cite line numbers the caller finds again with read_file. The
// caps count those bytes, numbers included: they bound what the oracle is
// sent. A file is read a page at a time (read_file's offset and limit, the
// page halved when read_file's own output cap refuses it) until its share is
// full, and cut at the last whole line that fits.
//
// A file that cannot be read fails the whole attachment set (see
// read_attachments): the oracle is not asked, so nothing is spent on an
// answer that lacks a file the caller thought it needed.
// Threads: io thread only.
#pragma once

#include <asio/awaitable.hpp>
#include <cstdint>
#include <functional>
#include <nlohmann/json.hpp>
#include <optional>
#include <string>
#include <vector>

#include "common/error.hpp"
#include "llm/cancel_token.hpp"

namespace loopr::oracle {

// Reads `limit` lines of `path` (relative to the caller's worktree) from
// line `offset` (1-based): read_file's output ({path, content, start_line,
// lines_returned, size_bytes, lines_cut, total_lines, more, next_offset,
// ...}) or its Error (path_outside_worktree, not_found, binary_file,
// too_large when the page was over read_file's output cap, ...).
using FileReader = std::function<asio::awaitable<Result<nlohmann::json>>(
    const std::string& path, std::int64_t offset, std::int64_t limit)>;

struct Attachment {
  std::string path;  // as the caller gave it
  std::string text;  // numbered lines, possibly cut
  std::int64_t first_line = 1;
  std::int64_t last_line = 0;               // 0: no line attached
  std::optional<std::int64_t> total_lines;  // unknown for files over 64 MiB
  std::uint64_t size_bytes = 0;             // of the file
  bool truncated = false;                   // not attached whole
  std::string cut;  // why not, for the oracle and the caller ("" when whole)

  // {path, bytes, truncated, size_bytes, lines, total_lines, cut?}: the
  // oracle tool's `files` entry.
  nlohmann::json to_json() const;
};

struct AttachmentLimits {
  std::int64_t max_file_bytes = 65536;    // [oracle] max_file_bytes
  std::int64_t budget_bytes = 262144;     // for all files together (what the context left)
  std::int64_t max_total_bytes = 262144;  // [oracle] max_total_bytes, to name it
};

// Reads `paths` in order (a repeated path once), each cut to max_file_bytes
// and to what is left of budget_bytes. Every file is read (so that every
// bad path is named at once); if any could not be, the Error is the first
// failure's code with a message naming each failed path and why, and
// details {files: [{path, error}]}. `cancel` fired: a "cancelled" Error
// (checked before each read and after it).
asio::awaitable<Result<std::vector<Attachment>>> read_attachments(
    const std::vector<std::string>& paths, const AttachmentLimits& limits, const FileReader& read,
    llm::CancelToken* cancel);

}  // namespace loopr::oracle
