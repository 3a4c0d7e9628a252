// The engine's tree of loops (loops/loop_tree.hpp) and the re-run check
// over it (loops/rerun_check.hpp), on runs made in memory: no store, no git.
#include "loops/loop_tree.hpp"

#include <gtest/gtest.h>

#include <cstdlib>
#include <functional>

#include "loops/loop_run.hpp"
#include "loops/rerun_check.hpp"

namespace loopr::loops {
namespace {

// The tree's queries never ask a run anything of its engine; a run that did
// would abort the test here.
class NoEngine final : public RunHost {
 public:
  const LoopEngineServices& services() const override { std::abort(); }
  asio::thread_pool& git_pool() override { std::abort(); }
  ProviderSlots& provider_slots() override { std::abort(); }
  LoopStatus status_after_own_work(const LoopSpec&) const override { std::abort(); }
  void status_changed(const LoopRun&) override { std::abort(); }
  std::vector<std::string> children_ids(const std::string&) const override { std::abort(); }
  const config::BudgetLimits* plan_budget(const std::string&) const override { std::abort(); }
  Spend tree_spend(const std::string&) const override { std::abort(); }
  Spend total_spend() const override { std::abort(); }
  std::string loop_folder(const std::string&) const override { std::abort(); }
};

class LoopTreeTest : public ::testing::Test {
 protected:
  // A loop `id` of `type` under `parent` ("" at the top), created `seq`-th,
  // with `status`; `change` sets what else the test needs.
  LoopTree::RunPtr add(const std::string& id, const std::string& type, const std::string& parent,
                       std::int64_t seq, LoopStatus status,
                       const std::function<void(LoopSpec&, LoopProgress&)>& change = {}) {
    store::LoopRow row;
    row.id = id;
    row.seq = seq;
    row.type = type;
    row.parent_id = parent;
    row.status = std::string(to_string(status));
    LoopSpec spec;
    spec.id = id;
    spec.type = type;
    spec.seq = seq;
    spec.worktree = "/work/" + id;
    spec.branch = "loop/" + id;
    if (type != "plan") spec.plan_id = "p1";
    LoopProgress progress;
    if (change) change(spec, progress);
    auto run =
        std::make_shared<LoopRun>(engine_, std::move(row), std::move(spec), std::move(progress));
    tree_.add(run);
    return run;
  }

  static std::vector<std::string> ids(const std::vector<LoopTree::RunPtr>& runs) {
    std::vector<std::string> out;
    for (const auto& run : runs)
      out.push_back(run->id());
    return out;
  }

