// Terminal rendering of values looprd sent. Everything here accepts any JSON
// (a daemon's reply is untrusted): a missing or mistyped field renders as "-"
// instead of failing, and control characters are escaped so a string cannot
// drive the terminal. Pure functions and a small table; thread-compatible.
#pragma once

#include <cstddef>
#include <iosfwd>
#include <nlohmann/json.hpp>
#include <string>
#include <string_view>
#include <vector>

namespace loopr::client {

// `text` with C0 controls, DEL and C1 controls written as \xNN (tab as a
// space); invalid UTF-8 replaced with U+FFFD.
std::string printable(std::string_view text);
// printable() line by line: newlines are kept (multi-line messages such as
// edit_file's nearest-match report), every other control byte escaped.
std::string printable_lines(std::string_view text);

// A one-line rendering of object[key]: strings as printable text, integers
// and other numbers as written, booleans as yes/no, arrays and objects as
// compact JSON; "-" when absent or null or when `object` is not an object.
std::string cell(const nlohmann::json& object, std::string_view key);

// Milliseconds as "250 ms", "1.5 s", "10 s", "2 min", "1 h 5 min"; "-" when
// `ms` is not a non-negative number.
std::string format_duration_ms(const nlohmann::json& ms);
// Bytes as "512 B", "4.0 KiB", "12.3 MiB"; "-" when not a non-negative number.
std::string format_bytes(const nlohmann::json& bytes);

// Code points of UTF-8 text (continuation bytes not counted), and the prefix
// of `text` holding at most `limit` of them.
std::size_t code_points(std::string_view text);
std::string_view first_code_points(std::string_view text, std::size_t limit);

// Indented JSON (2 spaces); invalid UTF-8 in strings replaced.
std::string pretty_json(const nlohmann::json& value);
// One-line JSON; invalid UTF-8 in strings replaced.
std::string compact_json(const nlohmann::json& value);

// Left-aligned columns separated by two spaces; the first row is the header.
// Cells wider than kMaxCellWidth code points are cut with "..."; a row ends
// without trailing blanks.
class TextTable {
 public:
  static constexpr std::size_t kMaxCellWidth = 60;

  explicit TextTable(std::vector<std::string> header);
  void add_row(std::vector<std::string> row);
  std::size_t rows() const { return rows_.size() - 1; }
  void print(std::ostream& out) const;

 private:
  std::vector<std::vector<std::string>> rows_;
};

}  // namespace loopr::client
