// JsonSchema: what the model reads when its arguments are wrong, what a
// catalog author reads when a schema is wrong, and the limits that keep a
// hostile value or schema from hanging the daemon. The keyword semantics are
// checked against the official suite in json_schema_suite_test.cpp.
#include "daemon/json_schema.hpp"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <atomic>
#include <optional>
#include <stdexcept>
#include <string>
#include <thread>
#include <vector>

#include "config/catalog.hpp"

namespace loopr::daemon {
namespace {

using ::testing::HasSubstr;
using ::testing::StartsWith;
using Json = nlohmann::json;

JsonSchema schema_of(const Json& schema) {
  Result<JsonSchema> compiled = JsonSchema::compile(schema);
  if (!compiled) throw std::runtime_error("schema refused: " + compiled.error().message);
  return std::move(compiled).value();
}

JsonSchema schema_of(const char* text) {
  return schema_of(Json::parse(text));
}

JsonSchema builtin_tool_schema(std::string_view tool) {
  const config::Catalog catalog = config::Catalog::builtin();
  const config::ToolSpec* spec = catalog.find(tool);
  if (spec == nullptr) throw std::runtime_error("no built-in tool " + std::string(tool));
  return schema_of(spec->input_schema);
}

// The error validate() gives; a test failure if it accepts `value`.
Error refusal(const JsonSchema& schema, const Json& value) {
  Result<void> verdict = schema.validate(value);
  if (verdict.ok()) {
    ADD_FAILURE() << "accepted " << value.dump();
    return Error{};
  }
  EXPECT_EQ(verdict.error().code, errc::invalid_arguments);
  return std::move(verdict).error();
}

std::string message(const JsonSchema& schema, const Json& value) {
  return refusal(schema, value).message;
}

// compile()'s error; a test failure if it accepts `schema`.
Error compile_error(const char* schema) {
  Result<JsonSchema> compiled = JsonSchema::compile(Json::parse(schema));
  if (compiled.ok()) {
    ADD_FAILURE() << "compiled " << schema;
    return Error{};
  }
  EXPECT_EQ(compiled.error().code, errc::invalid_arguments);
  return std::move(compiled).error();
}

// --- Messages the model reads ----------------------------------------------

TEST(JsonSchemaMessages, NameANestedFieldByItsPath) {
  const JsonSchema edit_file = builtin_tool_schema("edit_file");
  const Error error = refusal(edit_file, Json::parse(R"({"path": "a.txt", "edits": [
      {"old_string": "x", "new_string": "y"}, {"old_string": 5, "new_string": "z"}]})"));
  EXPECT_EQ(error.message, "edits[1].old_string: expected a string, got a number");
  EXPECT_EQ(error.details, Json::parse(R"({"errors": [{"path": "/edits/1/old_string",
      "message": "edits[1].old_string: expected a string, got a number"}]})"));
  EXPECT_THAT(error.hint, HasSubstr("call the tool again"));
}

TEST(JsonSchemaMessages, NameAMissingRequiredField) {
  const JsonSchema read_file = builtin_tool_schema("read_file");
  const Error error = refusal(read_file, Json::object());
  EXPECT_EQ(error.message, "missing required field 'path'");
  EXPECT_EQ(error.details["errors"][0]["path"], "/path");
  EXPECT_EQ(error.hint, "add 'path', then call the tool again");

  const JsonSchema edit_file = builtin_tool_schema("edit_file");
  EXPECT_EQ(message(edit_file, Json::parse(R"({"path": "a", "edits": [{"old_string": "x"}]})")),
            "edits[0]: missing required field 'new_string'");
}

