// What a loop's children are (loops/child_specs.hpp): a plan's specs, a
// spec's phases, a phase's code loop, and a conflicted merge's resolver.
#include "loops/child_specs.hpp"

#include <gtest/gtest.h>

#include <nlohmann/json.hpp>

namespace loopr::loops {
namespace {

using nlohmann::json;
using Ids = std::vector<std::string>;

class ChildSpecsTest : public ::testing::Test {
 protected:
  ChildSpecsTest() : settings_(config::Settings::defaults()) {
    settings_.loops["code"].validation_command = "make check";
    settings_.loops["code"].max_iterations = 7;
    settings_.merges.resolve_max_iterations = 2;
  }

  LoopSpec parent(const std::string& id, const std::string& type) const {
    LoopSpec spec;
    spec.id = id;
    spec.type = type;
    spec.plan_id = type == "plan" ? "" : "p1";
    spec.repo = "/src/app";
    spec.provider = "local";
    spec.model = "qwen";
    spec.branch = "loop/" + id;
    spec.user_branch = "main";
    spec.validate_timeout_s = 90;
    spec.repo_settings = true;
    spec.commands.validate = "ctest";
    return spec;
  }

  // Names children as the engine does: the parent's id, a letter, a count.
  NameLoop namer(const LoopSpec& parent_spec) {
    return [parent_spec](LoopSpec& spec, std::int64_t offset) {
      spec.id = parent_spec.id + "-" + loop_id_prefix(spec) + std::to_string(offset + 1);
      spec.branch = "loop/" + spec.id;
    };
  }

  static Ids ids(const std::vector<LoopSpec>& specs) {
    Ids out;
    for (const auto& spec : specs)
      out.push_back(spec.id);
    return out;
  }

