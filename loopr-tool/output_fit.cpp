#include "loopr-tool/output_fit.hpp"

#include <string>
#include <vector>

namespace loopr::tool {
namespace {

using Json = nlohmann::json;

// As tool_main.cpp's json_line() writes it.
std::size_t line_size(const Json& value) {
  return value.dump(-1, ' ', false, Json::error_handler_t::replace).size() + 1;
}

const char* listing_key(std::string_view tool, const Json& result) {
  if (tool == "list_directory") return "entries";
  if (tool == "glob") return "matches";
  if (tool == "grep") {
    for (const char* key : {"content", "files", "counts"})
      if (result.contains(key)) return key;
  }
  return nullptr;
}

}  // namespace

bool fit_listing_to_output_cap(std::string_view tool, Json& result, std::size_t max_output_bytes) {
  if (max_output_bytes == 0 || !result.is_object()) return false;
  const char* key = listing_key(tool, result);
  if (key == nullptr) return false;
  auto listing = result.find(key);
  if (listing == result.end() || !(listing->is_array() || listing->is_string())) return false;
  if (line_size(result) <= max_output_bytes) return false;

  const Json whole = result;  // to give back if nothing fits
  const Json& original = whole.at(key);
  const bool lines = original.is_string();
  // What can be kept: the first n elements, or the text up to the end of its
  // n-th line.
  std::vector<std::size_t> line_ends;
  if (lines) {
    const std::string& text = original.get_ref<const std::string&>();
    for (std::size_t at = text.find('\n'); at != std::string::npos; at = text.find('\n', at + 1))
      line_ends.push_back(at + 1);
    if (text.empty() || text.back() != '\n') line_ends.push_back(text.size());
  }
  const std::size_t units = lines ? line_ends.size() : original.size();
  const std::string tool_hint = result.contains("hint") && result["hint"].is_string()
                                    ? result["hint"].get<std::string>()
                                    : "";

  auto keep = [&](std::size_t count) {
    if (lines) {
      const std::string& text = original.get_ref<const std::string&>();
      result[key] = text.substr(0, count == 0 ? 0 : line_ends[count - 1]);
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

  // The largest count that fits.
  std::size_t low = 0;
  std::size_t high = units == 0 ? 0 : units - 1;
  while (low < high) {
    const std::size_t middle = low + (high - low + 1) / 2;
    keep(middle);
    if (line_size(result) <= max_output_bytes) {
      low = middle;
    } else {
      high = middle - 1;
    }
  }
  keep(low);
  if (line_size(result) > max_output_bytes) {
    // Not even an empty listing fits: the rest of the result is too large.
    // Leave it whole for the runner to refuse as too_large.
    result = whole;
    return false;
  }
  return true;
}

}  // namespace loopr::tool
