#include "config/schema_check.hpp"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

namespace loopr::config {
namespace {

using ::testing::HasSubstr;
using Json = nlohmann::json;

std::string problem(const char* schema) {
  auto p = check_tool_schema(Json::parse(schema));
  return p ? *p : std::string();
}

TEST(SchemaCheck, AcceptsAStrictObjectSchema) {
  EXPECT_EQ(problem(R"({"type": "object", "properties": {"a": {"type": "array",
                       "items": {"type": "object", "properties": {"b": {"type": "string"}},
                                 "required": ["b"], "additionalProperties": false}}},
                       "required": ["a"], "additionalProperties": false})"),
            "");
}

TEST(SchemaCheck, RefusesWhatTheValidatorOrLlmApisCannotTake) {
  EXPECT_THAT(problem(R"({"type": "string"})"), HasSubstr("\"type\": \"object\""));
  EXPECT_THAT(problem(R"({"type": "object", "properties": {}})"),
              HasSubstr("additionalProperties"));
  EXPECT_THAT(problem(R"({"type": "object", "properties": {"a": {"type": "string",
                          "format": "email"}}, "additionalProperties": false})"),
              HasSubstr("/properties/a: unsupported keyword 'format'"));
  // pattern and maxLength are taken (the create_* name rules use them).
  EXPECT_EQ(problem(R"({"type": "object", "properties": {"a": {"type": "string",
                        "pattern": "^[a-z]+$", "maxLength": 40}}, "additionalProperties": false})"),
            "");
  EXPECT_THAT(problem(R"({"type": "object", "properties": {}, "required": ["x"],
                          "additionalProperties": false})"),
              HasSubstr("'x' is required but not in"));
  EXPECT_THAT(problem(R"({"type": "object", "properties": {}, "additionalProperties": false,
                          "oneOf": [{"required": []}]})"),
              HasSubstr("/oneOf: not allowed at the root"));
  EXPECT_THAT(problem(R"({"type": "object", "properties": {"n": {"type": "integer",
                          "minimum": "1"}}, "additionalProperties": false})"),
              HasSubstr("/properties/n/minimum"));
  EXPECT_THAT(problem(R"({"type": "object", "properties": {"n": {"type": "int"}},
                          "additionalProperties": false})"),
              HasSubstr("/properties/n/type"));
}

}  // namespace
}  // namespace loopr::config
