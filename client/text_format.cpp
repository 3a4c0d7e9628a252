#include "client/text_format.hpp"

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <optional>
#include <ostream>

#include "common/utf8.hpp"

namespace loopr::client {
namespace {

using nlohmann::json;

std::string fixed(double value, int decimals) {
  char buffer[64];
  std::snprintf(buffer, sizeof buffer, "%.*f", decimals, value);
  return buffer;
}

std::optional<double> non_negative(const json& value) {
  if (!value.is_number()) return std::nullopt;
  const double number = value.get<double>();
  if (!(number >= 0) || !std::isfinite(number)) return std::nullopt;
  return number;
}

}  // namespace

std::string printable(std::string_view text) {
  const std::string valid = is_valid_utf8(text) ? std::string(text) : to_lossy_utf8(text);
  std::string out;
  out.reserve(valid.size());
  for (std::size_t i = 0; i < valid.size(); ++i) {
    const auto byte = static_cast<unsigned char>(valid[i]);
    // C1 controls U+0080..U+009F are encoded as C2 80..C2 9F.
    const bool c1 = byte == 0xC2 && i + 1 < valid.size() &&
                    static_cast<unsigned char>(valid[i + 1]) >= 0x80 &&
                    static_cast<unsigned char>(valid[i + 1]) <= 0x9F;
    if (byte == '\t') {
      out += ' ';
    } else if (byte < 0x20 || byte == 0x7F || c1) {
      const unsigned code = c1 ? static_cast<unsigned char>(valid[++i]) : byte;
      char escaped[8];
      std::snprintf(escaped, sizeof escaped, "\\x%02x", code);
      out += escaped;
    } else {
      out += valid[i];
    }
  }
  return out;
}

std::string printable_lines(std::string_view text) {
  std::string out;
  std::size_t start = 0;
  for (;;) {
    const std::size_t end = text.find('\n', start);
    out += printable(text.substr(start, end == std::string_view::npos ? end : end - start));
    if (end == std::string_view::npos) return out;
    out += '\n';
    start = end + 1;
  }
}

std::string cell(const json& object, std::string_view key) {
  if (!object.is_object()) return "-";
  const auto it = object.find(key);
  if (it == object.end() || it->is_null()) return "-";
  if (it->is_string()) return printable(it->get_ref<const std::string&>());
  if (it->is_boolean()) return it->get<bool>() ? "yes" : "no";
  return printable(compact_json(*it));
}

std::string format_duration_ms(const json& ms) {
  const auto value = non_negative(ms);
  if (!value) return "-";
  const double v = *value;
  // One decimal at most, dropped when it is zero; a value that rounds up to
  // the next unit is shown in that unit ("1 min", not "60.0 s").
  const auto in_unit = [](double amount, const char* unit) {
    const double rounded = std::round(amount * 10) / 10;
    return fixed(rounded, rounded == std::floor(rounded) ? 0 : 1) + " " + unit;
  };
  if (v < 999.95) return in_unit(v, "ms");
  if (v < 59'950) return in_unit(v / 1000, "s");
  if (v < 3'597'000) return in_unit(v / 60'000, "min");
  const auto total_min = static_cast<long long>(std::round(v / 60'000));
  const long long hours = total_min / 60;
  const long long minutes = total_min % 60;
  return std::to_string(hours) + " h" + (minutes ? " " + std::to_string(minutes) + " min" : "");
}

std::string format_bytes(const json& bytes) {
  const auto value = non_negative(bytes);
  if (!value) return "-";
  double v = *value;
  if (v < 1024) return fixed(v, 0) + " B";
  const char* units[] = {"KiB", "MiB", "GiB", "TiB"};
  std::size_t unit = 0;
  v /= 1024;
  while (v >= 1024 && unit + 1 < std::size(units)) {
    v /= 1024;
    ++unit;
  }
  return fixed(v, 1) + " " + units[unit];
}

std::string pretty_json(const json& value) {
  return value.dump(2, ' ', false, json::error_handler_t::replace);
}

std::string compact_json(const json& value) {
  return value.dump(-1, ' ', false, json::error_handler_t::replace);
}

TextTable::TextTable(std::vector<std::string> header) {
  rows_.push_back(std::move(header));
}

void TextTable::add_row(std::vector<std::string> row) {
  for (std::string& text : row) {
    if (code_points(text) > kMaxCellWidth) {
      text = std::string(first_code_points(text, kMaxCellWidth - 3)) + "...";
    }
  }
  row.resize(rows_.front().size());
  rows_.push_back(std::move(row));
}

void TextTable::print(std::ostream& out) const {
  std::vector<std::size_t> widths(rows_.front().size(), 0);
  for (const auto& row : rows_) {
    for (std::size_t column = 0; column < row.size(); ++column) {
      widths[column] = std::max(widths[column], code_points(row[column]));
    }
  }
  for (const auto& row : rows_) {
    std::string line;
    for (std::size_t column = 0; column < row.size(); ++column) {
      line += row[column];
      if (column + 1 < row.size()) {
        line.append(widths[column] - code_points(row[column]) + 2, ' ');
      }
    }
    // Empty cells at the end of a row leave no trailing blanks.
    line.erase(line.find_last_not_of(' ') + 1);
    out << line << '\n';
  }
}

std::size_t code_points(std::string_view text) {
  return static_cast<std::size_t>(std::count_if(text.begin(), text.end(), [](char c) {
    return (static_cast<unsigned char>(c) & 0xC0) != 0x80;
  }));
}

std::string_view first_code_points(std::string_view text, std::size_t limit) {
  std::size_t seen = 0;
  for (std::size_t i = 0; i < text.size(); ++i) {
    if ((static_cast<unsigned char>(text[i]) & 0xC0) != 0x80) {
      if (seen == limit) return text.substr(0, i);
      ++seen;
    }
  }
  return text;
}

}  // namespace loopr::client
