// JsonSchema: the ToolRouter's check of a tool call's arguments against the
// tool's input schema (DESIGN §6 step 2). A small validator of our own with
// draft-7 semantics, checked against the official JSON-Schema-Test-Suite
// (tests/daemon/json_schema_suite_test.cpp).
//
// Supported keywords:
//   type (a name or a list; "integer" accepts 1.0), enum, const;
//   properties, required, additionalProperties, patternProperties,
//   propertyNames, dependencies, minProperties, maxProperties;
//   items (a schema or a list), additionalItems, contains, minItems, maxItems,
//   uniqueItems; minimum, maximum, exclusiveMinimum, exclusiveMaximum (the
//   numeric form of draft 6+), multipleOf; minLength, maxLength (in Unicode
//   code points), pattern; allOf, anyOf, oneOf, not, if/then/else;
//   definitions and $ref to a location in the same schema ("#",
//   "#/definitions/name", any "#/json/pointer" to a subschema; keywords beside
//   a $ref are ignored, as draft 7 says); boolean schemas.
// Annotations, accepted and not checked: title, description, default,
// examples, $comment, readOnly, writeOnly, contentMediaType, contentEncoding,
// $schema, $id at the root only, and format (an annotation in draft 7: loopr
// never asserts formats).
// Refused by compile() rather than silently passing: any other keyword (a
// misspelt one would otherwise weaken the check), $ref to another document or
// to a plain-name fragment, $id below the root (base-URI changes), and
// subschemas that refer to themselves without descending into the value.
//
// Numbers compare exactly across int64, uint64 and double. multipleOf is
// exact for integers; for other numbers the quotient must be within a relative
// 1e-12 of an integer (binary doubles cannot hold most decimal fractions).
// pattern is ECMA-262-ish: PCRE2 in UTF mode, unanchored, `$` only at the very
// end, `.` matching neither CR nor LF, \uHHHH escapes, \d and \w ASCII-only as
// in ECMA-262; unlike ECMA-262, \s matches ASCII whitespace only. A pattern
// that exhausts PCRE2's match limit fails validation with a message saying
// so; it never hangs.
//
// Cost: compile() does all the work that does not depend on the value
// (regexes compiled and JIT-compiled, $ref resolved to nodes, property lists
// sorted). validate() on a valid value allocates nothing, except a copy of
// each member name when the schema uses propertyNames.
//
// Thread safety: a JsonSchema is immutable once compiled; validate() may run
// on any number of threads at once. Copies share the compiled form.
#pragma once

#include <cstddef>
#include <memory>
#include <nlohmann/json.hpp>

#include "common/error.hpp"

namespace loopr::daemon {

namespace json_schema_detail {
struct CompiledSchema;
}

class JsonSchema {
 public:
  // At most this many problems are reported by one validate().
  static constexpr std::size_t kMaxReportedErrors = 5;
  // validate() refuses values nested deeper than this below the schemas that
  // inspect them (it bounds the stack a recursive $ref can take).
  static constexpr int kMaxEvaluationDepth = 256;

  // Checks the schema itself: an unsupported keyword or a malformed value is
  // an errc::invalid_arguments Error whose message starts with the JSON
  // pointer of the schema object and names the keyword ("/properties/path:
  // 'minLength' must be a non-negative integer, got -1"); details =
  // {"pointer", "keyword"}. Tools' schemas come from catalog.toml, so this
  // runs at catalog load and reload.
  static Result<JsonSchema> compile(const nlohmann::json& schema);

  // Ok, or an errc::invalid_arguments Error written for the model: the
  // message names each problem's field by path ("edits[1].old_string:
  // expected a string, got a number", "missing required field 'path'",
  // "unknown field 'pth' (allowed: limit, offset, path)"), several joined by
  // "; "; the hint says how to fix; details = {"errors": [{"path":
  // "/edits/1/old_string", "message": ...}, ...], "truncated"?: true} with at
  // most kMaxReportedErrors entries. Long names and values are shortened in
  // messages.
  Result<void> validate(const nlohmann::json& instance) const;

 private:
  explicit JsonSchema(std::shared_ptr<const json_schema_detail::CompiledSchema> compiled);

  std::shared_ptr<const json_schema_detail::CompiledSchema> compiled_;  // never null
};

}  // namespace loopr::daemon
