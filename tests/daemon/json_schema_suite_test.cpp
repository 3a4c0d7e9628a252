// JsonSchema against the official JSON-Schema-Test-Suite (Debian package
// json-schema-test-suite): one test per keyword file. Every group whose
// schema compiles must give the expected verdict for every case; the few
// groups that need what loopr does not support are listed below with the
// reason, and must be refused by compile() rather than pass silently.
#include <gtest/gtest.h>

#include <algorithm>
#include <cctype>
#include <filesystem>
#include <fstream>
#include <set>
#include <string>
#include <string_view>
#include <vector>

#include "daemon/json_schema.hpp"

namespace loopr::daemon {
namespace {

using Json = nlohmann::json;

const std::filesystem::path kSuiteTests =
    std::filesystem::path(LOOPR_JSON_SCHEMA_SUITE_DIR) / "tests";

// Every keyword file of tests/draft7 (SuiteCoverage fails when the suite has
// one not listed here), plus the optional files about numbers.
const std::vector<std::string> kSuiteFiles = {
    "draft7/additionalItems.json",
    "draft7/additionalProperties.json",
    "draft7/allOf.json",
    "draft7/anyOf.json",
    "draft7/boolean_schema.json",
    "draft7/const.json",
    "draft7/contains.json",
    "draft7/default.json",
    "draft7/definitions.json",
    "draft7/dependencies.json",
    "draft7/enum.json",
    "draft7/exclusiveMaximum.json",
    "draft7/exclusiveMinimum.json",
    "draft7/if-then-else.json",
    "draft7/items.json",
    "draft7/maxItems.json",
    "draft7/maxLength.json",
    "draft7/maxProperties.json",
    "draft7/maximum.json",
    "draft7/minItems.json",
    "draft7/minLength.json",
    "draft7/minProperties.json",
    "draft7/minimum.json",
    "draft7/multipleOf.json",
    "draft7/not.json",
    "draft7/oneOf.json",
    "draft7/pattern.json",
    "draft7/patternProperties.json",
    "draft7/properties.json",
    "draft7/propertyNames.json",
    "draft7/ref.json",
    "draft7/refRemote.json",
    "draft7/required.json",
    "draft7/type.json",
    "draft7/uniqueItems.json",
    "draft7/optional/bignum.json",
    "draft7/optional/zeroTerminatedFloats.json",
};

struct Exclusion {
  std::string_view file;
  std::string_view group;
  std::string_view reason;
  std::string_view refused_with;  // expected in compile()'s message
};

constexpr std::string_view kRemote =
    "refers to a schema served at http://localhost:1234: remote $ref is not supported";
constexpr std::string_view kBaseUri =
    "changes the base URI with $id below the root, which is not supported";

constexpr Exclusion kExclusions[] = {
    {"draft7/definitions.json", "valid definition",
     "refers to the draft-07 meta-schema by URL: remote $ref is not supported",
     "points to another document"},
    {"draft7/definitions.json", "invalid definition",
     "refers to the draft-07 meta-schema by URL: remote $ref is not supported",
     "points to another document"},
    {"draft7/ref.json", "remote ref, containing refs itself",
     "refers to the draft-07 meta-schema by URL: remote $ref is not supported",
     "points to another document"},
    {"draft7/ref.json", "escaped pointer ref",
     "keeps its subschemas under non-keyword members (\"tilda~field\"), which compile() refuses "
     "as unknown keywords; the same pointer escapes are tested under \"definitions\" in "
     "json_schema_test.cpp",
     "unsupported keyword"},
    {"draft7/ref.json", "Recursive references between schemas", kBaseUri, "'$id'"},
    {"draft7/refRemote.json", "remote ref", kRemote, "points to another document"},
    {"draft7/refRemote.json", "fragment within remote ref", kRemote, "points to another document"},
    {"draft7/refRemote.json", "ref within remote ref", kRemote, "points to another document"},
    {"draft7/refRemote.json", "root ref in remote ref", kRemote, "points to another document"},
    {"draft7/refRemote.json", "base URI change", kBaseUri, "'$id'"},
    {"draft7/refRemote.json", "base URI change - change folder", kBaseUri, "'$id'"},
    {"draft7/refRemote.json", "base URI change - change folder in subschema", kBaseUri, "'$id'"},
};

const Exclusion* find_exclusion(std::string_view file, std::string_view group) {
  for (const Exclusion& exclusion : kExclusions) {
    if (exclusion.file == file && exclusion.group == group) return &exclusion;
  }
  return nullptr;
}

std::string missing_suite_message() {
  return "the JSON-Schema-Test-Suite is not installed at " + kSuiteTests.string() +
         "; run scripts/install-deps.sh (Debian package json-schema-test-suite)";
}

class JsonSchemaSuite : public ::testing::TestWithParam<std::string> {};

TEST_P(JsonSchemaSuite, GivesTheExpectedVerdicts) {
  const std::filesystem::path path = kSuiteTests / GetParam();
  std::ifstream in(path);
  ASSERT_TRUE(in) << missing_suite_message() << " (cannot open " << path << ")";
  const Json groups = Json::parse(in);
  ASSERT_TRUE(groups.is_array() && !groups.empty()) << path;

  std::size_t cases = 0;  // run
  std::set<std::string> excluded_seen;
  for (const Json& group : groups) {
    const std::string description = group.at("description").get<std::string>();
    const Result<JsonSchema> schema = JsonSchema::compile(group.at("schema"));
    if (const Exclusion* exclusion = find_exclusion(GetParam(), description)) {
      excluded_seen.insert(description);
      ASSERT_FALSE(schema.ok()) << "excluded group \"" << description
                                << "\" must be refused by compile(): " << exclusion->reason;
      EXPECT_NE(schema.error().message.find(exclusion->refused_with), std::string::npos)
          << "group \"" << description
          << "\" was refused for another reason than expected: " << schema.error().message;
      continue;
    }
    ASSERT_TRUE(schema.ok()) << "group \"" << description
                             << "\" does not compile: " << schema.error().message;
    for (const Json& test : group.at("tests")) {
      const bool expected = test.at("valid").get<bool>();
      const Result<void> verdict = schema->validate(test.at("data"));
      ++cases;
      EXPECT_EQ(verdict.ok(), expected)
          << "group \"" << description << "\", case \"" << test.at("description").get<std::string>()
          << "\": data " << test.at("data").dump()
          << (verdict.ok() ? std::string(" was accepted")
                           : " was refused: " + verdict.error().message);
      if (!verdict.ok()) {
        EXPECT_EQ(verdict.error().code, errc::invalid_arguments);
        EXPECT_FALSE(verdict.error().details.at("errors").empty());
      }
    }
  }
  for (const Exclusion& exclusion : kExclusions) {
    if (exclusion.file != GetParam()) continue;
    EXPECT_TRUE(excluded_seen.count(std::string(exclusion.group)))
        << "the exclusion of group \"" << exclusion.group
        << "\" matches nothing in the suite any more: remove it";
  }
  RecordProperty("cases", static_cast<int>(cases));
  EXPECT_GT(cases + excluded_seen.size(), 0u) << path << " has no test cases";
}

std::string test_name(const ::testing::TestParamInfo<std::string>& info) {
  std::string name = info.param.substr(std::string("draft7/").size());
  name = name.substr(0, name.size() - std::string(".json").size());
  std::replace_if(
      name.begin(), name.end(), [](char c) { return !std::isalnum(static_cast<unsigned char>(c)); },
      '_');
  return name;
}

INSTANTIATE_TEST_SUITE_P(Draft7, JsonSchemaSuite, ::testing::ValuesIn(kSuiteFiles), test_name);

TEST(JsonSchemaSuiteCoverage, EveryDraft7KeywordFileIsRun) {
  const std::filesystem::path draft7 = kSuiteTests / "draft7";
  ASSERT_TRUE(std::filesystem::is_directory(draft7)) << missing_suite_message();
  for (const auto& entry : std::filesystem::directory_iterator(draft7)) {
    if (entry.path().extension() != ".json") continue;
    const std::string file = "draft7/" + entry.path().filename().string();
    EXPECT_NE(std::find(kSuiteFiles.begin(), kSuiteFiles.end(), file), kSuiteFiles.end())
        << file << " is in the suite but not run: add it to kSuiteFiles";
  }
}

}  // namespace
}  // namespace loopr::daemon