  NoEngine engine_;
  LoopTree tree_;
};

using Ids = std::vector<std::string>;

TEST_F(LoopTreeTest, ChildrenComeInCreationOrderAndTheCurrentGenerationLeavesOutOldAndInvalidated) {
  add("p1", "plan", "", 1, LoopStatus::waiting,
      [](LoopSpec&, LoopProgress& progress) { progress.generation = 1; });
  // Added out of creation order: lists follow seq, not the order of adding.
  add("p1-s3", "spec", "p1", 4, LoopStatus::invalidated,
      [](LoopSpec& spec, LoopProgress&) { spec.generation = 1; });
  add("p1-s2", "spec", "p1", 3, LoopStatus::running,
      [](LoopSpec& spec, LoopProgress&) { spec.generation = 1; });
  add("p1-s1", "spec", "p1", 2, LoopStatus::completed);  // generation 0: before an iterate

  EXPECT_EQ(ids(tree_.children_of("p1", false)), (Ids{"p1-s1", "p1-s2", "p1-s3"}));
  EXPECT_EQ(ids(tree_.children_of("p1", true)), (Ids{"p1-s2"}));
  EXPECT_EQ(tree_.children_ids("p1"), (Ids{"p1-s1", "p1-s2", "p1-s3"}));
  EXPECT_TRUE(tree_.children_of("p1-s2", false).empty());
  EXPECT_TRUE(tree_.children_of("nope", false).empty());
  EXPECT_EQ(tree_.run_of("p1-s2")->id(), "p1-s2");
  EXPECT_EQ(tree_.run_of("p9"), nullptr);
}

TEST_F(LoopTreeTest, DescendantsAreEveryLevelBelowAndAncestorsGoUpNearestFirst) {
  add("p1", "plan", "", 1, LoopStatus::waiting);
  add("p1-s1", "spec", "p1", 2, LoopStatus::waiting);
  add("p1-s1-ph1", "phase", "p1-s1", 3, LoopStatus::waiting);
  auto code = add("p1-s1-ph1-c1", "code", "p1-s1-ph1", 5, LoopStatus::running);
  add("p1-s2", "spec", "p1", 4, LoopStatus::queued);
  add("c9", "code", "", 6, LoopStatus::running);

  EXPECT_EQ(ids(tree_.descendants_of("p1")), (Ids{"p1-s1", "p1-s1-ph1", "p1-s2", "p1-s1-ph1-c1"}));
  EXPECT_EQ(ids(tree_.descendants_of("p1-s1")), (Ids{"p1-s1-ph1", "p1-s1-ph1-c1"}));
  EXPECT_EQ(ids(tree_.ancestors_of(*code)), (Ids{"p1-s1-ph1", "p1-s1", "p1"}));
  EXPECT_TRUE(tree_.ancestors_of(*tree_.run_of("c9")).empty());
}

TEST_F(LoopTreeTest, ParentageThatLoopsBackOnItselfEndsInsteadOfHanging) {
  // Only a store edited by hand has this; the walk upwards still ends.
  auto a = add("x-a", "spec", "x-b", 1, LoopStatus::waiting);
  add("x-b", "spec", "x-a", 2, LoopStatus::waiting);
  EXPECT_LE(tree_.ancestors_of(*a).size(), 66u);
  EXPECT_FALSE(tree_.is_stale(*a));
  EXPECT_EQ(ids(tree_.descendants_of("x-a")), (Ids{"x-b"})) << "each loop once, the walk ends";
}

TEST_F(LoopTreeTest, ALoopIsStaleUnderAnInvalidatedLoopOrBehindAnAncestorsGeneration) {
  add("p1", "plan", "", 1, LoopStatus::waiting,
      [](LoopSpec&, LoopProgress& progress) { progress.generation = 2; });
  add("p1-s1", "spec", "p1", 2, LoopStatus::waiting,
      [](LoopSpec& spec, LoopProgress&) { spec.generation = 1; });
  auto old_phase = add("p1-s1-ph1", "phase", "p1-s1", 3, LoopStatus::waiting);
  auto current = add("p1-s2", "spec", "p1", 4, LoopStatus::waiting,
                     [](LoopSpec& spec, LoopProgress&) { spec.generation = 2; });
  add("p1-s2-ph1", "phase", "p1-s2", 5, LoopStatus::invalidated,
      [](LoopSpec& spec, LoopProgress&) { spec.generation = 0; });
  auto under_invalidated = add("p1-s2-ph1-c1", "code", "p1-s2-ph1", 6, LoopStatus::queued);

  EXPECT_TRUE(tree_.is_stale(*old_phase)) << "its spec is of an older generation of the plan";
  EXPECT_FALSE(tree_.is_stale(*current));
  EXPECT_TRUE(tree_.is_stale(*under_invalidated));
}

TEST_F(LoopTreeTest, ChildIdsKeepCountingAndIgnoreIdsThatDoNotEndInACount) {
  add("p1", "plan", "", 1, LoopStatus::waiting);
  add("p1-s1", "spec", "p1", 2, LoopStatus::completed);
  add("p1-s3", "spec", "p1", 3, LoopStatus::invalidated);  // an older generation's
  // Ids a hand-edited store may hold: no count, or one too long for a number.
  add("p1-s", "spec", "p1", 4, LoopStatus::failed);
  add("p1-s99999999999999999999999", "spec", "p1", 5, LoopStatus::failed);
  add("p1-sx", "spec", "p1", 6, LoopStatus::failed);
  add("p2-s7", "spec", "p2", 7, LoopStatus::failed);  // another parent's

  EXPECT_EQ(tree_.next_child_id("p1", "s", 0), "p1-s4");
  EXPECT_EQ(tree_.next_child_id("p1", "s", 2), "p1-s6");
  EXPECT_EQ(tree_.next_child_id("p1", "m", 0), "p1-m1");
  EXPECT_EQ(tree_.next_child_id("p1-s1", "ph", 0), "p1-s1-ph1");
}

TEST_F(LoopTreeTest, AQueuedLoopWaitsForItsParentThenForEachDependencyToBeMerged) {
  add("p1", "plan", "", 1, LoopStatus::running);
  add("p1-s1", "spec", "p1", 2, LoopStatus::completed);
  auto second = add("p1-s2", "spec", "p1", 3, LoopStatus::queued,
                    [](LoopSpec& spec, LoopProgress&) { spec.depends_on = {"p1-s1"}; });
  EXPECT_EQ(tree_.unmet_dependency(*second), "p1") << "the plan is not waiting for children yet";

  add("p1", "plan", "", 1, LoopStatus::waiting);  // replaces the running plan
  EXPECT_EQ(tree_.unmet_dependency(*second), "p1-s1") << "completed but not merged";

  add("p1-s1", "spec", "p1", 2, LoopStatus::completed, [](LoopSpec&, LoopProgress& progress) {
    progress.merged = {{"into", "loop/p1"}, {"commit", "abc"}};
  });
  EXPECT_EQ(tree_.unmet_dependency(*second), "");

  auto orphan = add("p1-s9", "spec", "p1", 9, LoopStatus::queued,
                    [](LoopSpec& spec, LoopProgress&) { spec.depends_on = {"p1-s404"}; });
  EXPECT_EQ(tree_.unmet_dependency(*orphan), "p1-s404");
}

TEST_F(LoopTreeTest, SpendAddsUpByPlanAndRunningLoopsCountByType) {
  auto spent = [](double usd) {
    return [usd](LoopSpec&, LoopProgress& progress) { progress.spend.usd = usd; };
  };
  add("p1", "plan", "", 1, LoopStatus::waiting, spent(1.0));
  add("p1-s1", "spec", "p1", 2, LoopStatus::running, spent(2.0));
  add("p1-s2", "spec", "p1", 3, LoopStatus::queued, spent(0.5));
  add("c4", "code", "", 4, LoopStatus::running, [](LoopSpec& spec, LoopProgress& progress) {
    spec.plan_id.clear();
    progress.spend.usd = 4.0;
  });

  EXPECT_DOUBLE_EQ(tree_.tree_spend("p1").usd, 3.5);
  EXPECT_DOUBLE_EQ(tree_.total_spend().usd, 7.5);
  EXPECT_EQ(tree_.running_models(), 2);
  EXPECT_EQ(tree_.running_models_of_type("spec"), 1);
  EXPECT_EQ(tree_.running_models_of_type("phase"), 0);
  EXPECT_EQ(tree_.count_with_status(LoopStatus::queued), 1u);
  EXPECT_NE(tree_.plan_budget("p1"), nullptr);
  EXPECT_EQ(tree_.plan_budget("p7"), nullptr);
  EXPECT_EQ(ids(tree_.in_creation_order(true)), (Ids{"p1", "p1-s1", "p1-s2", "c4"}));
}

TEST_F(LoopTreeTest, DeletedLoopsAreLeftOutOfTheCreationOrderUnlessAskedFor) {
  add("c1", "code", "", 1, LoopStatus::completed,
      [](LoopSpec&, LoopProgress& progress) { progress.deleted = true; });
  add("c2", "code", "", 2, LoopStatus::running);
  EXPECT_EQ(ids(tree_.in_creation_order(false)), (Ids{"c2"}));
  EXPECT_EQ(ids(tree_.in_creation_order(true)), (Ids{"c1", "c2"}));
}

// ---- check_rerun ----

std::string refusal(const Result<std::vector<LoopTree::RunPtr>>& checked) {
  if (checked) return "(allowed)";
  return checked.error().message + " | " + checked.error().hint;
}

TEST_F(LoopTreeTest, ACompletedChildIsNotReRunItsParentIs) {
  add("p1", "plan", "", 1, LoopStatus::waiting);
  add("p1-s1", "spec", "p1", 2, LoopStatus::waiting);
  auto code = add("p1-s1-c1", "code", "p1-s1", 3, LoopStatus::completed);
  auto spec = tree_.run_of("p1-s1");
  const std::string why = refusal(check_rerun(tree_, code));
  EXPECT_NE(why.find("completed; its work is being merged into p1-s1"), std::string::npos) << why;
  EXPECT_NE(why.find("looprctl loop rerun p1-s1"), std::string::npos) << why;
  // A spec right under the plan: the plan is iterated instead.
  add("p1-s2", "spec", "p1", 4, LoopStatus::completed);
  const std::string spec_why = refusal(check_rerun(tree_, tree_.run_of("p1-s2")));
  EXPECT_NE(spec_why.find("looprctl plan iterate p1"), std::string::npos) << spec_why;
  auto allowed = check_rerun(tree_, spec);
  ASSERT_TRUE(allowed) << refusal(allowed);
  EXPECT_TRUE(allowed->empty()) << "a plan still being carried out brings nothing back";
}

TEST_F(LoopTreeTest, EachStateThatForbidsAReRunSaysWhatToDoInstead) {
  add("p1", "plan", "", 1, LoopStatus::waiting);
  auto queued = add("p1-s1", "spec", "p1", 2, LoopStatus::queued,
                    [](LoopSpec&, LoopProgress& p) { p.queue_reason = "waiting for p1-s0"; });
  EXPECT_NE(refusal(check_rerun(tree_, queued)).find("waiting for p1-s0"), std::string::npos);
  auto spent = add("p1-s2", "spec", "p1", 3, LoopStatus::budget_exhausted);
  EXPECT_NE(refusal(check_rerun(tree_, spent)).find("larger budget"), std::string::npos);
  auto gone = add("p1-s3", "spec", "p1", 4, LoopStatus::failed,
                  [](LoopSpec&, LoopProgress& p) { p.worktree_removed = true; });
  EXPECT_NE(refusal(check_rerun(tree_, gone)).find("worktree was removed"), std::string::npos);
  auto deleted = add("p1-s4", "spec", "p1", 5, LoopStatus::failed,
                     [](LoopSpec&, LoopProgress& p) { p.deleted = true; });
  EXPECT_NE(refusal(check_rerun(tree_, deleted)).find("was deleted"), std::string::npos);
  auto invalidated = add("p1-s5", "spec", "p1", 6, LoopStatus::invalidated);
  EXPECT_NE(refusal(check_rerun(tree_, invalidated)).find("plan iterate p1"), std::string::npos);
  for (const auto* id : {"p1-s1", "p1-s2", "p1-s3", "p1-s4", "p1-s5"}) {
    auto checked = check_rerun(tree_, tree_.run_of(id));
    ASSERT_FALSE(checked) << id;
    EXPECT_EQ(checked.error().details.value("rpc_code", 0), 1002) << id;
  }
}

TEST_F(LoopTreeTest, AReRunInAnEndedPlanBringsBackWhatTheEndStoppedButNotAnotherFailure) {
  add("p1", "plan", "", 1, LoopStatus::failed,
      [](LoopSpec&, LoopProgress& p) { p.status_before_tree_ended = "waiting"; });
  auto failed = add("p1-s1", "spec", "p1", 2, LoopStatus::failed,
                    [](LoopSpec&, LoopProgress& p) { p.status_reason = "its model gave up"; });
  add("p1-s2", "spec", "p1", 3, LoopStatus::cancelled,
      [](LoopSpec&, LoopProgress& p) { p.status_before_tree_ended = "queued"; });
  auto allowed = check_rerun(tree_, failed);
  ASSERT_TRUE(allowed) << refusal(allowed);
  EXPECT_EQ(ids(*allowed), (Ids{"p1-s2"})) << "the plan above comes back with the re-run itself";

  // A second loop that failed on its own, not under the one re-run: this
  // re-run would only end the plan again.
  add("p1-s3", "spec", "p1", 4, LoopStatus::failed,
      [](LoopSpec&, LoopProgress& p) { p.status_reason = "tests failed"; });
  const std::string why = refusal(check_rerun(tree_, failed));
  EXPECT_NE(why.find("p1-s3 ended failed (tests failed) and is not under p1-s1"), std::string::npos)
      << why;
  EXPECT_NE(why.find("looprctl loop rerun p1-s3"), std::string::npos) << why;
}

}  // namespace
}  // namespace loopr::loops
