#include "config/schema_check.hpp"

#include <algorithm>
#include <iterator>
#include <set>

namespace loopr::config {

namespace {

using Json = nlohmann::json;
using Problem = std::optional<std::string>;

Problem at(const std::string& pointer, const std::string& message) {
  return (pointer.empty() ? std::string("/") : pointer) + ": " + message;
}

bool is_non_negative_integer(const Json& v) {
  return v.is_number_integer() && (v.is_number_unsigned() || v.get<std::int64_t>() >= 0);
}

Problem check(const Json& schema, const std::string& pointer, bool root) {
  if (!schema.is_object()) return at(pointer, "a schema must be a JSON object");
  for (const auto& [keyword, value] : schema.items()) {
    if (std::find(std::begin(kSchemaKeywords), std::end(kSchemaKeywords), keyword) ==
        std::end(kSchemaKeywords)) {
      std::string known;
      for (const auto k : kSchemaKeywords)
        known += (known.empty() ? "" : ", ") + std::string(k);
      return at(pointer, "unsupported keyword '" + keyword + "'; supported: " + known);
    }
  }

  std::string type;
  if (schema.contains("type")) {
    static const std::set<std::string> types = {"object", "array",   "string", "integer",
                                                "number", "boolean", "null"};
    if (!schema["type"].is_string() || types.count(schema["type"].get<std::string>()) == 0) {
      return at(pointer + "/type",
                "must be one of object, array, string, integer, number, boolean, null");
    }
    type = schema["type"].get<std::string>();
  }
  if (root) {
    if (type != "object") return at(pointer, "the root schema must have \"type\": \"object\"");
    if (schema.contains("oneOf")) {
      return at(pointer + "/oneOf",
                "not allowed at the root (LLM APIs refuse it); describe the alternatives in "
                "\"description\" instead");
    }
  }

  if (type == "object" || schema.contains("properties") || schema.contains("required")) {
    if (!schema.contains("additionalProperties") || schema["additionalProperties"] != false) {
      return at(pointer, "an object schema must say \"additionalProperties\": false");
    }
  }
  if (schema.contains("additionalProperties") && !schema["additionalProperties"].is_boolean()) {
    return at(pointer + "/additionalProperties", "must be false");
  }
  if (schema.contains("properties")) {
    const Json& properties = schema["properties"];
    if (!properties.is_object()) return at(pointer + "/properties", "must be an object");
    for (const auto& [name, sub] : properties.items()) {
      if (auto problem = check(sub, pointer + "/properties/" + name, false)) return problem;
    }
  }
  if (schema.contains("required")) {
    const Json& required = schema["required"];
    if (!required.is_array()) return at(pointer + "/required", "must be an array of names");
    std::set<std::string> seen;
    for (const auto& name : required) {
      if (!name.is_string()) return at(pointer + "/required", "must be an array of names");
      const auto text = name.get<std::string>();
      if (!seen.insert(text).second) {
        return at(pointer + "/required", "names '" + text + "' twice");
      }
      if (!schema.contains("properties") || !schema["properties"].contains(text)) {
        return at(pointer + "/required", "'" + text + "' is required but not in \"properties\"");
      }
    }
  }
  if (schema.contains("items")) {
    if (auto problem = check(schema["items"], pointer + "/items", false)) return problem;
  }
  if (schema.contains("enum") && (!schema["enum"].is_array() || schema["enum"].empty())) {
    return at(pointer + "/enum", "must be a non-empty array");
  }
  for (const char* keyword : {"minimum", "maximum"}) {
    if (schema.contains(keyword) && !schema[keyword].is_number()) {
      return at(pointer + "/" + keyword, "must be a number");
    }
  }
  for (const char* keyword : {"minItems", "maxItems", "minLength"}) {
    if (schema.contains(keyword) && !is_non_negative_integer(schema[keyword])) {
      return at(pointer + "/" + keyword, "must be a non-negative integer");
    }
  }
  if (schema.contains("description") && !schema["description"].is_string()) {
    return at(pointer + "/description", "must be a string");
  }
  if (schema.contains("oneOf")) {
    const Json& alternatives = schema["oneOf"];
    if (!alternatives.is_array() || alternatives.empty()) {
      return at(pointer + "/oneOf", "must be a non-empty array of schemas");
    }
    for (std::size_t i = 0; i < alternatives.size(); ++i) {
      if (auto problem = check(alternatives[i], pointer + "/oneOf/" + std::to_string(i), false)) {
        return problem;
      }
    }
  }
  return std::nullopt;
}

}  // namespace

std::optional<std::string> check_tool_schema(const nlohmann::json& schema) {
  return check(schema, "", true);
}

}  // namespace loopr::config
