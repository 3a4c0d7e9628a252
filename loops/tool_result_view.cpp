#include "loops/tool_result_view.hpp"

#include <algorithm>
#include <cstdio>
#include <string_view>

#include "common/json_text.hpp"
#include "common/utf8.hpp"

namespace loopr::loops {
namespace {

using nlohmann::json;

std::string dump(const json& value) {
  return value.dump(-1, ' ', false, json::error_handler_t::replace);
}

// Fields a model has no use for: hashes, and base64 copies of bytes the
// text fields already carry (lossily).
bool hidden_field(const std::string& key) {
  return key == "content_hash" || key.ends_with("_base64") || key == "sha256";
}

json without_hidden(const json& value) {
  if (value.is_object()) {
    json out = json::object();
    for (auto it = value.begin(); it != value.end(); ++it)
      if (!hidden_field(it.key())) out[it.key()] = without_hidden(it.value());
    return out;
  }
  if (value.is_array()) {
    json out = json::array();
    for (const json& item : value)
      out.push_back(without_hidden(item));
    return out;
  }
  return value;
}

std::string seconds_text(std::int64_t ms) {
  char buffer[32];
  if (ms < 1000) {
    std::snprintf(buffer, sizeof buffer, "%lld ms", static_cast<long long>(ms));
  } else {
    std::snprintf(buffer, sizeof buffer, "%.1f s", static_cast<double>(ms) / 1000.0);
  }
  return buffer;
}

void add_line(std::string& out, const std::string& text) {
  if (text.empty()) return;
  out += text;
  if (out.back() != '\n') out += '\n';
}

std::string number_text(std::size_t n) {
  const std::string digits = std::to_string(n);
  std::string out;
  for (std::size_t i = 0; i < digits.size(); ++i) {
    if (i > 0 && (digits.size() - i) % 3 == 0) out += ',';
    out += digits[i];
  }
  return out;
}

std::string command_view(const json& output) {
  std::string out;
  const json exit_code = output.value("exit_code", json());
  out += exit_code.is_number_integer() ? "exit code " + std::to_string(exit_code.get<int>())
                                       : std::string("no exit code");
  if (output.contains("duration_ms") && output["duration_ms"].is_number_integer()) {
    out += " · " + seconds_text(output["duration_ms"].get<std::int64_t>());
  }
  if (output.value("timed_out", false)) out += " · timed out";
  if (output.value("interrupted", false)) out += " · interrupted";
  if (const std::string signal = text_member(output, "signal"); !signal.empty()) {
    out += " · killed by " + signal;
  } else if (output.contains("signal") && output["signal"].is_number_integer()) {
    out += " · killed by signal " + std::to_string(output["signal"].get<int>());
  }
  if (output.value("truncated", false)) {
    const json printed = output.value("output_bytes", json());
    out += printed.is_number_unsigned() || printed.is_number_integer()
               ? " · " + number_text(printed.get<std::size_t>()) +
                     " bytes printed, of which the tool kept the head and tail"
               : std::string(" · the tool kept only the head and tail");
  }
  out += '\n';
  for (const char* note : {"hint", "sandbox_note", "disk_note"}) {
    if (const std::string text = text_member(output, note); !text.empty())
      add_line(out, "note: " + text);
  }
  // A loopr limit that stopped the command (the output cap shows above),
  // and each connection the egress proxy refused, with the key to allow it.
  if (const json limit = output.value("limit", json());
      limit.is_object() && text_member(limit, "name") != "output") {
    add_line(out, "limit: " + text_member(limit, "message"));
  }
  for (const json& refused : output.value("egress_refused", json::array())) {
    if (refused.is_object()) add_line(out, "note: " + text_member(refused, "message"));
  }
  if (output.contains("output") && output["output"].is_string()) {
    const std::string merged = output["output"].get<std::string>();
    out += merged.empty() ? "(no output)\n" : merged;
  } else {
    const std::string stdout_text = text_member(output, "stdout");
    const std::string stderr_text = text_member(output, "stderr");
    if (stdout_text.empty() && stderr_text.empty()) out += "(no output)\n";
    out += stdout_text;
    if (!stderr_text.empty()) {
      if (!out.empty() && out.back() != '\n') out += '\n';
      out += "--- stderr ---\n" + stderr_text;
    }
  }
  if (!out.empty() && out.back() != '\n') out += '\n';
  return out;
}

std::string read_file_view(const json& output) {
  std::string out = text_member(output, "path");
  const std::int64_t start = output.value("start_line", std::int64_t{1});
  const std::int64_t returned = output.value("lines_returned", std::int64_t{0});
  if (returned > 0) {
    out += " · lines " + std::to_string(start) + "-" + std::to_string(start + returned - 1);
  } else {
    out += " · no lines";
  }
  if (output.contains("total_lines") && output["total_lines"].is_number_integer()) {
    out += " of " + std::to_string(output["total_lines"].get<std::int64_t>());
  }
  if (output.value("line_endings", "") == "crlf") out += " · CRLF line endings";
  if (output.value("invalid_utf8", false)) out += " · invalid UTF-8 shown as U+FFFD";
  if (const auto cut = output.value("lines_cut", 0); cut > 0) {
    out += " · " + std::to_string(cut) + " long lines cut at 2000 characters";
  }
  out += '\n';
  if (const std::string note = text_member(output, "note"); !note.empty())
    add_line(out, "note: " + note);
  if (const std::string hint = text_member(output, "hint"); !hint.empty())
    add_line(out, "note: " + hint);
  out += text_member(output, "content");
  if (!out.empty() && out.back() != '\n') out += '\n';
  if (output.value("more", false) && output.contains("next_offset")) {
    out += "[more lines: read_file with offset " + dump(output["next_offset"]) + "]\n";
  }
  return out;
}

std::string listing_footer(const json& output) {
  std::string out;
  if (output.value("truncated", false)) out += "[truncated]\n";
  if (const std::string hint = text_member(output, "hint"); !hint.empty())
    add_line(out, "note: " + hint);
  return out;
}

std::string list_directory_view(const json& output) {
  std::string out;
  const json entries = output.value("entries", json::array());
  out += text_member(output, "path").empty() ? std::string(".") : text_member(output, "path");
  out += ": " + std::to_string(entries.size()) + " entries";
  if (output.contains("ignored") && output["ignored"].is_number_integer() &&
      output["ignored"].get<std::int64_t>() > 0) {
    out += " (" + std::to_string(output["ignored"].get<std::int64_t>()) +
           " ignored by .gitignore not listed)";
  }
  out += '\n';
  for (const json& entry : entries) {
    std::string line = text_member(entry, "path");
    if (entry.value("is_dir", false)) line += '/';
    if (entry.value("is_symlink", false)) line += " (symlink)";
    out += line + '\n';
  }
  return out + listing_footer(output);
}

std::string glob_view(const json& output) {
  std::string out;
  const json matches = output.value("matches", json::array());
  out += std::to_string(output.value("count", static_cast<std::int64_t>(matches.size()))) +
         " matches, newest first\n";
  for (const json& match : matches)
    if (match.is_string()) out += match.get<std::string>() + '\n';
  return out + listing_footer(output);
}

std::string grep_view(const json& output) {
  std::string out;
  const std::string mode = output.value("mode", "content");
  out += std::to_string(output.value("files_matched", std::int64_t{0})) + " files matched";
  if (output.contains("match_count")) {
    out += ", " + dump(output["match_count"]) + " matching lines";
  }
  out += '\n';
  if (mode == "files") {
    for (const json& file : output.value("files", json::array()))
      if (file.is_string()) out += file.get<std::string>() + '\n';
  } else if (mode == "count") {
    for (const json& count : output.value("counts", json::array()))
      out += text_member(count, "path") + ":" + dump(count.value("count", json(0))) + '\n';
  } else {
    out += text_member(output, "content");
    if (!out.empty() && out.back() != '\n') out += '\n';
  }
  return out + listing_footer(output);
}

// The start of a UTF-8 sequence at or after `at`.
std::size_t sequence_start(std::string_view text, std::size_t at) {
  while (at < text.size() && (static_cast<unsigned char>(text[at]) & 0xC0) == 0x80)
    ++at;
  return at;
}

// The longest prefix of whole lines of `text` within `budget` bytes (at
// least one line's UTF-8-safe prefix when the first line is longer).
std::size_t whole_lines_within(std::string_view text, std::size_t budget) {
  if (text.size() <= budget) return text.size();
  const std::size_t newline = text.rfind('\n', budget == 0 ? 0 : budget - 1);
  if (newline != std::string_view::npos && newline + 1 <= budget) return newline + 1;
  return utf8_safe_prefix(text, budget);
}

// read_file: the header, then whole numbered lines from the top; the next
// offset is the number of the first line not shown.
CappedView capped_read_file(const json& output, std::string whole, std::size_t cap) {
  CappedView view{std::move(whole), false, 0, {}};
  view.whole_bytes = view.text.size();
  if (cap == 0 || view.text.size() <= cap) return view;
  const std::string content = text_member(output, "content");
  const std::size_t content_at = view.text.find(content);
  const std::size_t header = content_at == std::string::npos ? 0 : content_at;
  const std::size_t budget = cap > header + 200 ? cap - header - 200 : 0;
  const std::size_t kept = whole_lines_within(content, budget);
  std::string text = view.text.substr(0, header) + content.substr(0, kept);
  if (!text.empty() && text.back() != '\n') text += '\n';
  // The first line not shown: its number is the "%6d|" prefix.
  std::int64_t next = 0;
  if (kept < content.size()) {
    const std::string_view rest(content.data() + kept, content.size() - kept);
    const std::size_t bar = rest.find('|');
    if (bar != std::string_view::npos && bar <= 12) {
      next = std::strtoll(std::string(rest.substr(0, bar)).c_str(), nullptr, 10);
    }
  }
  const std::size_t lines_shown = static_cast<std::size_t>(
      std::count(content.begin(), content.begin() + static_cast<std::ptrdiff_t>(kept), '\n'));
  text += "[this page was cut to " + std::to_string(lines_shown) +
          " lines to fit the conversation's limit of " + number_text(cap) + " bytes per result";
  text += next > 0 ? "; read on with read_file offset " + std::to_string(next) +
                         " (a smaller limit shows fewer lines at once)]\n"
                   : "]\n";
  view.whole = std::move(view.text);
  view.text = std::move(text);
  view.cut = true;
  return view;
}

// Listings: whole lines from the top.
CappedView capped_listing(std::string whole, const std::string& call_id, std::size_t cap) {
  CappedView view{std::move(whole), false, 0, {}};
  view.whole_bytes = view.text.size();
  if (cap == 0 || view.text.size() <= cap) return view;
  const std::size_t budget = cap > 300 ? cap - 300 : cap / 2;
  const std::size_t kept = whole_lines_within(view.text, budget);
  const std::size_t left_lines = static_cast<std::size_t>(
      std::count(view.text.begin() + static_cast<std::ptrdiff_t>(kept), view.text.end(), '\n'));
  std::string text = view.text.substr(0, kept);
  if (!text.empty() && text.back() != '\n') text += '\n';
  text += "[" + number_text(left_lines) + " more lines not shown (the conversation's limit is " +
          number_text(cap) +
          " bytes per result): narrow the path or pattern, or read on with read_output "
          "{\"call_id\": \"" +
          call_id + "\", \"offset\": " + std::to_string(kept) + "}]\n";
  view.whole = std::move(view.text);
  view.text = std::move(text);
  view.cut = true;
  return view;
}

// Everything else: head and tail around a marker.
CappedView capped_head_and_tail(std::string whole, const std::string& call_id, std::size_t cap) {
  CappedView view{std::move(whole), false, 0, {}};
  view.whole_bytes = view.text.size();
  if (cap == 0 || view.text.size() <= cap) return view;
  const std::string_view text = view.text;
  // Failures show at the end of most outputs (a test summary, the last
  // compiler error), the command and its first errors at the start.
  const std::size_t budget = cap > 400 ? cap - 400 : cap / 2;
  const std::size_t head = whole_lines_within(text, budget * 2 / 5);
  std::size_t tail_from = text.size() - (budget - head);
  // Start the tail at a line's start when one is near, else at a whole
  // UTF-8 sequence.
  const std::size_t newline = text.find('\n', tail_from);
  if (newline != std::string_view::npos && newline + 1 < text.size() && newline - tail_from < 200) {
    tail_from = newline + 1;
  } else {
    tail_from = sequence_start(text, tail_from);
  }
  const std::size_t cut_bytes = tail_from - head;
  const std::size_t cut_lines = static_cast<std::size_t>(
      std::count(text.begin() + static_cast<std::ptrdiff_t>(head),
                 text.begin() + static_cast<std::ptrdiff_t>(tail_from), '\n'));
  std::string out(text.substr(0, head));
  if (!out.empty() && out.back() != '\n') out += '\n';
  out += "[... " + number_text(cut_bytes) + " bytes (" + number_text(cut_lines) +
         " lines) cut here to fit the conversation's limit of " + number_text(cap) +
         " bytes per result; read them with read_output {\"call_id\": \"" + call_id +
         "\", \"offset\": " + std::to_string(head) + "} ...]\n";
  out += text.substr(tail_from);
  view.whole = std::move(view.text);
  view.text = std::move(out);
  view.cut = true;
  return view;
}

// The view without the hooks' notes.
std::string result_view(config::ResultView view, const json& outcome) {
  using config::ResultView;
  if (!outcome.value("ok", false)) {
    json error = outcome.contains("error") ? outcome["error"] : json::object();
    if (error.is_object()) error = without_hidden(error);
    return dump(json{{"error", error}});
  }
  const json output = outcome.contains("output") ? outcome["output"] : json();
  if (output.is_string()) return output.get<std::string>();
  if (!output.is_object()) return dump(output);
  if (view == ResultView::command) return command_view(output);
  if (view == ResultView::file && output.contains("content")) return read_file_view(output);
  if (view == ResultView::directory && output.contains("entries"))
    return list_directory_view(output);
  if (view == ResultView::paths && output.contains("matches")) return glob_view(output);
  if (view == ResultView::grep && output.contains("mode")) return grep_view(output);
  return dump(without_hidden(output));
}

}  // namespace

std::string full_view(config::ResultView view, const json& outcome) {
  return result_view(view, outcome);
}

std::string hook_notes_text(const json& outcome) {
  std::string notes;
  if (const auto it = outcome.find("hook_notes"); it != outcome.end() && it->is_array()) {
    for (const json& note : *it) {
      if (note.is_string()) notes += "[hook: " + note.get<std::string>() + "]\n";
    }
  }
  return notes;
}

CappedView capped_view(config::ResultView view, const std::string& call_id, const json& outcome,
                       std::size_t cap) {
  // The hooks' notes first, outside the paged view, and out of its cap (each
  // note is at most 4,000 bytes).
  const std::string notes = hook_notes_text(outcome);
  if (!notes.empty()) {
    json without = outcome;
    without.erase("hook_notes");
    CappedView capped = capped_view(view, call_id, without, cap);
    capped.text = notes + capped.text;
    return capped;
  }
  using config::ResultView;
  std::string whole = full_view(view, outcome);
  const bool ok = outcome.value("ok", false);
  const json output = ok && outcome.contains("output") ? outcome["output"] : json();
  if (ok && view == ResultView::file && output.is_object() && output.contains("content")) {
    return capped_read_file(output, std::move(whole), cap);
  }
  if (ok &&
      (view == ResultView::directory || view == ResultView::paths || view == ResultView::grep) &&
      output.is_object()) {
    return capped_listing(std::move(whole), call_id, cap);
  }
  return capped_head_and_tail(std::move(whole), call_id, cap);
}

std::string view_page(const std::string& view, std::size_t offset, std::size_t limit) {
  if (offset >= view.size()) {
    return "[offset " + std::to_string(offset) + " is at or past the end: the whole output is " +
           number_text(view.size()) + " bytes]\n";
  }
  offset = sequence_start(view, offset);
  const std::string_view rest(view.data() + offset, view.size() - offset);
  const std::size_t budget = limit > 200 ? limit - 200 : limit;
  const std::size_t kept = whole_lines_within(rest, budget);
  std::string out(rest.substr(0, kept));
  if (!out.empty() && out.back() != '\n') out += '\n';
  const std::size_t next = offset + kept;
  if (next < view.size()) {
    out += "[bytes " + number_text(offset) + "-" + number_text(next) + " of " +
           number_text(view.size()) + "; read on with offset " + std::to_string(next) + "]\n";
  } else {
    out += "[end of output: " + number_text(view.size()) + " bytes]\n";
  }
  return out;
}

}  // namespace loopr::loops