TEST(JsonSchemaMessages, NameAnUnknownFieldWithTheAllowedOnesAndTheLikelyMeant) {
  const JsonSchema read_file = builtin_tool_schema("read_file");
  const Error error = refusal(read_file, Json::parse(R"({"pth": "a.txt"})"));
  EXPECT_EQ(error.message,
            "unknown field 'pth' (allowed: limit, offset, path); missing required field 'path'");
  EXPECT_EQ(error.details["errors"][0]["path"], "/pth");
  EXPECT_EQ(error.hint, "rename 'pth' to 'path'; add 'path', then call the tool again");

  const JsonSchema build = builtin_tool_schema("build");
  const Error none = refusal(build, Json::parse(R"({"target": "all"})"));
  EXPECT_EQ(none.message, "unknown field 'target' (this object takes no fields)");
  EXPECT_EQ(none.hint, "remove 'target', then call the tool again");
}

TEST(JsonSchemaMessages, ReportSeveralProblemsInOneReply) {
  const JsonSchema grep = builtin_tool_schema("grep");
  const Error error = refusal(grep, Json::parse(R"({"pattern": "", "context": -1,
                                                   "output_mode": "lines"})"));
  EXPECT_EQ(error.message,
            "context: must be >= 0, got -1; output_mode: must be one of \"content\", \"files\", "
            "\"count\"; got \"lines\"; pattern: must be at least 1 character long, got 0");
  ASSERT_EQ(error.details["errors"].size(), 3u);
  EXPECT_EQ(error.details["errors"][0]["path"], "/context");
  EXPECT_EQ(error.details["errors"][1]["path"], "/output_mode");
  EXPECT_EQ(error.details["errors"][2]["path"], "/pattern");
  EXPECT_FALSE(error.details.contains("truncated"));
}

TEST(JsonSchemaMessages, CapTheNumberOfProblemsReported) {
  const JsonSchema schema = schema_of(R"({"additionalProperties": {"type": "string"}})");
  Json value = Json::object();
  for (int i = 0; i < 20; ++i)
    value["f" + std::to_string(100 + i)] = i;
  const Error error = refusal(schema, value);
  EXPECT_EQ(error.details["errors"].size(), JsonSchema::kMaxReportedErrors);
  EXPECT_EQ(error.details["truncated"], true);
  EXPECT_THAT(error.message, StartsWith("f100: expected a string, got a number; f101: "));
  EXPECT_THAT(error.message, ::testing::EndsWith("; and more"));
}

TEST(JsonSchemaMessages, QuoteNamesThatAreNotIdentifiersAndEscapePointers) {
  const JsonSchema schema = schema_of(R"({"properties": {"a b": {"properties": {
      "c/d": {"items": {"type": "string"}}}}}})");
  const Error error = refusal(schema, Json::parse(R"({"a b": {"c/d": ["x", 1]}})"));
  EXPECT_EQ(error.message, R"(["a b"]["c/d"][1]: expected a string, got a number)");
  EXPECT_EQ(error.details["errors"][0]["path"], "/a b/c~1d/1");
}

TEST(JsonSchemaMessages, ShortenLongNamesAndValues) {
  const JsonSchema read_file = builtin_tool_schema("read_file");
  const std::string long_name(100000, 'x');
  const Error error = refusal(read_file, Json{{"path", "a"}, {long_name, 1}});
  EXPECT_LT(error.message.size(), 300u);
  EXPECT_THAT(error.message, HasSubstr("xxx...'"));
  EXPECT_LT(error.details.dump().size(), 600u);

  const JsonSchema schema = schema_of(R"({"enum": ["a", "b"]})");
  EXPECT_LT(message(schema, std::string(100000, 'y')).size(), 200u);
}

TEST(JsonSchemaMessages, SayWhichTypesWereExpected) {
  EXPECT_EQ(message(builtin_tool_schema("read_file"), Json::array()),
            "expected an object, got an array");
  const JsonSchema integer = schema_of(R"({"type": "integer"})");
  EXPECT_TRUE(integer.validate(1.0).ok());
  EXPECT_EQ(message(integer, 1.5),
            "expected an integer, got a number with a fractional part (1.5)");
  EXPECT_EQ(message(schema_of(R"({"type": ["string", "null"]})"), 1),
            "expected a string or null, got a number");
  EXPECT_EQ(message(schema_of(R"({"type": ["array", "boolean", "object"]})"), "x"),
            "expected a boolean, an object or an array, got a string");
}

