#include "proto/json_fields.hpp"

#include <limits>
#include <utility>

#include "common/utf8.hpp"
#include "proto/base64.hpp"

namespace loopr::proto::detail {

FieldReader::FieldReader(const nlohmann::json& object, std::string context, nlohmann::json details)
    : object_(object), context_(std::move(context)), details_(std::move(details)) {
  if (!object_.is_object())
    fail("", std::string("must be a JSON object, not ") + object_.type_name());
}

void FieldReader::fail(const std::string& field, const std::string& problem) {
  if (error_) return;
  std::string message = context_ + ": ";
  if (!field.empty()) message += "field '" + field + "' ";
  message += problem;
  Error error = make_error(errc::protocol, std::move(message));
  error.details = details_.is_object() ? details_ : nlohmann::json::object();
  if (!field.empty()) error.details["field"] = field;
  error_ = std::move(error);
}

const nlohmann::json* FieldReader::find(const char* key) const {
  if (!object_.is_object()) return nullptr;
  const auto it = object_.find(key);
  if (it == object_.end() || it->is_null()) return nullptr;
  return &*it;
}

bool FieldReader::has(const char* key) const {
  return find(key) != nullptr;
}

const nlohmann::json* FieldReader::require(const char* key) {
  if (!ok()) return nullptr;
  const nlohmann::json* value = find(key);
  if (value == nullptr) fail(key, "is missing");
  return value;
}

std::string FieldReader::text(const char* key, std::size_t max_bytes) {
  const nlohmann::json* value = require(key);
  if (value == nullptr) return {};
  if (!value->is_string()) {
    fail(key, std::string("must be a string, not ") + value->type_name());
    return {};
  }
  const auto& s = value->get_ref<const std::string&>();
  if (s.size() > max_bytes) {
    fail(key, "is longer than " + std::to_string(max_bytes) + " bytes");
    return {};
  }
  return s;
}

std::optional<std::string> FieldReader::optional_text(const char* key, std::size_t max_bytes) {
  if (!ok() || !has(key)) return std::nullopt;
  std::string value = text(key, max_bytes);
  if (!ok()) return std::nullopt;
  return value;
}

std::string FieldReader::identifier(const char* key, std::size_t max_bytes) {
  std::string value = text(key, max_bytes);
  if (ok() && value.empty()) fail(key, "must not be empty");
  return value;
}

std::optional<std::int64_t> as_int64(const nlohmann::json& value) {
  if (value.is_number_unsigned()) {
    const auto u = value.get<std::uint64_t>();
    if (u > static_cast<std::uint64_t>(std::numeric_limits<std::int64_t>::max())) {
      return std::nullopt;
    }
    return static_cast<std::int64_t>(u);
  }
  if (value.is_number_integer()) return value.get<std::int64_t>();
  return std::nullopt;
}

std::int64_t FieldReader::signed_integer(const char* key, std::int64_t min, std::int64_t max) {
  const nlohmann::json* value = require(key);
  if (value == nullptr) return 0;
  const auto n = as_int64(*value);
  if (!n || *n < min || *n > max) {
    fail(key, "must be an integer in [" + std::to_string(min) + ", " + std::to_string(max) + "]");
    return 0;
  }
  return *n;
}

std::optional<std::int64_t> FieldReader::optional_signed(const char* key, std::int64_t min,
                                                         std::int64_t max) {
  if (!ok() || !has(key)) return std::nullopt;
  const std::int64_t value = signed_integer(key, min, max);
  if (!ok()) return std::nullopt;
  return value;
}

std::uint64_t FieldReader::unsigned_integer(const char* key, std::uint64_t max) {
  const nlohmann::json* value = require(key);
  if (value == nullptr) return 0;
  if (!value->is_number_unsigned() || value->get<std::uint64_t>() > max) {
    fail(key, "must be an integer in [0, " + std::to_string(max) + "]");
    return 0;
  }
  return value->get<std::uint64_t>();
}

std::optional<std::uint64_t> FieldReader::optional_unsigned(const char* key, std::uint64_t max) {
  if (!ok() || !has(key)) return std::nullopt;
  const std::uint64_t value = unsigned_integer(key, max);
  if (!ok()) return std::nullopt;
  return value;
}

bool FieldReader::boolean(const char* key) {
  const nlohmann::json* value = require(key);
  if (value == nullptr) return false;
  if (!value->is_boolean()) {
    fail(key, std::string("must be a boolean, not ") + value->type_name());
    return false;
  }
  return value->get<bool>();
}

nlohmann::json FieldReader::object(const char* key, bool required) {
  if (!ok()) return nlohmann::json::object();
  if (!required && !has(key)) return nlohmann::json::object();
  const nlohmann::json* value = require(key);
  if (value == nullptr) return nlohmann::json::object();
  if (!value->is_object()) {
    fail(key, std::string("must be an object, not ") + value->type_name());
    return nlohmann::json::object();
  }
  return *value;
}

std::map<std::string, std::string> FieldReader::string_map(const char* key, bool required) {
  std::map<std::string, std::string> out;
  const nlohmann::json value = object(key, required);
  if (!ok()) return out;
  for (const auto& [name, entry] : value.items()) {
    if (!entry.is_string()) {
      fail(std::string(key) + "." + name,
           std::string("must be a string, not ") + entry.type_name());
      return {};
    }
    out.emplace(name, entry.get<std::string>());
  }
  return out;
}

std::vector<std::string> FieldReader::string_list(const char* key, bool required) {
  std::vector<std::string> out;
  if (!ok() || (!required && !has(key))) return out;
  const nlohmann::json* value = require(key);
  if (value == nullptr) return out;
  if (!value->is_array()) {
    fail(key, std::string("must be an array of strings, not ") + value->type_name());
    return out;
  }
  for (const auto& entry : *value) {
    if (!entry.is_string()) {
      fail(key, std::string("must hold only strings, not ") + entry.type_name());
      return {};
    }
    out.push_back(entry.get<std::string>());
  }
  return out;
}

std::string FieldReader::bytes(const char* key) {
  if (!ok()) return {};
  const std::string b64_key = std::string(key) + "_b64";
  const bool has_text = has(key);
  const bool has_b64 = has(b64_key.c_str());
  if (has_text && has_b64) {
    fail(key, "and '" + b64_key + "' are both present; send one");
    return {};
  }
  if (has_text) return text(key);
  if (!has_b64) {
    fail(key, "is missing (neither '" + std::string(key) + "' nor '" + b64_key + "')");
    return {};
  }
  const std::string encoded = text(b64_key.c_str());
  if (!ok()) return {};
  auto decoded = base64_decode(encoded);
  if (!decoded) {
    fail(b64_key, "is not valid base64 (" + decoded.error().message + ")");
    return {};
  }
  return std::move(decoded).value();
}

void put_bytes(nlohmann::json& out, const std::string& key, const std::string& bytes) {
  if (is_valid_utf8(bytes)) {
    out[key] = bytes;
  } else {
    out[key + "_b64"] = base64_encode(bytes);
  }
}

}  // namespace loopr::proto::detail
