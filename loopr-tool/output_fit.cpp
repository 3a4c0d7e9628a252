#include "loopr-tool/output_fit.hpp"

#include <cstdint>
#include <string>
#include <vector>

namespace loopr::tool {
namespace {

using Json = nlohmann::json;

const char* listing_key(std::string_view tool, const Json& result) {
  if (tool == "list_directory") return "entries";
  if (tool == "glob") return "matches";
  if (tool == "grep") {
    for (const char* key : {"content", "files", "counts"})
      if (result.contains(key)) return key;
  }
  return nullptr;
}

// Where each line of `text` ends (after its '\n'; a last line without one
// ends at the text's end).
std::vector<std::size_t> line_ends(const std::string& text) {
  std::vector<std::size_t> ends;
  for (std::size_t at = text.find('\n'); at != std::string::npos; at = text.find('\n', at + 1))
    ends.push_back(at + 1);
  if (!text.empty() && text.back() != '\n') ends.push_back(text.size());
  return ends;
}

// The largest count in [low, high] for which `fits` holds, given that it
// holds for every count below one for which it holds; `low` if none does.
std::size_t largest_fitting(std::size_t low, std::size_t high,
                            const std::function<bool(std::size_t)>& fits) {
  while (low < high) {
    const std::size_t middle = low + (high - low + 1) / 2;
    if (fits(middle)) {
      low = middle;
    } else {
      high = middle - 1;
    }
  }
  return low;
}

std::string page_hint(std::int64_t kept, std::int64_t asked, std::int64_t next_offset,
                      std::size_t max_output_bytes) {
  return "the page was cut from " + std::to_string(asked) + " to " + std::to_string(kept) +
         " lines to fit this tool's output limit of " + std::to_string(max_output_bytes) +
         " bytes; read on with offset " + std::to_string(next_offset);
}

// Attempts at a page that fits, when the file changes between reads.
constexpr int kPageAttempts = 3;

}  // namespace

std::size_t result_line_size(const Json& value) {
  return value.dump(-1, ' ', false, Json::error_handler_t::replace).size() + 1;
}

bool fit_listing_to_output_cap(std::string_view tool, Json& result, std::size_t max_output_bytes) {
  if (max_output_bytes == 0 || !result.is_object()) return false;
  const char* key = listing_key(tool, result);
  if (key == nullptr) return false;
  auto listing = result.find(key);
  if (listing == result.end() || !(listing->is_array() || listing->is_string())) return false;
  if (result_line_size(result) <= max_output_bytes) return false;

  const Json whole = result;  // to give back if nothing fits
  const Json& original = whole.at(key);
  const bool lines = original.is_string();
  // What can be kept: the first n elements, or the text up to the end of its
  // n-th line.
  const std::vector<std::size_t> ends =
      lines ? line_ends(original.get_ref<const std::string&>()) : std::vector<std::size_t>();
  const std::size_t units = lines ? ends.size() : original.size();
  const std::string tool_hint = result.contains("hint") && result["hint"].is_string()
                                    ? result["hint"].get<std::string>()
                                    : "";

  auto keep = [&](std::size_t count) {
    if (lines) {
      const std::string& text = original.get_ref<const std::string&>();
      result[key] = text.substr(0, count == 0 ? 0 : ends[count - 1]);
    } else {
      result[key] = Json(original.begin(), original.begin() + static_cast<std::ptrdiff_t>(count));
    }
    result["truncated"] = true;
    result["hint"] =
        "cut to " + std::to_string(count) + " of the " + std::to_string(units) +
        (lines ? " lines" : " entries") + " listed, to fit this tool's output limit of " +
        std::to_string(max_output_bytes) + " bytes; " +
        (tool_hint.empty() ? "narrow the path or the pattern" : "before that cut: " + tool_hint);
  };

  keep(largest_fitting(0, units == 0 ? 0 : units - 1, [&](std::size_t count) {
    keep(count);
    return result_line_size(result) <= max_output_bytes;
  }));
  if (result_line_size(result) > max_output_bytes) {
    // Not even an empty listing fits: the rest of the result is too large.
    // Leave it whole for the runner to refuse as too_large.
    result = whole;
    return false;
  }
  return true;
}

bool fit_page_to_output_cap(std::string_view tool, const Json& args, Json& result,
                            std::size_t max_output_bytes, const PageReader& read_page) {
  if (tool != "read_file" || max_output_bytes == 0 || !result.is_object() || !args.is_object())
    return false;
  const auto whole_page = result.find("lines_returned");
  if (whole_page == result.end() || !whole_page->is_number_integer()) return false;
  const std::int64_t asked = whole_page->get<std::int64_t>();
  bool cut = false;
  for (int attempt = 0; attempt < kPageAttempts; ++attempt) {
    if (result_line_size(result) <= max_output_bytes) return cut;
    const auto content = result.find("content");
    const auto start = result.find("start_line");
    if (content == result.end() || !content->is_string() || start == result.end() ||
        !start->is_number_integer()) {
      return cut;
    }
    const std::int64_t first = start->get<std::int64_t>();
    const std::string text = content->get<std::string>();
    const std::vector<std::size_t> ends = line_ends(text);
    if (ends.size() <= 1) return cut;  // one line is returned whatever its size
    // What the shorter page will look like, as far as its size goes: fewer
    // lines of the same text, more to read, and the hint. Its other fields
    // can only be as long or shorter (fewer lines cut, crlf no longer the
    // rule, ...).
    Json trial = result;
    const std::size_t lines = largest_fitting(1, ends.size() - 1, [&](std::size_t count) {
      const auto kept = static_cast<std::int64_t>(count);
      trial["content"] = text.substr(0, ends[count - 1]);
      trial["lines_returned"] = kept;
      trial["more"] = true;
      trial["next_offset"] = first + kept;
      trial["hint"] = page_hint(kept, asked, first + kept, max_output_bytes);
      return result_line_size(trial) <= max_output_bytes;
    });
    Json shorter = args;
    shorter["limit"] = static_cast<std::int64_t>(lines);
    auto page = read_page(shorter);
    if (!page || !page->is_object()) return cut;  // e.g. the file went: keep what was read
    const auto returned = page->find("lines_returned");
    const auto next = page->find("next_offset");
    if (returned != page->end() && returned->is_number_integer() && next != page->end() &&
        next->is_number_integer()) {
      (*page)["hint"] = page_hint(returned->get<std::int64_t>(), asked, next->get<std::int64_t>(),
                                  max_output_bytes);
    }
    result = std::move(*page);
    cut = true;
  }
  return cut;
}

}  // namespace loopr::tool