TEST(JsonSchemaMessages, StateTheBoundThatWasCrossed) {
  EXPECT_EQ(message(schema_of(R"({"minimum": 1})"), 0), "must be >= 1, got 0");
  EXPECT_EQ(message(schema_of(R"({"exclusiveMinimum": 0})"), 0), "must be > 0, got 0");
  EXPECT_EQ(message(schema_of(R"({"maximum": 10})"), 10.5), "must be <= 10, got 10.5");
  EXPECT_EQ(message(schema_of(R"({"exclusiveMaximum": 10})"), 10), "must be < 10, got 10");
  EXPECT_EQ(message(schema_of(R"({"multipleOf": 2})"), 7), "must be a multiple of 2, got 7");
  EXPECT_EQ(message(schema_of(R"({"minItems": 1})"), Json::array()),
            "must have at least 1 item, got 0");
  EXPECT_EQ(message(schema_of(R"({"maxItems": 2})"), Json::parse("[1, 2, 3]")),
            "must have at most 2 items, got 3");
  EXPECT_EQ(message(schema_of(R"({"maxLength": 3})"), "abcd"),
            "must be at most 3 characters long, got 4");
  EXPECT_EQ(message(schema_of(R"({"minProperties": 2})"), Json::parse(R"({"a": 1})")),
            "must have at least 2 fields, got 1");
  EXPECT_EQ(
      message(schema_of(R"({"items": [{}], "additionalItems": false})"), Json::parse("[1, 2]")),
      "must have at most 1 item, got 2");
  EXPECT_EQ(message(schema_of(R"({"const": "yes"})"), "no"), R"(must be "yes")");
}

TEST(JsonSchemaMessages, ExplainTheAlternativeThatGotFurthest) {
  const JsonSchema schema = schema_of(R"({"anyOf": [{"type": "string"},
      {"type": "object", "properties": {"a": {"type": "integer"}}, "required": ["a"]}]})");
  EXPECT_EQ(message(schema, Json::parse(R"({"a": "x"})")), "a: expected an integer, got a string");
  EXPECT_EQ(message(schema, true),
            "matches none of the 2 alternatives in 'anyOf': (1) expected a string, got a "
            "boolean; (2) expected an object, got a boolean");

  const JsonSchema one_of = schema_of(R"({"oneOf": [{"type": "number"}, {"type": "integer"}]})");
  EXPECT_EQ(message(one_of, 1),
            "matches more than one of the alternatives in 'oneOf' (1 and 2); it must match "
            "exactly one");
  EXPECT_TRUE(one_of.validate(1.5).ok());
}

TEST(JsonSchemaMessages, NameFieldsThatDependOnOthers) {
  const JsonSchema schema = schema_of(R"({"dependencies": {"replace_all": ["old_string"]}})");
  const Error error = refusal(schema, Json::parse(R"({"replace_all": true})"));
  EXPECT_EQ(error.message, "missing field 'old_string', required when 'replace_all' is present");
  EXPECT_EQ(error.details["errors"][0]["path"], "/old_string");
}

TEST(JsonSchemaMessages, ExplainOtherFailures) {
  EXPECT_EQ(message(schema_of(R"({"uniqueItems": true})"), Json::parse("[1, 2, 1.0]")),
            "items must be unique, but [0] and [2] are equal");
  const Error name =
      refusal(schema_of(R"({"propertyNames": {"pattern": "^[a-z]+$"}})"), Json{{"Foo", 1}});
  EXPECT_EQ(name.message, "invalid field name 'Foo': must match the pattern /^[a-z]+$/");
  EXPECT_EQ(name.details["errors"][0]["path"], "/Foo");
  EXPECT_EQ(message(schema_of(R"({"properties": {"a": false}})"), Json{{"a", 1}}),
            "a: no value is allowed here");
  EXPECT_EQ(message(schema_of(R"({"not": {"type": "null"}})"), nullptr),
            "must not match the schema under 'not'");
  EXPECT_EQ(message(schema_of(R"({"contains": {"type": "integer"}})"), Json::parse(R"(["a"])")),
            "must contain at least one item that matches the 'contains' schema");
  EXPECT_EQ(message(schema_of(R"({"if": {"properties": {"kind": {"const": "file"}}},
                                  "then": {"required": ["path"]}})"),
                    Json{{"kind", "file"}}),
            "missing required field 'path'");
}

