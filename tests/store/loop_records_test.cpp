// The loops and their journal in the store: a loop and its first step land
// together, a step and the status it explains land together, and both
// survive a reopen.
#include <gtest/gtest.h>

#include "store/store.hpp"
#include "tests/support/temp_tree.hpp"

namespace loopr::store {
namespace {

using nlohmann::json;

class LoopRecordsTest : public ::testing::Test {
 protected:
  std::string state_dir() { return tree_.path("state"); }
  LoopRow row(const std::string& id, std::int64_t seq) {
    LoopRow r;
    r.id = id;
    r.seq = seq;
    r.type = "code";
    r.status = "running";
    r.spec = {{"task", "fix the test"}, {"repo", "/src/app"}};
    r.state = {{"iteration", 0}};
    r.created_at_ms = 1000 + seq;
    r.updated_at_ms = 1000 + seq;
    return r;
  }
  test::TempTree tree_;
};

TEST_F(LoopRecordsTest, ALoopAndItsFirstStepAreStoredTogetherAndSurviveReopen) {
  {
    Store store = Store::open(state_dir());
    EXPECT_EQ(*store.next_loop_seq(), 1);
    LoopStep created{0, "l1", 0, "created", {{"by", "test"}}, 5};
    ASSERT_TRUE(store.insert_loop(row("l1", 1), &created).ok());
    EXPECT_EQ(*store.next_loop_seq(), 2);
  }
  Store store = Store::open(state_dir());
  auto found = store.find_loop("l1");
  ASSERT_TRUE(found.ok());
  ASSERT_TRUE(found->has_value());
  EXPECT_EQ(**found, row("l1", 1));
  auto steps = store.loop_steps("l1");
  ASSERT_TRUE(steps.ok());
  ASSERT_EQ(steps->size(), 1u);
  EXPECT_EQ(steps->at(0).kind, "created");
  EXPECT_EQ(steps->at(0).data, (json{{"by", "test"}}));
}

TEST_F(LoopRecordsTest, ADuplicateIdIsRefusedAndNothingOfItIsKept) {
  Store store = Store::open(state_dir());
  ASSERT_TRUE(store.insert_loop(row("l1", 1)).ok());
  LoopStep step{0, "l1", 0, "created", json::object(), 0};
  auto again = store.insert_loop(row("l1", 2), &step);
  ASSERT_FALSE(again.ok());
  EXPECT_EQ(again.error().code, errc::invalid_arguments);
  EXPECT_EQ(*store.count_loop_steps("l1"), 0);
}

TEST_F(LoopRecordsTest, AStepAndTheStatusItExplainsLandTogether) {
  Store store = Store::open(state_dir());
  ASSERT_TRUE(store.insert_loop(row("l1", 1)).ok());
  LoopRow done = row("l1", 1);
  done.status = "completed";
  done.state = {{"iteration", 2}};
  LoopStep step{0, "l1", 2, "status", {{"status", "completed"}}, 0};
  auto id = store.append_loop_step(step, &done);
  ASSERT_TRUE(id.ok());
  EXPECT_GT(*id, 0);
  EXPECT_EQ((*store.find_loop("l1"))->status, "completed");

  // A step for a loop that does not exist fails whole: no orphan step.
  LoopRow ghost = row("ghost", 9);
  LoopStep orphan{0, "l1", 3, "note", json::object(), 0};
  auto refused = store.append_loop_step(orphan, &ghost);
  ASSERT_FALSE(refused.ok());
  EXPECT_EQ(refused.error().code, errc::not_found);
  EXPECT_EQ(*store.count_loop_steps("l1"), 1);
}

TEST_F(LoopRecordsTest, TheJournalIsReadByIterationAndFromAPoint) {
  Store store = Store::open(state_dir());
  ASSERT_TRUE(store.insert_loop(row("l1", 1)).ok());
  ASSERT_TRUE(store.insert_loop(row("l2", 2)).ok());
  std::vector<std::int64_t> ids;
  for (int i = 0; i < 6; ++i) {
    LoopStep step{0, "l1", i / 2, "turn", {{"n", i}}, 0};
    ids.push_back(*store.append_loop_step(step));
    ASSERT_TRUE(store.append_loop_step(LoopStep{0, "l2", 0, "other", json::object(), 0}).ok());
  }
  auto second = store.loop_steps("l1", 1);
  ASSERT_EQ(second->size(), 2u);
  EXPECT_EQ(second->at(0).data["n"], 2);
  auto after = store.loop_steps("l1", std::nullopt, ids[3]);
  ASSERT_EQ(after->size(), 2u);
  EXPECT_EQ(after->at(0).data["n"], 4);
  auto limited = store.loop_steps("l1", std::nullopt, 0, 3);
  EXPECT_EQ(limited->size(), 3u);
  EXPECT_EQ(store.all_loops()->size(), 2u);
}

TEST_F(LoopRecordsTest, OversizedFieldsAndNonObjectDocumentsAreRefused) {
  Store store = Store::open(state_dir());
  LoopRow big = row(std::string(300, 'x'), 1);
  EXPECT_EQ(store.insert_loop(big).error().code, errc::too_large);
  LoopRow bad = row("l1", 1);
  bad.spec = json::array();
  EXPECT_FALSE(store.insert_loop(bad).ok());
  EXPECT_FALSE(store.find_loop("l1")->has_value());
}

}  // namespace
}  // namespace loopr::store
