#include "config/toml_reader.hpp"

#include <algorithm>
#include <cerrno>
#include <cstring>
#include <fstream>
#include <sstream>
#include <tuple>

#include "common/error.hpp"

namespace loopr::config::detail {

namespace {

// toml11 starts its messages with "[error] " and underlines the spot on the
// following lines; both are kept (the underline shows the column).
std::string strip_error_prefix(std::string message) {
  constexpr std::string_view prefix = "[error] ";
  if (message.starts_with(prefix)) message.erase(0, prefix.size());
  return message;
}

std::string type_name(const toml::value& v) {
  std::ostringstream out;
  out << v.type();
  return out.str();
}

}  // namespace

toml::value parse_document(std::istream& in, const std::string& name) {
  try {
    return toml::parse(in, name);
  } catch (const toml::syntax_error& e) {
    throw ConfigError(name + ":" + std::to_string(e.location().line()) +
                      ": syntax error: " + strip_error_prefix(e.what()));
  } catch (const toml::exception& e) {
    throw ConfigError(name + ":" + std::to_string(e.location().line()) + ": " +
                      strip_error_prefix(e.what()));
  }
}

toml::value parse_document_file(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  if (!in) {
    const int err = errno;
    throw ConfigError(path + ": cannot open: " + std::strerror(err));
  }
  return parse_document(in, path);
}

std::uint32_t line_of(const toml::value& at) {
  return at.location().line();
}

std::string where(const toml::value& at) {
  return at.location().file_name() + ":" + std::to_string(line_of(at));
}

void fail(const toml::value& at, std::string_view key, std::string_view message) {
  std::string text = where(at);
  text += ": ";
  text += key;
  text += ": ";
  text += message;
  throw ConfigError(text);
}

std::string describe(const toml::value& v) {
  std::string rendered;
  switch (v.type()) {
    case toml::value_t::boolean:
      return std::string("a boolean (") + (v.as_boolean() ? "true" : "false") + ")";
    case toml::value_t::integer:
      return "an integer (" + std::to_string(v.as_integer()) + ")";
    case toml::value_t::floating: {
      std::ostringstream out;
      out << v.as_floating();
      return "a float (" + out.str() + ")";
    }
    case toml::value_t::string: {
      rendered = v.as_string().str;
      if (rendered.size() > 60) rendered = rendered.substr(0, 57) + "...";
      return "a string (\"" + rendered + "\")";
    }
    case toml::value_t::array:
      return "an array";
    case toml::value_t::table:
      return "a table";
    default:
      return "a " + type_name(v);
  }
}

std::string join(const std::vector<std::string>& items, std::string_view separator) {
  std::string out;
  for (const auto& item : items) {
    if (!out.empty()) out += separator;
    out += item;
  }
  return out;
}

std::string join(std::span<const std::string_view> items, std::string_view separator) {
  std::string out;
  for (const auto item : items) {
    if (!out.empty()) out += separator;
    out += item;
  }
  return out;
}

std::string join(std::initializer_list<std::string_view> items, std::string_view separator) {
  return join(std::span<const std::string_view>(items.begin(), items.size()), separator);
}

std::vector<Entry> entries(const toml::value& table) {
  std::vector<Entry> out;
  for (const auto& [key, value] : table.as_table())
    out.push_back(Entry{key, &value});
  std::sort(out.begin(), out.end(), [](const Entry& a, const Entry& b) {
    const auto la = a.value->location();
    const auto lb = b.value->location();
    return std::tuple(la.line(), la.column(), a.key) < std::tuple(lb.line(), lb.column(), b.key);
  });
  return out;
}

const toml::value& require_table(const toml::value& v, std::string_view key) {
  if (!v.is_table()) fail(v, key, "must be a table, got " + describe(v));
  return v;
}

void refuse_unknown_keys(const toml::value& table, std::string_view key,
                         std::span<const std::string_view> allowed,
                         std::string_view unknown_message) {
  for (const auto& entry : entries(table)) {
    if (std::find(allowed.begin(), allowed.end(), entry.key) != allowed.end()) continue;
    fail(*entry.value, std::string(key) + "." + entry.key,
         unknown_message.empty() ? "unknown key; known keys are: " + join(allowed)
                                 : std::string(unknown_message));
  }
}

void refuse_unknown_keys(const toml::value& table, std::string_view key,
                         std::initializer_list<std::string_view> allowed) {
  refuse_unknown_keys(table, key,
                      std::span<const std::string_view>(allowed.begin(), allowed.size()));
}

std::string read_string(const toml::value& v, std::string_view key) {
  if (!v.is_string()) fail(v, key, "must be a string, got " + describe(v));
  return v.as_string().str;
}

std::int64_t read_integer(const toml::value& v, std::string_view key) {
  if (!v.is_integer()) fail(v, key, "must be an integer, got " + describe(v));
  return v.as_integer();
}

std::int64_t read_integer_in(const toml::value& v, std::string_view key, std::int64_t min,
                             std::int64_t max, std::string_view unit) {
  const std::string suffix = unit.empty() ? std::string() : " (" + std::string(unit) + ")";
  const std::string expected =
      min == 1   ? "must be a positive integer" + suffix
      : min == 0 ? "must be a non-negative integer" + suffix
                 : "must be an integer of at least " + std::to_string(min) + suffix;
  if (!v.is_integer()) fail(v, key, expected + ", got " + describe(v));
  const std::int64_t n = v.as_integer();
  if (n < min) fail(v, key, expected + ", got " + std::to_string(n));
  if (n > max) {
    fail(v, key, "must be at most " + std::to_string(max) + suffix + ", got " + std::to_string(n));
  }
  return n;
}

bool read_bool(const toml::value& v, std::string_view key) {
  if (!v.is_boolean()) fail(v, key, "must be true or false, got " + describe(v));
  return v.as_boolean();
}

std::vector<std::string> read_string_list(const toml::value& v, std::string_view key) {
  if (!v.is_array()) fail(v, key, "must be an array of strings, got " + describe(v));
  std::vector<std::string> out;
  std::size_t index = 0;
  for (const auto& item : v.as_array()) {
    if (!item.is_string()) {
      fail(item, std::string(key) + "[" + std::to_string(index) + "]",
           "must be a string, got " + describe(item));
    }
    out.push_back(item.as_string().str);
    ++index;
  }
  return out;
}

std::string read_choice(const toml::value& v, std::string_view key,
                        std::initializer_list<std::string_view> choices) {
  return read_choice(v, key, std::span<const std::string_view>(choices.begin(), choices.size()));
}

std::string read_choice(const toml::value& v, std::string_view key,
                        std::span<const std::string_view> choices) {
  if (!v.is_string()) fail(v, key, "must be one of " + join(choices) + ", got " + describe(v));
  const std::string s = v.as_string().str;
  if (std::find(choices.begin(), choices.end(), s) == choices.end()) {
    fail(v, key, "must be one of " + join(choices) + ", got \"" + s + "\"");
  }
  return s;
}

}  // namespace loopr::config::detail