// --- Value semantics beyond the suite --------------------------------------

TEST(JsonSchemaValues, LengthsCountCodePointsNotBytes) {
  const JsonSchema schema = schema_of(R"({"minLength": 2, "maxLength": 2})");
  EXPECT_TRUE(schema.validate("\xC3\xA9\xC3\xA9").ok());                  // "éé": 4 bytes
  EXPECT_TRUE(schema.validate("\xF0\x9F\x98\x80\xF0\x9F\x98\x80").ok());  // two emoji: 8 bytes
  EXPECT_EQ(message(schema, "\xF0\x9F\x98\x80"), "must be at least 2 characters long, got 1");
  EXPECT_EQ(message(schema, "\xC3\xA9\xC3\xA9\xC3\xA9"),
            "must be at most 2 characters long, got 3");
}

TEST(JsonSchemaValues, PatternsAreUnicodeAwareAndEcmaLike) {
  EXPECT_TRUE(schema_of(R"({"pattern": "^.$"})").validate("\xC3\xA9").ok());
  const JsonSchema digits = schema_of(R"({"pattern": "^\\d+$"})");
  EXPECT_TRUE(digits.validate("42").ok());
  EXPECT_FALSE(digits.validate("\xD9\xA4\xD9\xA2").ok());  // Arabic-Indic digits: \d is ASCII
  const JsonSchema end = schema_of(R"({"pattern": "^a$"})");
  EXPECT_FALSE(end.validate("a\n").ok());  // `$` only at the very end, as in ECMA-262
  const JsonSchema dot = schema_of(R"({"pattern": "^a.b$"})");
  EXPECT_TRUE(dot.validate("a-b").ok());
  EXPECT_FALSE(dot.validate("a\rb").ok());  // `.` stops at line terminators, as in ECMA-262
  EXPECT_FALSE(dot.validate("a\nb").ok());
  EXPECT_TRUE(schema_of(R"({"pattern": "^\\u00e9$"})").validate("\xC3\xA9").ok());
  EXPECT_TRUE(schema_of(R"({"pattern": "b"})").validate("abc").ok());  // not anchored
}

TEST(JsonSchemaValues, CatastrophicPatternsGiveUpWithAnError) {
  const JsonSchema schema = schema_of(R"({"pattern": "^(a+)+$"})");
  const Error error = refusal(schema, std::string(40, 'a') + "b");
  EXPECT_THAT(error.message, HasSubstr("could not be checked against the pattern /^(a+)+$/"));
}

TEST(JsonSchemaValues, NumbersCompareExactlyBeyondDoublePrecision) {
  // 2^53 + 1 is not a double; a comparison through double would call them equal.
  const JsonSchema maximum = schema_of(R"({"maximum": 9007199254740993})");
  EXPECT_TRUE(maximum.validate(Json::parse("9007199254740993")).ok());
  EXPECT_FALSE(maximum.validate(Json::parse("9007199254740994")).ok());
  const JsonSchema minimum = schema_of(R"({"minimum": 9007199254740993})");
  EXPECT_FALSE(minimum.validate(9007199254740992.0).ok());
  EXPECT_TRUE(schema_of(R"({"maximum": 18446744073709551615})")
                  .validate(Json::parse("18446744073709551615"))
                  .ok());
  // nlohmann's own operator== calls these equal (it casts the unsigned to int64).
  EXPECT_TRUE(schema_of(R"({"uniqueItems": true})")
                  .validate(Json::parse("[18446744073709551615, -1]"))
                  .ok());
  EXPECT_FALSE(schema_of(R"({"const": -1})").validate(Json::parse("18446744073709551615")).ok());
}

