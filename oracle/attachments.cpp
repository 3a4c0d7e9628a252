#include "oracle/attachments.hpp"

#include <algorithm>
#include <set>

#include "common/utf8.hpp"
#include "llm/provider.hpp"

namespace loopr::oracle {
namespace {

using nlohmann::json;

// A page is at most this many lines (about 50 KB of code); fewer when
// little of the file's share is left (a numbered line is at least 8 bytes).
constexpr std::int64_t kMaxPageLines = 1000;
constexpr std::int64_t kMinLineBytes = 8;

std::int64_t integer_field(const json& object, const char* key, std::int64_t fallback) {
  auto it = object.find(key);
  return it != object.end() && it->is_number_integer() ? it->get<std::int64_t>() : fallback;
}

Error cancelled_error() {
  return make_error(llm::errc::cancelled, "the oracle was cancelled while it read the files");
}

std::string bytes_text(std::int64_t bytes) {
  return std::to_string(bytes) + " bytes";
}

// Appends `content` (whole numbered lines) to `text` up to `cap` bytes in
// all, cutting after the last whole line that fits (or, when not even one
// fits into an empty text, inside the first line on a UTF-8 boundary).
// Returns the number of lines appended whole; `cut_inside` is set when a
// line was cut.
std::int64_t append_lines(std::string& text, const std::string& content, std::size_t cap,
                          bool& cut_inside) {
  const std::size_t room = cap > text.size() ? cap - text.size() : 0;
  if (content.size() <= room) {
    text += content;
    return static_cast<std::int64_t>(std::count(content.begin(), content.end(), '\n'));
  }
  const std::size_t last_newline = room == 0 ? std::string::npos : content.rfind('\n', room - 1);
  if (last_newline != std::string::npos) {
    text.append(content, 0, last_newline + 1);
    return static_cast<std::int64_t>(std::count(
        content.begin(), content.begin() + static_cast<std::ptrdiff_t>(last_newline) + 1, '\n'));
  }
  if (text.empty() && room > 0) {
    text.append(content, 0, utf8_safe_prefix(content, room));
    text += '\n';
    cut_inside = true;
  }
  return 0;
}

// Reads one file into `attachment`, at most `cap` bytes of it.
asio::awaitable<Result<void>> read_one(Attachment& attachment, std::int64_t cap,
                                       const std::string& cap_name, const FileReader& read,
                                       llm::CancelToken* cancel) {
  std::int64_t offset = 1;
  std::int64_t max_page = kMaxPageLines;
  std::int64_t lines_cut = 0;
  bool cut_inside = false;
  bool more = false;
  bool first = true;
  while (true) {
    if (cancel != nullptr && cancel->cancelled()) co_return cancelled_error();
    const std::int64_t room = cap - static_cast<std::int64_t>(attachment.text.size());
    const std::int64_t limit = std::clamp<std::int64_t>(room / kMinLineBytes + 1, 1, max_page);
    Result<json> page = co_await read(attachment.path, offset, limit);
    if (cancel != nullptr && cancel->cancelled()) co_return cancelled_error();
    if (!page) {
      // The page was over read_file's output cap: ask for fewer lines.
      if (page.error().code == errc::too_large && limit > 1) {
        max_page = limit / 2;
        continue;
      }
      co_return std::move(page).error();
    }
    const json& output = *page;
    if (first) {
      attachment.size_bytes = static_cast<std::uint64_t>(integer_field(output, "size_bytes", 0));
      if (auto it = output.find("total_lines"); it != output.end() && it->is_number_integer()) {
        attachment.total_lines = it->get<std::int64_t>();
      }
      first = false;
    }
    lines_cut += integer_field(output, "lines_cut", 0);
    const std::string content = output.value("content", "");
    const std::int64_t returned = integer_field(output, "lines_returned", 0);
    const std::int64_t whole =
        append_lines(attachment.text, content, static_cast<std::size_t>(cap), cut_inside);
    if (whole > 0) attachment.last_line = offset + whole - 1;
    more = output.value("more", false);
    if (whole < returned || cut_inside) {
      more = true;  // lines of this page did not fit
      break;
    }
    if (!more || static_cast<std::int64_t>(attachment.text.size()) >= cap) break;
    offset = integer_field(output, "next_offset", offset + returned);
  }
  std::vector<std::string> why;
  if (more || cut_inside) {
    why.push_back(cut_inside ? "cut inside line 1 at " + cap_name
                             : "only the first " +
                                   bytes_text(static_cast<std::int64_t>(attachment.text.size())) +
                                   " fit " + cap_name);
  }
  if (lines_cut > 0) {
    why.push_back(std::to_string(lines_cut) +
                  " line(s) over 2000 characters were cut by read_file, ending in \"...\"");
  }
  attachment.truncated = !why.empty();
  for (const std::string& reason : why)
    attachment.cut += (attachment.cut.empty() ? "" : "; ") + reason;
  co_return Result<void>{};
}

}  // namespace

json Attachment::to_json() const {
  json out = {{"path", path},
              {"bytes", text.size()},
              {"truncated", truncated},
              {"size_bytes", size_bytes},
              {"lines", last_line == 0
                            ? json()
                            : json(std::to_string(first_line) + "-" + std::to_string(last_line))},
              {"total_lines", total_lines ? json(*total_lines) : json()}};
  if (!cut.empty()) out["cut"] = cut;
  return out;
}

asio::awaitable<Result<std::vector<Attachment>>> read_attachments(
    const std::vector<std::string>& paths, const AttachmentLimits& limits, const FileReader& read,
    llm::CancelToken* cancel) {
  std::vector<Attachment> attachments;
  json failures = json::array();
  std::string first_code;
  std::string message;
  std::int64_t budget = std::max<std::int64_t>(0, limits.budget_bytes);
  std::set<std::string> seen;
  for (const std::string& path : paths) {
    if (!seen.insert(path).second) continue;
    Attachment attachment;
    attachment.path = path;
    const bool file_cap = limits.max_file_bytes <= budget;
    const std::int64_t cap = file_cap ? limits.max_file_bytes : budget;
    const std::string cap_name =
        file_cap ? "[oracle] max_file_bytes (" + bytes_text(limits.max_file_bytes) + ")"
                 : "what [oracle] max_total_bytes (" + bytes_text(limits.max_total_bytes) +
                       " for all files and the context) left";
    Result<void> done = co_await read_one(attachment, cap, cap_name, read, cancel);
    if (!done) {
      if (done.error().code == llm::errc::cancelled) co_return std::move(done).error();
      if (first_code.empty()) first_code = done.error().code;
      message += (message.empty() ? "" : "; ") + path + ": " + done.error().message;
      failures.push_back({{"path", path}, {"error", done.error().to_json()}});
      continue;
    }
    budget -= static_cast<std::int64_t>(attachment.text.size());
    attachments.push_back(std::move(attachment));
  }
  if (!failures.empty()) {
    Error error = make_error(first_code, "cannot attach " + message,
                             "fix or drop the paths (relative to the worktree, text files only) "
                             "and ask again; the oracle was not asked and nothing was spent");
    error.details = {{"files", std::move(failures)}};
    co_return error;
  }
  co_return attachments;
}

}  // namespace loopr::oracle
