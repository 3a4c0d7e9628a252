// Internal to loopr_proto: typed field extraction from an untrusted JSON
// object, shared by the runner and control message parsers. Not a public API.
//
// A FieldReader remembers the first problem it meets and returns neutral
// values afterwards, so a parser reads every field in a row and checks ok()
// once. Errors are errc::protocol and name the context (message type or
// method) and the field, e.g. "runner message 'job': field 'timeout_ms' must
// be an integer in [0, 9007199254740991]". Never throws.
#pragma once

#include <cstdint>
#include <map>
#include <nlohmann/json.hpp>
#include <optional>
#include <string>
#include <vector>

#include "common/error.hpp"

namespace loopr::proto::detail {

// Largest integer every JSON implementation represents exactly (2^53 - 1).
inline constexpr std::uint64_t kMaxSafeInteger = (std::uint64_t{1} << 53) - 1;

class FieldReader {
 public:
  // `object` must outlive the reader. `context` prefixes every message;
  // `details` (an object or null) is copied into the Error's details, to which
  // {"field": name} is added.
  FieldReader(const nlohmann::json& object, std::string context, nlohmann::json details = nullptr);

  bool ok() const { return !error_.has_value(); }
  Error take_error() { return std::move(*error_); }
  void fail(const std::string& field, const std::string& problem);

  bool has(const char* key) const;  // present and not null

  std::string text(const char* key, std::size_t max_bytes = SIZE_MAX);
  std::optional<std::string> optional_text(const char* key, std::size_t max_bytes = SIZE_MAX);
  // Non-empty text of at most `max_bytes`.
  std::string identifier(const char* key, std::size_t max_bytes);
  std::uint64_t unsigned_integer(const char* key, std::uint64_t max = kMaxSafeInteger);
  std::optional<std::uint64_t> optional_unsigned(const char* key,
                                                 std::uint64_t max = kMaxSafeInteger);
  std::int64_t signed_integer(const char* key, std::int64_t min, std::int64_t max);
  std::optional<std::int64_t> optional_signed(const char* key, std::int64_t min, std::int64_t max);
  bool boolean(const char* key);
  // A JSON object; when `required` is false an absent field yields {}.
  nlohmann::json object(const char* key, bool required = true);
  std::map<std::string, std::string> string_map(const char* key, bool required = true);
  std::vector<std::string> string_list(const char* key, bool required = true);
  // Bytes written by put_bytes: "<key>" (text) or "<key>_b64" (base64).
  std::string bytes(const char* key);

 private:
  const nlohmann::json* find(const char* key) const;
  const nlohmann::json* require(const char* key);

  const nlohmann::json& object_;
  std::string context_;
  nlohmann::json details_;
  std::optional<Error> error_;
};

// Writes `bytes` as "<key>" when it is valid UTF-8, else as base64 in
// "<key>_b64", so arbitrary bytes survive a strict UTF-8 JSON encoder.
void put_bytes(nlohmann::json& out, const std::string& key, const std::string& bytes);

// Reads an int64 from a JSON integer (signed or unsigned storage); nullopt for
// anything else, including floats and integers beyond int64.
std::optional<std::int64_t> as_int64(const nlohmann::json& value);

}  // namespace loopr::proto::detail