TEST(JsonSchemaValues, MultipleOfToleratesBinaryFractionsOnly) {
  const JsonSchema tenth = schema_of(R"({"multipleOf": 0.1})");
  EXPECT_TRUE(tenth.validate(0.3).ok());  // 0.3 / 0.1 == 2.9999999999999996 in doubles
  EXPECT_FALSE(tenth.validate(0.35).ok());
  EXPECT_FALSE(schema_of(R"({"multipleOf": 1})").validate(1e-20).ok());
  EXPECT_FALSE(schema_of(R"({"multipleOf": 0.123456789})").validate(1e308).ok());
  EXPECT_TRUE(schema_of(R"({"multipleOf": 2})").validate(Json::parse("-9223372036854775808")).ok());
}

TEST(JsonSchemaValues, UniqueItemsScalesToLongArrays) {
  const JsonSchema schema = schema_of(R"({"uniqueItems": true})");
  Json items = Json::array();
  for (int i = 0; i < 20000; ++i)
    items.push_back({{"n", i}});
  EXPECT_TRUE(schema.validate(items).ok());
  items.push_back({{"n", 7.0}});
  EXPECT_EQ(message(schema, items), "items must be unique, but [7] and [20000] are equal");

  const Json same(20000, Json{{"a", Json::array({1, 2})}});
  EXPECT_EQ(message(schema, same), "items must be unique, but [0] and [1] are equal");

  // Distinct only 12 levels down: a hash that stopped short would put them all
  // in one bucket and compare every pair.
  Json deep = Json::array();
  for (int i = 0; i < 20000; ++i) {
    Json item = i;
    for (int level = 0; level < 12; ++level)
      item = Json::array({std::move(item)});
    deep.push_back(std::move(item));
  }
  EXPECT_TRUE(schema.validate(deep).ok());
}

TEST(JsonSchemaValues, FormatIsAnAnnotation) {
  const JsonSchema schema = schema_of(R"({"type": "string", "format": "email",
      "title": "t", "description": "d", "default": "x", "examples": ["a@b"], "$comment": "c",
      "readOnly": false, "$schema": "http://json-schema.org/draft-07/schema#",
      "$id": "http://example.com/s"})");
  EXPECT_TRUE(schema.validate("not an address").ok());
  EXPECT_FALSE(schema.validate(1).ok());
}

// --- $ref ------------------------------------------------------------------

TEST(JsonSchemaRefs, ResolveEscapedPointers) {
  const JsonSchema schema = schema_of(R"({
      "definitions": {"tilde~name": {"type": "integer"}, "slash/name": {"type": "string"},
                      "percent%name": {"type": "boolean"}},
      "properties": {"t": {"$ref": "#/definitions/tilde~0name"},
                     "s": {"$ref": "#/definitions/slash~1name"},
                     "p": {"$ref": "#/definitions/percent%25name"}}})");
  EXPECT_TRUE(schema.validate(Json::parse(R"({"t": 1, "s": "x", "p": true})")).ok());
  const Error error = refusal(schema, Json::parse(R"({"t": "1", "s": 1, "p": 0})"));
  EXPECT_EQ(error.details["errors"].size(), 3u);
}

TEST(JsonSchemaRefs, RecursionIsBoundedByTheEvaluationDepth) {
  const JsonSchema schema = schema_of(R"({"type": "array", "items": {"$ref": "#"}})");
  auto nested = [](int depth) {
    Json value = Json::array();
    for (int i = 0; i < depth; ++i)
      value = Json::array({std::move(value)});
    return value;
  };
  EXPECT_TRUE(schema.validate(nested(50)).ok());
  EXPECT_THAT(message(schema, nested(1000)), HasSubstr("nested too deeply to validate"));
  EXPECT_THAT(
      message(schema_of(R"({"uniqueItems": true})"), Json::array({nested(1000), nested(1000)})),
      HasSubstr("nested too deeply to compare"));
}

TEST(JsonSchemaRefs, RefuseCyclesThatNeverReachAValue) {
  EXPECT_THAT(compile_error(R"({"$ref": "#"})").message,
              HasSubstr("refers back to the root without descending"));
  const Error error = compile_error(R"({"definitions": {
      "a": {"allOf": [{"$ref": "#/definitions/b"}]}, "b": {"$ref": "#/definitions/a"}},
      "properties": {"x": {"$ref": "#/definitions/a"}}})");
  EXPECT_THAT(error.message, HasSubstr("without descending into a member or item"));
}

