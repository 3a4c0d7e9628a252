// The shape every tool input schema must have, so that one small validator
// (the ToolRouter's, DESIGN §6) and every LLM API accept it.
#pragma once

#include <nlohmann/json.hpp>
#include <optional>
#include <string>
#include <string_view>

namespace loopr::config {

// The JSON Schema keywords tool schemas may use; the argument validator
// implements exactly these.
inline constexpr std::string_view kSchemaKeywords[] = {
    "type",     "properties",  "required",  "additionalProperties",
    "items",    "enum",        "minimum",   "maximum",
    "minItems", "maxItems",    "minLength", "maxLength",
    "pattern",  "description", "default",   "oneOf"};

// Returns nullopt when `schema` is a valid tool input schema, else the first
// problem, prefixed with its JSON pointer ("/properties/path: ...").
// Rules: the root is {"type": "object"} without a root-level "oneOf" (the
// Anthropic API refuses one there); only kSchemaKeywords appear; every schema
// of type "object" says "additionalProperties": false (a misspelt argument is
// refused, not ignored); every name in "required" is in "properties".
std::optional<std::string> check_tool_schema(const nlohmann::json& schema);

}  // namespace loopr::config
