#include "client/memory_view.hpp"

#include <algorithm>
#include <cstdio>
#include <ostream>
#include <vector>

#include "client/loop_view.hpp"
#include "client/text_format.hpp"

namespace loopr::client {
namespace {

using nlohmann::json;

constexpr std::string_view kMark = "**";
constexpr std::string_view kBoldOn = "\x1b[1m";
constexpr std::string_view kBoldOff = "\x1b[22m";
// The widest a table cell other than the note's text gets (a repo path).
constexpr std::size_t kMaxCellWidth = 60;
// Below this many columns left for TEXT, it goes on a line of its own.
constexpr std::size_t kMinTextWidth = 20;
constexpr std::string_view kGap = "  ";
constexpr std::string_view kIndent = "  ";

std::string repo_cell(const json& note) {
  const json& repo = member(note, "repo");
  if (repo.is_null()) return "(user)";
  return cut(repo.is_string() ? repo.get<std::string>() : compact_json(repo), kMaxCellWidth);
}

std::string text_of(const json& note) {
  const json& text = member(note, "text");
  return text.is_string() ? text.get<std::string>() : std::string();
}

std::string padded(const std::string& cell, std::size_t width) {
  return cell + std::string(width - std::min(width, code_points(cell)), ' ');
}

std::string format_score(const json& score) {
  const auto value = number_of(score);
  if (!value) return "-";
  char text[32];
  std::snprintf(text, sizeof text, "%.3g", *value);
  return text;
}

// Prints `text` (already printable) line by line, each after kIndent.
void print_indented(std::string_view text, std::ostream& out) {
  if (text.empty()) text = "-";
  std::size_t start = 0;
  do {
    std::size_t end = text.find('\n', start);
    if (end == std::string_view::npos) end = text.size();
    out << kIndent << text.substr(start, end - start) << '\n';
    start = end + 1;
  } while (start < text.size());
}

}  // namespace

std::string format_note_time(const json& time) {
  if (!time.is_string()) return "-";
  const std::string& text = time.get_ref<const std::string&>();
  // YYYY-MM-DDTHH:MM:SSZ
  constexpr std::string_view kShape = "0000-00-00T00:00:00Z";
  bool iso = text.size() == kShape.size();
  for (std::size_t i = 0; iso && i < kShape.size(); ++i) {
    iso = kShape[i] == '0' ? text[i] >= '0' && text[i] <= '9' : text[i] == kShape[i];
  }
  if (!iso) return printable(text);
  return text.substr(0, 10) + " " + text.substr(11, 5) + " UTC";
}

std::string render_matches(std::string_view snippet, bool bold) {
  std::string text = printable_lines(snippet);
  if (!bold) return text;
  std::string out;
  bool open = false;
  std::size_t start = 0;
  for (std::size_t at = text.find(kMark); at != std::string::npos; at = text.find(kMark, start)) {
    out.append(text, start, at - start);
    out += open ? kBoldOff : kBoldOn;
    open = !open;
    start = at + kMark.size();
  }
  out.append(text, start);
  if (open) out += kBoldOff;
  return out;
}

void print_note_table(const json& notes, const TerminalStyle& style, std::ostream& out) {
  std::vector<std::vector<std::string>> rows = {{"ID", "SCOPE", "REPO", "UPDATED"}};
  std::vector<std::string> texts = {"TEXT"};
  if (notes.is_array()) {
    for (const json& note : notes) {
      if (!note.is_object()) continue;
      rows.push_back({cut(string_of(note, "note_id"), kMaxCellWidth), cut(cell(note, "scope"), 8),
                      repo_cell(note), format_note_time(member(note, "updated_at"))});
      texts.push_back(text_of(note));
    }
  }
  if (rows.size() == 1) {
    out << "no notes\n";
    return;
  }
  std::vector<std::size_t> widths(rows.front().size(), 0);
  for (const auto& row : rows)
    for (std::size_t column = 0; column < row.size(); ++column)
      widths[column] = std::max(widths[column], code_points(row[column]));
  std::size_t used = 0;
  for (const std::size_t width : widths)
    used += width + kGap.size();
  const bool text_in_row = style.columns >= used + kMinTextWidth;
  for (std::size_t index = 0; index < rows.size(); ++index) {
    std::string line;
    for (std::size_t column = 0; column < rows[index].size(); ++column) {
      const bool last = column + 1 == rows[index].size() && !text_in_row;
      line += last ? rows[index][column] : padded(rows[index][column], widths[column]) + "  ";
    }
    if (text_in_row) {
      line += index == 0 ? texts[index] : first_line(texts[index], style.columns - used);
    }
    line.erase(line.find_last_not_of(' ') + 1);
    out << line << '\n';
    if (!text_in_row && index > 0) {
      const std::size_t room = style.columns > kIndent.size() ? style.columns - kIndent.size() : 1;
      out << kIndent << first_line(texts[index], room) << '\n';
    }
  }
}

void print_search_hits(const json& results, const TerminalStyle& style, std::ostream& out) {
  bool first = true;
  if (!results.is_array()) return;
  for (const json& hit : results) {
    if (!hit.is_object()) continue;
    if (!first) out << '\n';
    first = false;
    std::string line;
    if (member(hit, "note_id").is_string()) {
      line = printable(string_of(hit, "note_id"));
    } else {
      line =
          "conversation of loop " + cell(hit, "loop_id") + ", iteration " + cell(hit, "iteration");
    }
    line += "  score " + format_score(member(hit, "score"));
    line += "  " + cell(hit, "source");
    if (member(hit, "scope").is_string()) line += "  scope " + cell(hit, "scope");
    line += "  updated " + format_note_time(member(hit, "updated_at"));
    out << line << '\n';
    const json& snippet = member(hit, "snippet");
    const json& text = member(hit, "text");
    const std::string shown =
        snippet.is_string() && snippet.get_ref<const std::string&>().find_first_not_of(" \t\r\n") !=
                                   std::string::npos
            ? snippet.get<std::string>()
            : (text.is_string() ? text.get<std::string>() : "-");
    print_indented(render_matches(shown, style.bold), out);
  }
}

void print_note(const json& note, std::ostream& out) {
  out << "note:     " << cell(note, "note_id") << '\n';
  out << "scope:    " << cell(note, "scope") << '\n';
  const json& repo = member(note, "repo");
  out << "repo:     " << (repo.is_null() ? "(user)" : cell(note, "repo")) << '\n';
  std::string tags;
  const json& list = member(note, "tags");
  if (list.is_array()) {
    for (const json& tag : list)
      tags += (tags.empty() ? "" : ", ") +
              (tag.is_string() ? printable(tag.get<std::string>()) : compact_json(tag));
  }
  out << "tags:     " << (tags.empty() ? "-" : tags) << '\n';
  out << "source:   " << cell(note, "source") << '\n';
  out << "created:  " << format_note_time(member(note, "created_at")) << '\n';
  out << "updated:  " << format_note_time(member(note, "updated_at")) << '\n';
  out << '\n';
  const std::string text = text_of(note);
  out << printable_lines(text);
  if (text.empty() || text.back() != '\n') out << '\n';
}

}  // namespace loopr::client