  config::Settings settings_;
};

TEST_F(ChildSpecsTest, APlansSpecsInheritItsTreeAndDependOnTheSpecsTheyName) {
  const LoopSpec plan = parent("p1", "plan");
  LoopProgress progress;
  progress.generation = 3;
  progress.artifact = {
      {"title", "Faster startup"},
      {"overview", "Cache the index"},
      {"specs", json::array({{{"name", "cache"}, {"title", "A cache"}, {"description", "Keep it"}},
                             {{"name", "use"},
                              {"title", "Use it"},
                              {"dependencies", json::array({"cache", "nowhere", 5})}}})}};
  const auto specs = children_from_artifact(plan, progress, settings_, namer(plan));

  ASSERT_EQ(ids(specs), (Ids{"p1-s1", "p1-s2"}));
  EXPECT_TRUE(specs[0].depends_on.empty());
  EXPECT_EQ(specs[1].depends_on, (Ids{"p1-s1"})) << "unknown names and non-strings are skipped";
  const LoopSpec& first = specs[0];
  EXPECT_EQ(first.type, "spec");
  EXPECT_EQ(first.plan_id, "p1");
  EXPECT_EQ(first.parent_branch, "loop/p1");
  EXPECT_EQ(first.generation, 3);
  EXPECT_EQ(first.repo, "/src/app");
  EXPECT_EQ(first.model, "qwen");
  EXPECT_EQ(first.user_branch, "main");
  EXPECT_EQ(first.validate_timeout_s, 90);
  EXPECT_TRUE(first.repo_settings);
  EXPECT_EQ(first.commands.validate, "ctest") << "the repository's commands as the plan resolved";
  EXPECT_EQ(first.max_iterations, settings_.loops.at("spec").max_iterations);
  EXPECT_EQ(first.input.value("name", ""), "cache");
  EXPECT_NE(first.task.find("Write the spec 'cache': A cache"), std::string::npos) << first.task;
  EXPECT_NE(first.task.find("plan 'Faster startup': Cache the index"), std::string::npos);
}

TEST_F(ChildSpecsTest, ASpecsPhasesRunOneAfterAnother) {
  const LoopSpec spec = parent("p1-s2", "spec");
  LoopProgress progress;
  progress.artifact = {
      {"title", "Use it"},
      {"phases",
       json::array({{{"name", "a"}, {"validation", "make a"}}, {{"name", "b"}}, {{"name", "c"}}})}};
  const auto phases = children_from_artifact(spec, progress, settings_, namer(spec));

  ASSERT_EQ(ids(phases), (Ids{"p1-s2-ph1", "p1-s2-ph2", "p1-s2-ph3"}));
  EXPECT_TRUE(phases[0].depends_on.empty());
  EXPECT_EQ(phases[1].depends_on, (Ids{"p1-s2-ph1"}));
  EXPECT_EQ(phases[2].depends_on, (Ids{"p1-s2-ph2"}));
  EXPECT_EQ(phases[0].plan_id, "p1") << "a child's plan is its tree's root, not its parent";
  EXPECT_NE(phases[0].task.find("How to check it: make a"), std::string::npos);
  EXPECT_EQ(phases[1].task.find("How to check it"), std::string::npos);
}

TEST_F(ChildSpecsTest, APhaseMakesOneCodeLoopValidatedByThePhasesCommand) {
  const LoopSpec phase = parent("p1-s1-ph1", "phase");
  LoopProgress progress;
  progress.artifact = {
      {"title", "Add the cache"},
      {"objective", "Faster"},
      {"tasks",
       json::array({{{"description", "write it"}, {"file", "cache.c"}},
                    {{"description", "wire it"}, {"file", "main.c"}, {"action", "modify"}}})},
      {"validation_command", "make test"}};
  const auto code = children_from_artifact(phase, progress, settings_, namer(phase));

  ASSERT_EQ(ids(code), (Ids{"p1-s1-ph1-c1"}));
  EXPECT_EQ(code[0].type, "code");
  EXPECT_EQ(code[0].validate, "make test") << "the phase's command, not [loops.code]'s";
  EXPECT_EQ(code[0].max_iterations, 7);
  EXPECT_NE(code[0].task.find("- write it (touch cache.c)"), std::string::npos) << code[0].task;
  EXPECT_NE(code[0].task.find("- wire it (modify main.c)"), std::string::npos);
  EXPECT_NE(code[0].task.find("done when `make test` exits with 0"), std::string::npos);
}

TEST_F(ChildSpecsTest, AnArtifactThatAsksForNothingOrIsMalformedMakesNoChildren) {
  int named = 0;
  NameLoop count = [&named](LoopSpec&, std::int64_t) { ++named; };
  for (const json& artifact : {json(nullptr), json("text"), json::array({1}),
                               json{{"specs", "not a list"}}, json{{"specs", json::array()}}}) {
    LoopProgress progress;
    progress.artifact = artifact;
    EXPECT_TRUE(children_from_artifact(parent("p1", "plan"), progress, settings_, count).empty())
        << artifact;
  }
  LoopProgress none;
  EXPECT_TRUE(children_from_artifact(parent("p1-s1-ph1", "phase"), none, settings_, count).empty())
      << "a phase without its artifact";
  EXPECT_TRUE(children_from_artifact(parent("c3", "code"), none, settings_, count).empty());
  EXPECT_EQ(named, 0);
}

TEST_F(ChildSpecsTest, AResolverWorksInTheMergeAndUnderAPhaseAlsoRunsThePhasesCheck) {
  const LoopSpec phase = parent("p1-s1-ph1", "phase");
  LoopProgress progress;
  progress.generation = 1;
  progress.artifact = {{"validation_command", "make test"}};
  LoopSpec child = parent("p1-s1-ph1-c1", "code");
  const LoopSpec resolver =
      resolver_spec(phase, progress, child, {"src/a.c", "include/a.h"}, settings_);

  EXPECT_EQ(resolver.role, "resolver");
  EXPECT_EQ(loop_id_prefix(resolver), "m");
  EXPECT_EQ(resolver.merge_child, "p1-s1-ph1-c1");
  EXPECT_EQ(resolver.max_iterations, 2) << "[merges] resolve_max_iterations";
  EXPECT_EQ(resolver.generation, 1);
  EXPECT_EQ(resolver.input["files"], json::array({"src/a.c", "include/a.h"}));
  EXPECT_NE(resolver.task.find("Merging loop/p1-s1-ph1-c1 into loop/p1-s1-ph1 conflicted"),
            std::string::npos)
      << resolver.task;
  EXPECT_NE(resolver.task.find("\n- src/a.c\n- include/a.h"), std::string::npos);
  EXPECT_EQ(resolver.validate.rfind("! grep -rIlE", 0), 0u) << resolver.validate;
  EXPECT_NE(resolver.validate.find(" && (make test)"), std::string::npos) << resolver.validate;

  const LoopSpec spec = parent("p1-s1", "spec");
  const LoopSpec under_spec = resolver_spec(spec, LoopProgress{}, child, {"x"}, settings_);
  EXPECT_EQ(under_spec.validate.find("&&"), std::string::npos) << under_spec.validate;
}

TEST_F(ChildSpecsTest, IdPrefixesFollowTheType) {
  LoopSpec spec;
  for (const auto& [type, prefix] : std::vector<std::pair<std::string, std::string>>{
           {"plan", "p"}, {"spec", "s"}, {"phase", "ph"}, {"code", "c"}}) {
    spec.type = type;
    EXPECT_EQ(loop_id_prefix(spec), prefix) << type;
  }
}

}  // namespace
}  // namespace loopr::loops
