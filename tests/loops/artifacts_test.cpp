// Artifacts: each rule a schema cannot say is refused with a message naming
// it; what passes comes back normalised; specs are ordered after their
// dependencies; the Markdown shows everything a person needs.
#include "loops/artifacts.hpp"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <string>
#include <vector>

namespace loopr::loops {
namespace {

using nlohmann::json;
using ::testing::ElementsAre;
using ::testing::HasSubstr;
using ::testing::Not;

json spec_entry(const std::string& name, json dependencies = json::array()) {
  return {{"name", name},
          {"title", "Spec " + name},
          {"description", "What " + name + " covers."},
          {"dependencies", std::move(dependencies)}};
}

json plan_with(json specs) {
  return {{"title", "Tokens"}, {"overview", "Add API tokens."}, {"specs", std::move(specs)}};
}

json phase_entry(const std::string& name) {
  return {{"name", name}, {"title", "Phase " + name}, {"description", "Do " + name + "."}};
}

json spec_with(json phases) {
  return {{"name", "api"},
          {"title", "API"},
          {"overview", "The HTTP API."},
          {"phases", std::move(phases)}};
}

json three_phases() {
  return json::array({phase_entry("schema"), phase_entry("handlers"), phase_entry("docs")});
}

json phase_with(json tasks, std::string validation = "make test") {
  return {{"name", "schema"},
          {"title", "Schema"},
          {"objective", "Create the tables."},
          {"tasks", std::move(tasks)},
          {"validation_command", std::move(validation)}};
}

json one_task() {
  return json::array({{{"description", "Write the migration"}}});
}

// The error of a check that must fail; fails the test if it passed.
Error refused(std::string_view tool, const json& args) {
  auto result = check_artifact(tool, args);
  EXPECT_FALSE(result.ok()) << "accepted: " << args.dump();
  if (result.ok()) return Error{};
  EXPECT_EQ(result.error().code, errc::invalid_arguments);
  EXPECT_FALSE(result.error().hint.empty()) << result.error().message;
  return result.error();
}

TEST(ArtifactTools, EachDocumentLoopHasItsTool) {
  EXPECT_EQ(artifact_tool_for("plan"), "create_plan");
  EXPECT_EQ(artifact_tool_for("spec"), "create_spec");
  EXPECT_EQ(artifact_tool_for("phase"), "create_phase");
  EXPECT_EQ(artifact_tool_for("code"), "");
  EXPECT_EQ(artifact_tool_for(""), "");
  EXPECT_EQ(artifact_kind_of("create_plan"), "plan");
  EXPECT_EQ(artifact_kind_of("create_spec"), "spec");
  EXPECT_EQ(artifact_kind_of("create_phase"), "phase");
  EXPECT_EQ(artifact_kind_of("complete_task"), "");
  EXPECT_THAT(refused("complete_task", json::object()).message, HasSubstr("not an artifact tool"));
}

TEST(ArtifactNames, LowercaseLettersDigitsAndSingleHyphens) {
  for (const char* good : {"a", "api", "auth-tokens", "v2", "2fa", "a-b-c", "x-"}) {
    EXPECT_TRUE(is_valid_artifact_name(good)) << good;
  }
  EXPECT_TRUE(is_valid_artifact_name(std::string(40, 'a')));
  for (const char* bad : {"", "Foo", "a b", "--x", "-x", "x--y", "a_b", "a.b", "a/b", "é", " a"}) {
    EXPECT_FALSE(is_valid_artifact_name(bad)) << bad;
  }
  EXPECT_FALSE(is_valid_artifact_name(std::string(41, 'a')));
}

// --- create_plan -------------------------------------------------------------

TEST(CheckPlan, ReturnsTheNormalisedPlan) {
  json args = {
      {"title", "  Tokens \n"},
      {"overview", "\tAdd API tokens."},
      {"specs", json::array({{{"name", "db"}, {"title", " DB "}, {"description", "Tables. "}},
                             {{"name", "api"},
                              {"title", "API"},
                              {"description", "Handlers."},
                              {"dependencies", {"db", "db"}}}})}};
  auto plan = check_artifact("create_plan", args);
  ASSERT_TRUE(plan.ok()) << plan.error().message;
  const json expected = {{"title", "Tokens"},
                         {"overview", "Add API tokens."},
                         {"specs", json::array({{{"name", "db"},
                                                 {"title", "DB"},
                                                 {"description", "Tables."},
                                                 {"dependencies", json::array()}},
                                                {{"name", "api"},
                                                 {"title", "API"},
                                                 {"description", "Handlers."},
                                                 {"dependencies", json::array({"db"})}}})}};
  EXPECT_EQ(*plan, expected);
}

TEST(CheckArtifact, AnArtifactOverTheSizeBoundIsRefusedAndOneJustUnderIsKept) {
  json big = plan_with(json::array({spec_entry("api")}));
  big["overview"] = std::string(kMaxArtifactBytes, 'x');
  const Error error = refused("create_plan", big);
  EXPECT_NE(error.message.find("at most 256 KiB"), std::string::npos) << error.message;
  json fits = plan_with(json::array({spec_entry("api")}));
  fits["overview"] = std::string(kMaxArtifactBytes - 1024, 'x');
  EXPECT_TRUE(check_artifact("create_plan", fits).ok());
  json many_tasks = phase_with(json::array());
  for (int i = 0; i < 20000; ++i)
    many_tasks["tasks"].push_back({{"description", "task number " + std::to_string(i)}});
  EXPECT_NE(refused("create_phase", many_tasks).message.find("KiB"), std::string::npos);
}

TEST(CheckPlan, OneToTenSpecs) {
  json specs = json::array();
  for (int i = 1; i <= 10; ++i)
    specs.push_back(spec_entry("s" + std::to_string(i)));
  EXPECT_TRUE(check_artifact("create_plan", plan_with(specs)).ok());
  specs.push_back(spec_entry("s11"));
  const Error error = refused("create_plan", plan_with(specs));
  EXPECT_THAT(error.message, HasSubstr("1 to 10 specs"));
  EXPECT_THAT(error.message, HasSubstr("11"));
  EXPECT_THAT(refused("create_plan", plan_with(json::array())).message, HasSubstr("1 to 10 specs"));
}

TEST(CheckPlan, SpecNamesAreUnique) {
  const Error error =
      refused("create_plan", plan_with({spec_entry("api"), spec_entry("db"), spec_entry("api")}));
  EXPECT_THAT(error.message, HasSubstr("spec names must be unique: 'api' appears twice"));
}

TEST(CheckPlan, SpecNamesMustBeUsableInABranchName) {
  for (const std::string& bad :
       std::vector<std::string>{"Foo", "a b", "--x", "x--y", std::string(41, 'x')}) {
    SCOPED_TRACE(bad);
    const Error error = refused("create_plan", plan_with({spec_entry("ok"), spec_entry(bad)}));
    EXPECT_THAT(error.message, HasSubstr("spec name '" + bad + "' is not valid"));
    EXPECT_THAT(error.message, HasSubstr("1 to 40 characters of a-z, 0-9 and -"));
  }
}

TEST(CheckPlan, ADependencyNamesAnotherSpecOfThePlan) {
  const Error unknown =
      refused("create_plan", plan_with({spec_entry("db"), spec_entry("api", {"db", "cache"})}));
  EXPECT_THAT(unknown.message, HasSubstr("another spec of this plan"));
  EXPECT_THAT(unknown.message, HasSubstr("'api' depends on 'cache'"));
  EXPECT_THAT(unknown.hint, HasSubstr("db, api"));

  const Error self = refused(
      "create_plan", plan_with({spec_entry("db"), spec_entry("api", json::array({"api"}))}));
  EXPECT_THAT(self.message, HasSubstr("cannot depend on itself"));
  EXPECT_THAT(self.message, HasSubstr("'api'"));
}

TEST(CheckPlan, DependenciesMustNotFormACycle) {
  const Error error =
      refused("create_plan",
              plan_with({spec_entry("a", json::array({"b"})), spec_entry("b", json::array({"c"})),
                         spec_entry("c", json::array({"a"})), spec_entry("d")}));
  EXPECT_THAT(error.message, HasSubstr("the dependencies form a cycle: a -> b -> c -> a"));

  const Error two = refused("create_plan", plan_with({spec_entry("x"), spec_entry("a", {"x", "b"}),
                                                      spec_entry("b", json::array({"a"}))}));
  EXPECT_THAT(two.message, HasSubstr("the dependencies form a cycle: a -> b -> a"));

  // A diamond is not a cycle.
  EXPECT_TRUE(check_artifact("create_plan",
                             plan_with({spec_entry("base"), spec_entry("l", json::array({"base"})),
                                        spec_entry("r", json::array({"base"})),
                                        spec_entry("top", {"l", "r"})}))
                  .ok());
}

TEST(CheckPlan, MalformedArgumentsAreAnErrorNotAnException) {
  EXPECT_THAT(refused("create_plan", json::array()).message, HasSubstr("JSON object"));
  EXPECT_THAT(refused("create_plan", {{"title", "t"}, {"overview", "o"}}).message,
              HasSubstr("specs"));
  EXPECT_THAT(
      refused("create_plan", {{"title", 5}, {"overview", "o"}, {"specs", json::array()}}).message,
      HasSubstr("the title of the plan must be a string"));
  EXPECT_THAT(refused("create_plan", plan_with(json::array({spec_entry("a", "b")}))).message,
              HasSubstr("the dependencies of spec 'a' must be an array"));
  EXPECT_THAT(
      refused("create_plan", plan_with(json::array({spec_entry("a", json::array({1}))}))).message,
      HasSubstr("the dependencies of spec 'a' must be spec names"));
  EXPECT_THAT(refused("create_plan", plan_with(json::array({"api"}))).message,
              HasSubstr("spec 1 must be an object"));
  EXPECT_THAT(refused("create_plan", {{"title", "  "}, {"overview", "o"}, {"specs", json::array()}})
                  .message,
              HasSubstr("the title of the plan must not be blank"));
}

// --- create_spec -------------------------------------------------------------

TEST(CheckSpec, ReturnsTheNormalisedSpec) {
  json phases = three_phases();
  phases[1]["validation"] = "  curl works ";
  auto spec = check_artifact("create_spec", spec_with(phases));
  ASSERT_TRUE(spec.ok()) << spec.error().message;
  EXPECT_EQ((*spec)["name"], "api");
  ASSERT_EQ((*spec)["phases"].size(), 3u);
  EXPECT_EQ((*spec)["phases"][0], (json{{"name", "schema"},
                                        {"title", "Phase schema"},
                                        {"description", "Do schema."},
                                        {"validation", ""}}));
  EXPECT_EQ((*spec)["phases"][1]["validation"], "curl works");
}

TEST(CheckSpec, OneToSevenPhases) {
  json phases = json::array();
  EXPECT_THAT(refused("create_spec", spec_with(phases)).message, HasSubstr("1 to 7 phases: got 0"));
  for (const char* name : {"a", "b", "c", "d", "e", "f", "g"}) {
    phases.push_back(phase_entry(name));
    EXPECT_TRUE(check_artifact("create_spec", spec_with(phases)).ok()) << phases.size();
  }
  phases.push_back(phase_entry("h"));
  EXPECT_THAT(refused("create_spec", spec_with(phases)).message, HasSubstr("1 to 7 phases: got 8"));
}

TEST(CheckSpec, PhaseNamesAreUniqueAndValid) {
  json phases = three_phases();
  phases[2]["name"] = "schema";
  EXPECT_THAT(refused("create_spec", spec_with(phases)).message,
              HasSubstr("phase names must be unique: 'schema' appears twice"));
  for (const std::string& bad :
       std::vector<std::string>{"Foo", "a b", "--x", "x--y", std::string(41, 'p')}) {
    SCOPED_TRACE(bad);
    json named = three_phases();
    named[1]["name"] = bad;
    EXPECT_THAT(refused("create_spec", spec_with(named)).message,
                HasSubstr("phase name '" + bad + "' is not valid"));
  }
}

TEST(CheckSpec, TheSpecsOwnNameIsChecked) {
  json spec = spec_with(three_phases());
  spec["name"] = "API";
  EXPECT_THAT(refused("create_spec", spec).message, HasSubstr("spec name 'API' is not valid"));
}

// --- create_phase ------------------------------------------------------------

TEST(CheckPhase, ReturnsTheNormalisedPhase) {
  json tasks = json::array(
      {{{"description", " Write the migration "}, {"file", " db/001.sql "}, {"action", "create"}},
       {{"description", "Think"}}});
  auto phase = check_artifact("create_phase", phase_with(tasks, "  make test\n"));
  ASSERT_TRUE(phase.ok()) << phase.error().message;
  EXPECT_EQ((*phase)["validation_command"], "make test");
  EXPECT_EQ(
      (*phase)["tasks"][0],
      (json{{"description", "Write the migration"}, {"file", "db/001.sql"}, {"action", "create"}}));
  EXPECT_EQ((*phase)["tasks"][1], (json{{"description", "Think"}, {"file", ""}, {"action", ""}}));
  EXPECT_EQ((*phase)["objective"], "Create the tables.");
}

TEST(CheckPhase, AtLeastOneTask) {
  EXPECT_THAT(refused("create_phase", phase_with(json::array())).message,
              HasSubstr("at least 1 task"));
}

TEST(CheckPhase, ActionIsCreateModifyOrDelete) {
  for (const char* action : {"create", "modify", "delete", ""}) {
    json tasks = json::array({{{"description", "d"}, {"file", "a.txt"}, {"action", action}}});
    EXPECT_TRUE(check_artifact("create_phase", phase_with(tasks)).ok()) << action;
  }
  json tasks = one_task();
  tasks.push_back({{"description", "d"}, {"file", "a.txt"}, {"action", "rename"}});
  const Error error = refused("create_phase", phase_with(tasks));
  EXPECT_THAT(error.message, HasSubstr("the action of task 2 must be create, modify or delete"));
  EXPECT_THAT(error.message, HasSubstr("'rename'"));
}

TEST(CheckPhase, FileIsARelativePathInsideTheRepository) {
  for (const char* good : {"src/a.cpp", "a", "./a", "a..b/c", "dir/..hidden"}) {
    json tasks = json::array({{{"description", "d"}, {"file", good}}});
    EXPECT_TRUE(check_artifact("create_phase", phase_with(tasks)).ok()) << good;
  }
  for (const char* bad : {"../x", "a/../../x", "a/..", "..", "/etc/passwd"}) {
    SCOPED_TRACE(bad);
    json tasks = json::array({{{"description", "d"}, {"file", bad}}});
    const Error error = refused("create_phase", phase_with(tasks));
    EXPECT_THAT(error.message, HasSubstr("the file of task 1 must be a relative path"));
    EXPECT_THAT(error.message, HasSubstr(std::string("'") + bad + "'"));
  }
}

TEST(CheckPhase, ValidationCommandIsNotBlank) {
  for (const char* blank : {"", "   ", "\n\t"}) {
    const Error error = refused("create_phase", phase_with(one_task(), blank));
    EXPECT_THAT(error.message, HasSubstr("validation_command must not be blank"));
  }
}

TEST(CheckPhase, ThePhasesOwnNameIsChecked) {
  json phase = phase_with(one_task());
  phase["name"] = "x--y";
  EXPECT_THAT(refused("create_phase", phase).message, HasSubstr("phase name 'x--y' is not valid"));
}

// --- order -------------------------------------------------------------------

std::vector<std::string> order_of(json specs) {
  auto plan = check_artifact("create_plan", plan_with(std::move(specs)));
  EXPECT_TRUE(plan.ok()) << plan.error().message;
  return plan.ok() ? specs_in_dependency_order(*plan) : std::vector<std::string>{};
}

TEST(SpecsInDependencyOrder, DependenciesFirstOtherwisePlanOrder) {
  EXPECT_THAT(order_of({spec_entry("a"), spec_entry("b"), spec_entry("c")}),
              ElementsAre("a", "b", "c"));
  EXPECT_THAT(order_of({spec_entry("a", json::array({"c"})), spec_entry("b"), spec_entry("c")}),
              ElementsAre("b", "c", "a"));
  EXPECT_THAT(
      order_of({spec_entry("top", {"l", "r"}), spec_entry("r", json::array({"base"})),
                spec_entry("l", json::array({"base"})), spec_entry("base"), spec_entry("other")}),
      ElementsAre("base", "r", "l", "top", "other"));
}

TEST(SpecsInDependencyOrder, AnUncheckedPlanStillGivesEveryName) {
  const json cyclic = plan_with(
      {spec_entry("a", json::array({"b"})), spec_entry("b", json::array({"a"})), spec_entry("c")});
  EXPECT_THAT(specs_in_dependency_order(cyclic), ElementsAre("c", "a", "b"));
  EXPECT_TRUE(specs_in_dependency_order(json::object()).empty());
  EXPECT_TRUE(specs_in_dependency_order(json("nonsense")).empty());
}

// --- Markdown ----------------------------------------------------------------

TEST(RenderMarkdown, PlanShowsTitleOverviewSpecsAndDependencies) {
  auto plan = check_artifact("create_plan",
                             plan_with({spec_entry("db"), spec_entry("api", json::array({"db"})),
                                        spec_entry("ui", {"api", "db"})}));
  ASSERT_TRUE(plan.ok());
  const std::string md = render_artifact_markdown("plan", *plan, "p7");
  EXPECT_THAT(md, HasSubstr("# Plan p7: Tokens\n"));
  EXPECT_THAT(md, HasSubstr("Add API tokens."));
  for (const char* name : {"db", "api", "ui"}) {
    EXPECT_THAT(md, HasSubstr("`" + std::string(name) + "`: Spec " + name)) << name;
    EXPECT_THAT(md, HasSubstr("What " + std::string(name) + " covers.")) << name;
  }
  EXPECT_THAT(md, HasSubstr("Depends on: `db`\n"));
  EXPECT_THAT(md, HasSubstr("Depends on: `api`, `db`\n"));
  EXPECT_THAT(md, HasSubstr("Depends on: nothing\n"));
  EXPECT_LT(md.find("`db`: Spec db"), md.find("`api`: Spec api"));  // plan order
}

TEST(RenderMarkdown, SpecShowsItsPhasesWithValidation) {
  json phases = three_phases();
  phases[0]["validation"] = "the tables exist";
  auto spec = check_artifact("create_spec", spec_with(phases));
  ASSERT_TRUE(spec.ok());
  const std::string md = render_artifact_markdown("spec", *spec, "p7-s1");
  EXPECT_THAT(md, HasSubstr("# Spec p7-s1: API\n"));
  EXPECT_THAT(md, HasSubstr("`api`"));
  EXPECT_THAT(md, HasSubstr("The HTTP API."));
  for (const char* name : {"schema", "handlers", "docs"}) {
    EXPECT_THAT(md, HasSubstr("`" + std::string(name) + "`: Phase " + name)) << name;
    EXPECT_THAT(md, HasSubstr("Do " + std::string(name) + ".")) << name;
  }
  EXPECT_THAT(md, HasSubstr("Validation: the tables exist"));
}

TEST(RenderMarkdown, PhaseShowsTasksAndTheValidationCommandAsCode) {
  json tasks = json::array(
      {{{"description", "Write the migration"}, {"file", "db/001.sql"}, {"action", "create"}},
       {{"description", "Update the model"}, {"file", "src/model.cpp"}},
       {{"description", "Think it over"}}});
  auto phase = check_artifact("create_phase", phase_with(tasks, "make test && ./check"));
  ASSERT_TRUE(phase.ok());
  const std::string md = render_artifact_markdown("phase", *phase, "p7-s1-ph1");
  EXPECT_THAT(md, HasSubstr("# Phase p7-s1-ph1: Schema\n"));
  EXPECT_THAT(md, HasSubstr("Create the tables."));
  EXPECT_THAT(md, HasSubstr("1. Write the migration (create `db/001.sql`)\n"));
  EXPECT_THAT(md, HasSubstr("2. Update the model (`src/model.cpp`)\n"));
  EXPECT_THAT(md, HasSubstr("3. Think it over\n"));
  EXPECT_THAT(md, HasSubstr("```sh\nmake test && ./check\n```\n"));
}

TEST(RenderMarkdown, BackticksInACommandDoNotEndItsCodeBlock) {
  auto phase = check_artifact("create_phase", phase_with(one_task(), "echo ```; test `pwd`"));
  ASSERT_TRUE(phase.ok());
  const std::string md = render_artifact_markdown("phase", *phase, "p1-s1-ph1");
  EXPECT_THAT(md, HasSubstr("````sh\necho ```; test `pwd`\n````\n"));
}

TEST(RenderMarkdown, MissingFieldsRenderEmpty) {
  EXPECT_THAT(render_artifact_markdown("plan", json::object(), "p1"), HasSubstr("# Plan p1: \n"));
  EXPECT_THAT(render_artifact_markdown("phase", json("x"), "p1"), HasSubstr("# Phase p1: "));
  const json odd = {{"title", 5}, {"specs", {{{"name", 1}, {"dependencies", "x"}}}}};
  EXPECT_THAT(render_artifact_markdown("plan", odd, "p2"),
              Not(HasSubstr("5")));  // a title of the wrong type is left out
  EXPECT_THAT(render_artifact_markdown("spec", json::object(), ""), HasSubstr("# Spec: "));
}

}  // namespace
}  // namespace loopr::loops
