// read_file {path, offset=1, limit=2000}: numbered lines ("%6d|line").
//
// Memory is bounded whatever the file: it is read in 64 KiB chunks, only the
// requested page is kept, and a line longer than kMaxLineBytes keeps its
// first kMaxLineBytes (cut on a UTF-8 boundary) plus "...". Files up to
// kMaxEditableBytes are read to the end in the same pass to count their lines
// and hash them (the hash is what edit_file's expected_hash checks); larger
// files stop after the page, so the first page of a multi-GB file costs one
// chunk, and total_lines and content_hash are null.
#include <fcntl.h>
#include <unistd.h>

#include <cstring>

#include "common/utf8.hpp"
#include "loopr-tool/arguments.hpp"
#include "loopr-tool/atomic_write.hpp"
#include "loopr-tool/binary_detection.hpp"
#include "loopr-tool/content_hash.hpp"
#include "loopr-tool/tools.hpp"

namespace loopr::tool {
namespace {

constexpr std::size_t kChunkBytes = 64 * 1024;
constexpr std::size_t kMaxLineBytes = 2000;
constexpr std::int64_t kMaxLimit = 10000;

// Collects the page while the file streams past, one byte range at a time.
class PageBuilder {
 public:
  PageBuilder(std::int64_t offset, std::int64_t limit) : first_(offset), last_(offset + limit - 1) {}

  // Feeds the next bytes of the file.
  void feed(std::string_view bytes) {
    while (!bytes.empty()) {
      const std::size_t newline = bytes.find('\n');
      const std::string_view piece = bytes.substr(0, newline);
      if (in_page()) append_to_line(piece);
      if (newline == std::string_view::npos) {
        line_open_ = true;
        return;
      }
      end_line();
      bytes.remove_prefix(newline + 1);
    }
  }
  // At EOF: a last line without '\n' still counts.
  void finish() {
    if (line_open_) end_line();
  }

  bool page_complete() const { return line_ > last_; }
  // Lines seen so far (complete ones, plus an open one when finished).
  std::int64_t lines_seen() const { return line_ - 1; }
  std::int64_t lines_returned() const { return returned_; }
  const std::string& content() const { return content_; }
  bool invalid_utf8() const { return invalid_utf8_; }
  int lines_cut() const { return lines_cut_; }
  bool saw_crlf() const { return crlf_ > 0 && crlf_ * 2 >= returned_; }

 private:
  bool in_page() const { return line_ >= first_ && line_ <= last_; }

  void append_to_line(std::string_view piece) {
    if (current_.size() < kMaxLineBytes + 4) {
      current_.append(piece.substr(0, kMaxLineBytes + 4 - current_.size()));
    }
    line_bytes_ += piece.size();
  }

  void end_line() {
    if (in_page()) {
      std::string line = std::move(current_);
      if (line_bytes_ <= kMaxLineBytes + 4 && !line.empty() && line.back() == '\r') {
        line.pop_back();
        ++crlf_;
      }
      const bool cut = line_bytes_ > kMaxLineBytes || line.size() > kMaxLineBytes;
      if (cut) {
        line.resize(utf8_safe_prefix(line, kMaxLineBytes));
        ++lines_cut_;
      }
      if (!is_valid_utf8(line)) {
        invalid_utf8_ = true;
        line = to_lossy_utf8(line);
      }
      char number[32];
      std::snprintf(number, sizeof number, "%6lld|", static_cast<long long>(line_));
      content_ += number;
      content_ += line;
      if (cut) content_ += "...";
      content_ += '\n';
      ++returned_;
    }
    current_.clear();
    line_bytes_ = 0;
    line_open_ = false;
    ++line_;
  }