TEST(JsonSchemaRefs, RefuseRefsThatLeaveTheDocument) {
  const Error remote = compile_error(R"({"$ref": "http://json-schema.org/draft-07/schema#"})");
  EXPECT_EQ(remote.message,
            "/: $ref \"http://json-schema.org/draft-07/schema#\" points to another document; only "
            "references within this schema are supported");
  EXPECT_THAT(remote.hint, HasSubstr("\"definitions\""));
  EXPECT_EQ(remote.details, Json::parse(R"({"pointer": "/$ref", "keyword": "$ref"})"));
  EXPECT_THAT(compile_error(R"({"items": {"$ref": "node.json"}})").message,
              StartsWith("/items: $ref \"node.json\" points to another document"));
  EXPECT_THAT(compile_error(R"({"$ref": "#foo"})").message, HasSubstr("plain-name fragment"));
  EXPECT_THAT(compile_error(R"({"$ref": "#/definitions/missing"})").message,
              HasSubstr("does not point at a schema in this document"));
  EXPECT_THAT(compile_error(R"({"required": ["a"], "items": {"$ref": "#/required"}})").message,
              HasSubstr("does not point at a schema"));
  EXPECT_THAT(compile_error(R"({"$ref": "#/a%zz"})").message, HasSubstr("malformed %-escape"));
  EXPECT_THAT(compile_error(R"({"properties": {"a": {"$id": "a.json"}}})").message,
              StartsWith("/properties/a: '$id' is only supported at the root"));
}

// --- Messages a catalog author reads ---------------------------------------

TEST(JsonSchemaCompile, NamesAnUnsupportedKeywordAndWhereItIs) {
  const Error error = compile_error(R"({"type": "object", "properties": {
      "path": {"type": "string", "minLenght": 1}}})");
  EXPECT_EQ(error.message, "/properties/path: unsupported keyword 'minLenght'");
  EXPECT_EQ(error.details,
            Json::parse(R"({"pointer": "/properties/path/minLenght", "keyword": "minLenght"})"));
  EXPECT_THAT(error.hint, HasSubstr("minLength"));
  EXPECT_EQ(compile_error(R"({"$defs": {}})").message, "/: unsupported keyword '$defs'");
}

TEST(JsonSchemaCompile, NamesAMalformedValue) {
  EXPECT_EQ(compile_error(R"({"minLength": -1})").message,
            "/: 'minLength' must be a non-negative integer, got -1");
  EXPECT_THAT(compile_error(R"({"items": {"type": "int"}})").message,
              StartsWith("/items: 'type' must be a type name"));
  EXPECT_THAT(compile_error(R"({"type": ["string", "string"]})").message,
              HasSubstr("non-empty array of distinct ones"));
  EXPECT_EQ(compile_error(R"({"required": "a"})").message,
            "/: 'required' must be an array of names, got \"a\"");
  EXPECT_EQ(compile_error(R"({"required": ["a", "a"]})").message, "/: 'required' names 'a' twice");
  EXPECT_THAT(compile_error(R"({"exclusiveMinimum": true})").message,
              HasSubstr("the boolean form of draft 4 is not supported"));
  EXPECT_EQ(compile_error(R"({"multipleOf": 0})").message,
            "/: 'multipleOf' must be a number greater than 0, got 0");
  EXPECT_EQ(compile_error(R"({"anyOf": []})").message,
            "/: 'anyOf' must be a non-empty array of schemas, got an array");
  EXPECT_EQ(compile_error(R"({"properties": {"a": 3}})").message,
            "/properties/a: a schema must be an object or a boolean, got 3");
  EXPECT_EQ(compile_error(R"({"dependencies": {"a": [1]}})").message,
            "/dependencies: 'a' must be an array of names, got 1");
  EXPECT_EQ(compile_error(R"({"description": 1})").message,
            "/: 'description' must be a string, got 1");
  const Error pattern = compile_error(R"({"properties": {"a": {"pattern": "(x"}}})");
  EXPECT_THAT(
      pattern.message,
      StartsWith("/properties/a: 'pattern': invalid regular expression \"(x\" at offset 2"));
  EXPECT_EQ(pattern.details["pointer"], "/properties/a/pattern");
  EXPECT_THAT(compile_error(R"({"patternProperties": {"[": {}}})").message,
              HasSubstr("invalid regular expression"));
}

TEST(JsonSchemaCompile, RefusesSchemasNestedTooDeeply) {
  Json schema = Json::object();
  for (int i = 0; i < 100; ++i)
    schema = Json{{"not", std::move(schema)}};
  const Result<JsonSchema> compiled = JsonSchema::compile(schema);
  ASSERT_FALSE(compiled.ok());
  EXPECT_THAT(compiled.error().message, HasSubstr("nested more than 64 levels"));
}

// --- The built-in catalog --------------------------------------------------

TEST(JsonSchemaCatalog, EveryBuiltinToolSchemaCompilesAndIsStrict) {
  const config::Catalog catalog = config::Catalog::builtin();
  ASSERT_FALSE(catalog.tools().empty());
  for (const config::ToolSpec& tool : catalog.tools()) {
    const Result<JsonSchema> schema = JsonSchema::compile(tool.input_schema);
    ASSERT_TRUE(schema.ok()) << tool.name << ": " << schema.error().message;
    EXPECT_EQ(message(*schema, Json::array()), "expected an object, got an array") << tool.name;
    EXPECT_THAT(message(*schema, Json{{"no_such_argument", 1}}),
                HasSubstr("unknown field 'no_such_argument'"))
        << tool.name;
  }
}

TEST(JsonSchemaCatalog, AcceptsWellFormedCalls) {
  EXPECT_TRUE(builtin_tool_schema("read_file")
                  .validate(Json::parse(R"({"path": "src/a.cpp", "offset": 10, "limit": 20})"))
                  .ok());
  EXPECT_TRUE(builtin_tool_schema("edit_file")
                  .validate(Json::parse(R"({"path": "a", "edits": [{"old_string": "x",
                                            "new_string": "y", "replace_all": true}]})"))
                  .ok());
  EXPECT_TRUE(
      builtin_tool_schema("grep")
          .validate(Json::parse(R"({"pattern": "TODO", "output_mode": "files", "context": 2})"))
          .ok());
}

// --- Sharing ---------------------------------------------------------------

TEST(JsonSchemaSharing, CopiesOutliveTheOriginalAndThreadsShareOne) {
  std::optional<JsonSchema> copy;
  {
    const JsonSchema original = schema_of(R"({"patternProperties": {"^x-": {"pattern": "^[0-9]+$"}},
                                              "additionalProperties": false})");
    copy = original;
  }
  const JsonSchema& schema = *copy;
  std::atomic<int> wrong{0};
  std::vector<std::thread> threads;
  for (int t = 0; t < 4; ++t) {
    threads.emplace_back([&schema, &wrong, t] {
      for (int i = 0; i < 2000; ++i) {
        const bool valid = (i + t) % 2 == 0;
        const Json value{{"x-" + std::to_string(i), valid ? "123" : "12a"}};
        if (schema.validate(value).ok() != valid) ++wrong;
      }
    });
  }
  for (std::thread& thread : threads)
    thread.join();
  EXPECT_EQ(wrong.load(), 0);
}

}  // namespace
}  // namespace loopr::daemon
