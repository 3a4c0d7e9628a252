// Internal to config/: strict, location-aware reading of toml11 documents.
// Every function here either returns a value of the requested shape or throws
// loopr::ConfigError "FILE:LINE: KEY: MESSAGE", where FILE is the name the
// document was parsed under and LINE is where the offending value (or, for a
// missing key, its table) was written.
#pragma once

#include <cstdint>
#include <initializer_list>
#include <iosfwd>
#include <span>
#include <string>
#include <string_view>
#include <toml.hpp>
#include <vector>

namespace loopr::config::detail {

// Parses a whole document; a syntax error carries toml11's own message.
toml::value parse_document(std::istream& in, const std::string& name);
// Reads `path` from disk; an unreadable file is a ConfigError naming it.
toml::value parse_document_file(const std::string& path);

std::uint32_t line_of(const toml::value& at);
// "FILE:LINE"
std::string where(const toml::value& at);
[[noreturn]] void fail(const toml::value& at, std::string_view key, std::string_view message);

// "an integer (-5)", "a string (\"x\")": how a wrong value is reported back.
std::string describe(const toml::value& v);
std::string join(const std::vector<std::string>& items, std::string_view separator = ", ");
std::string join(std::span<const std::string_view> items, std::string_view separator = ", ");
std::string join(std::initializer_list<std::string_view> items, std::string_view separator = ", ");

struct Entry {
  std::string key;
  const toml::value* value;  // points into the document
};
// The entries of a table in the order they were written in the file.
std::vector<Entry> entries(const toml::value& table);

// `v` (found at dotted `key`) must be a table; returns it.
const toml::value& require_table(const toml::value& v, std::string_view key);
// Every key of `table` (at dotted `key`) must be in `allowed`; another is a
// ConfigError saying `unknown_message`, or by default that it is unknown and
// which keys are known.
void refuse_unknown_keys(const toml::value& table, std::string_view key,
                         std::span<const std::string_view> allowed,
                         std::string_view unknown_message = {});
void refuse_unknown_keys(const toml::value& table, std::string_view key,
                         std::initializer_list<std::string_view> allowed);

std::string read_string(const toml::value& v, std::string_view key);
std::int64_t read_integer(const toml::value& v, std::string_view key);
// An integer in [min, max]; `unit` ends the message ("milliseconds").
std::int64_t read_integer_in(const toml::value& v, std::string_view key, std::int64_t min,
                             std::int64_t max, std::string_view unit);
bool read_bool(const toml::value& v, std::string_view key);
std::vector<std::string> read_string_list(const toml::value& v, std::string_view key);
// A string that must be one of `choices`.
std::string read_choice(const toml::value& v, std::string_view key,
                        std::span<const std::string_view> choices);
std::string read_choice(const toml::value& v, std::string_view key,
                        std::initializer_list<std::string_view> choices);

}  // namespace loopr::config::detail