  std::int64_t first_;
  std::int64_t last_;
  std::int64_t line_ = 1;  // number of the line being read
  std::string current_;
  std::size_t line_bytes_ = 0;
  bool line_open_ = false;
  std::string content_;
  std::int64_t returned_ = 0;
  std::int64_t crlf_ = 0;
  bool invalid_utf8_ = false;
  int lines_cut_ = 0;
};

}  // namespace

Result<Json> read_file(const Worktree& worktree, const Json& raw) {
  auto args = Arguments::parse(raw, "read_file", {"path", "offset", "limit"});
  if (!args) return std::move(args).error();
  auto path = args->required_string("path");
  if (!path) return std::move(path).error();
  auto offset = args->integer_or("offset", 1, 1, INT64_MAX / 2);
  if (!offset) return std::move(offset).error();
  auto limit = args->integer_or("limit", 2000, 1, kMaxLimit);
  if (!limit) return std::move(limit).error();
  auto rel = worktree.relative(*path);
  if (!rel) return std::move(rel).error();

  // O_NONBLOCK: opening a fifo must not hang; only regular files are read.
  auto fd = worktree.open(*rel, O_RDONLY | O_NONBLOCK | O_NOCTTY);
  if (!fd) return std::move(fd).error();
  struct stat st {};
  if (::fstat(fd->get(), &st) != 0) return errno_error(errno, "cannot stat", *rel);
  if (S_ISDIR(st.st_mode)) {
    return make_error(errc::is_directory, "'" + *rel + "' is a directory",
                      "use list_directory to see what it contains");
  }
  if (!S_ISREG(st.st_mode)) {
    return make_error(errc::invalid_arguments, "'" + *rel + "' is not a regular file",
                      "read_file reads regular files only");
  }
  ::fcntl(fd->get(), F_SETFL, 0);

  const auto size = static_cast<std::uint64_t>(st.st_size);
  const bool whole_pass = size <= kMaxEditableBytes;
  PageBuilder page(*offset, *limit);
  std::optional<ContentHasher> hasher;
  if (whole_pass) hasher.emplace();
  std::string chunk(kChunkBytes, '\0');
  bool first_chunk = true;
  bool at_eof = false;
  for (;;) {
    const ssize_t n = ::read(fd->get(), chunk.data(), chunk.size());
    if (n < 0 && errno == EINTR) continue;
    if (n < 0) return errno_error(errno, "cannot read", *rel);
    if (n == 0) {
      at_eof = true;
      break;
    }
    const std::string_view bytes(chunk.data(), static_cast<std::size_t>(n));
    if (first_chunk && looks_binary(bytes)) {
      return make_error(errc::binary_file,
                        "'" + *rel + "' looks like a binary file (it has NUL bytes), " +
                            std::to_string(size) + " bytes",
                        "inspect it with run_command, e.g. `xxd " + *rel +
                            " | head -n 40` or `file " + *rel + "`");
    }
    first_chunk = false;
    if (hasher) hasher->update(bytes);
    page.feed(bytes);
    if (!whole_pass && page.page_complete()) break;
  }
  if (at_eof) page.finish();

  Json result = {
      {"path", *rel},
      {"content", page.content()},
      {"start_line", *offset},
      {"lines_returned", page.lines_returned()},
      {"size_bytes", size},
      {"invalid_utf8", page.invalid_utf8()},
      {"lines_cut", page.lines_cut()},
  };
  if (whole_pass) {
    const std::int64_t total = page.lines_seen();
    if (*offset > total && !(total == 0 && *offset == 1)) {
      return make_error(errc::invalid_arguments,
                        "offset " + std::to_string(*offset) + " is past the end of '" + *rel +
                            "', which has " + std::to_string(total) + " lines",
                        "read from offset 1, or a line number up to " + std::to_string(total));
    }
    const std::int64_t last_returned = *offset + page.lines_returned() - 1;
    result["total_lines"] = total;
    result["more"] = last_returned < total;
    if (last_returned < total) result["next_offset"] = last_returned + 1;
    result["content_hash"] = hasher->finish();
    if (total == 0) result["note"] = "the file is empty";
  } else {
    if (page.lines_returned() == 0) {
      return make_error(errc::invalid_arguments,
                        "offset " + std::to_string(*offset) + " is past the end of '" + *rel +
                            "', which has " + std::to_string(page.lines_seen()) + " lines",
                        "read from a smaller offset");
    }
    result["total_lines"] = nullptr;
    result["content_hash"] = nullptr;
    result["more"] = !at_eof;
    if (!at_eof) result["next_offset"] = *offset + page.lines_returned();
    result["too_large_to_edit"] = true;
    result["note"] = "the file is larger than " + std::to_string(kMaxEditableBytes >> 20) +
                     " MiB: lines are not counted and it cannot be edited with edit_file";
  }
  if (page.saw_crlf()) result["line_endings"] = "crlf";
  return result;
}

}  // namespace loopr::tool
