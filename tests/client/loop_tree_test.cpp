// The tree of loops (client/loop_tree.hpp) and following a plan's tree or a
// plan loop (client/loop_follow.hpp), in process.
#include "client/loop_tree.hpp"

#include <gtest/gtest.h>
#include <rapidcheck.h>
#include <rapidcheck/gtest.h>

#include <map>
#include <sstream>

#include "client/control_client.hpp"
#include "client/loop_follow.hpp"
#include "tests/client/fake_daemon.hpp"
#include "tests/client/loop_samples.hpp"

namespace loopr::test {
namespace {

using nlohmann::json;

const std::string kBranch = "\xe2\x94\x9c\xe2\x94\x80 ";
const std::string kLast = "\xe2\x94\x94\xe2\x94\x80 ";
const std::string kUnder = "\xe2\x94\x82  ";

// "lead + id" of each row.
std::vector<std::string> drawn(const json& loops) {
  std::vector<std::string> rows;
  for (const auto& row : client::loop_tree_rows(loops))
    rows.push_back(row.lead + row.loop->at("id").get<std::string>());
  return rows;
}

json node(const std::string& id, const std::string& parent, std::vector<std::string> children,
          std::int64_t created_ms) {
  return a_plan_loop(id, "spec", "running", parent, std::move(children), created_ms);
}

TEST(LoopTree, ChildrenFollowTheParentsOrderAndRootsTheirAge) {
  const json loops = {
      node("p2", "", {}, 300), node("p1-s2", "p1", {}, 200), node("p1-s1", "p1", {}, 210),
      // Not in p1's children (a daemon that lags): after the listed ones.
      node("p1-s3", "p1", {}, 220),
      // Its parent is not in the list (filtered out): a root.
      node("p7-s1", "p7", {}, 100), node("p1", "", {"p1-s1", "p1-gone", "p1-s2", "p1-s1"}, 150),
      // Repeated id and non-loops: left out.
      node("p1-s2", "", {}, 0), json(5), json{{"id", ""}}, json{{"id", 7}}};
  EXPECT_EQ(drawn(loops), (std::vector<std::string>{"p7-s1", "p1", kBranch + "p1-s1",
                                                    kBranch + "p1-s2", kLast + "p1-s3", "p2"}));
}

TEST(LoopTree, DeepTreesDrawTheLinesOfOpenAncestors) {
  const json loops = {
      node("p1", "", {"p1-s1", "p1-s2"}, 1),           node("p1-s1", "p1", {"p1-s1-ph1"}, 2),
      node("p1-s1-ph1", "p1-s1", {"p1-s1-ph1-c1"}, 3), node("p1-s1-ph1-c1", "p1-s1-ph1", {}, 4),
      node("p1-s2", "p1", {"p1-s2-ph1"}, 5),           node("p1-s2-ph1", "p1-s2", {}, 6)};
  EXPECT_EQ(drawn(loops),
            (std::vector<std::string>{"p1", kBranch + "p1-s1", kUnder + kLast + "p1-s1-ph1",
                                      kUnder + "   " + kLast + "p1-s1-ph1-c1", kLast + "p1-s2",
                                      "   " + kLast + "p1-s2-ph1"}));
  const auto rows = client::loop_tree_rows(loops);
  ASSERT_EQ(rows.size(), 6u);
  EXPECT_EQ(rows[3].depth, 3u);
}

TEST(LoopTree, ParentCyclesAndSelfParentsStillShowEveryLoopOnce) {
  const json loops = {node("a", "b", {"b"}, 1), node("b", "a", {"a"}, 2), node("c", "c", {"c"}, 3)};
  const auto rows = drawn(loops);
  EXPECT_EQ(rows, (std::vector<std::string>{"c", "a", kLast + "b"}));
}

TEST(LoopTree, IndentationStopsGrowingPastTheCap) {
  json loops = json::array();
  const std::size_t depth = client::kMaxTreeDepth + 10;
  for (std::size_t i = 0; i <= depth; ++i) {
    loops.push_back(node("n" + std::to_string(i), i == 0 ? "" : "n" + std::to_string(i - 1),
                         {"n" + std::to_string(i + 1)}, static_cast<std::int64_t>(i)));
  }
  const auto rows = client::loop_tree_rows(loops);
  ASSERT_EQ(rows.size(), depth + 1);
  EXPECT_EQ(rows.back().depth, depth);
  EXPECT_EQ(rows.back().lead, rows[client::kMaxTreeDepth + 1].lead);
  EXPECT_EQ(rows[client::kMaxTreeDepth + 1].lead, rows[client::kMaxTreeDepth].lead);
}

// Any forest: every loop once, each child after its parent, one deeper.
RC_GTEST_PROP(LoopTree, EveryLoopOnceUnderItsParent, ()) {
  const auto count = *rc::gen::inRange<std::size_t>(0, 40);
  json loops = json::array();
  std::map<std::string, std::string> parent_of;
  for (std::size_t i = 0; i < count; ++i) {
    const std::string id = "l" + std::to_string(i);
    // A parent among the earlier loops, a missing one, or none.
    std::string parent;
    const int pick = *rc::gen::inRange(0, 4);
    if (pick == 1 && i > 0) parent = "l" + std::to_string(*rc::gen::inRange<std::size_t>(0, i));
    if (pick == 2) parent = "missing";
    parent_of[id] = parent;
    loops.push_back(node(id, parent, {}, *rc::gen::inRange<std::int64_t>(0, 5)));
  }
  for (json& loop : loops) {
    for (const auto& [id, parent] : parent_of) {
      if (parent == loop["id"] && *rc::gen::arbitrary<bool>()) loop["children"].push_back(id);
    }
  }
  const auto rows = client::loop_tree_rows(loops);
  RC_ASSERT(rows.size() == count);
  std::map<std::string, std::size_t> at;
  for (std::size_t i = 0; i < rows.size(); ++i) {
    const std::string id = rows[i].loop->at("id").get<std::string>();
    RC_ASSERT(at.count(id) == 0u);
    at[id] = i;
  }
  for (std::size_t i = 0; i < rows.size(); ++i) {
    const std::string parent = parent_of[rows[i].loop->at("id").get<std::string>()];
    if (parent.empty() || parent == "missing") {
      RC_ASSERT(rows[i].depth == 0u);
      continue;
    }
    RC_ASSERT(at[parent] < i);
    RC_ASSERT(rows[at[parent]].depth + 1 == rows[i].depth);
  }
}

TEST(LoopTree, StatusWithReason) {
  json loop = a_plan_loop("p1-s2", "spec", "queued", "p1");
  loop["queue_reason"] = "waiting for a slot";
  EXPECT_EQ(client::status_with_reason(loop, 40), "queued (waiting for a slot)");
  loop["status"] = "blocked";
  loop["status_reason"] = "merge conflict in src/a.c, src/b.c\nresolver p1-s2-m1 failed";
  EXPECT_EQ(client::status_with_reason(loop, 40),
            "blocked (merge conflict in src/a.c, src/b.c...)");
  EXPECT_EQ(client::status_with_reason(loop, 10), "blocked (merge c...)");
  loop["status"] = "completed";
  loop["status_reason"] = "validation passed";
  EXPECT_EQ(client::status_with_reason(loop, 40), "completed");
  EXPECT_EQ(client::status_with_reason(loop, 40, true), "completed (validation passed)");
  loop["deleted"] = true;
  EXPECT_EQ(client::status_with_reason(loop, 40), "completed (deleted)");
  loop["deleted"] = false;
  loop["status"] = "budget_exhausted";
  loop["status_reason"] = "usd: \x1b[2J$5.00 spent";
  EXPECT_EQ(client::status_with_reason(loop, 40), "budget_exhausted (usd: \\x1b[2J$5.00 spent)");
  EXPECT_EQ(client::status_with_reason(json::object(), 40), "-");
}

TEST(LoopTree, AnyShapeRendersWithoutThrowing) {
  const std::vector<json> shapes = {
      nullptr,
      "text",
      json::array({1, "x"}),
      {{"id", "a"}, {"children", "b"}, {"parent_id", 5}},
      {{"id", "a"}, {"children", {1, nullptr, "a"}}, {"usage", "lots"}, {"merged", false}},
      {{"id", "p1"}, {"status", 3}, {"created_at_ms", "x"}, {"updated_at_ms", -1}}};
  for (const json& shape : shapes) {
    std::ostringstream out;
    EXPECT_NO_THROW(client::print_loop_tree(json::array({shape, shape}), out)) << shape;
    EXPECT_NO_THROW(client::print_loop_tree(shape, out)) << shape;
    client::PlanTreePrinter printer("p1", false, out);
    for (const char* event :
         {"loop.updated", "loop.merged", "loop.merge_conflict", "plan.approved"})
      EXPECT_NO_THROW(printer.event({event, shape})) << shape;
    EXPECT_NO_THROW(printer.snapshot(shape)) << shape;
    EXPECT_NO_THROW(printer.snapshot({{"plan", shape}, {"tree", {shape}}})) << shape;
  }
}

// ---- following a plan ----

TEST(PlanTreeFollow, KnownLoopsPrintOnlyWhenTheyChange) {
  std::ostringstream out;
  client::PlanTreePrinter printer("p1", false, out);
  printer.known(a_plan_loop("p1", "plan", "waiting", ""));
  EXPECT_EQ(printer.event({"plan.approved", {{"plan", a_plan_loop("p1", "plan", "waiting", "")}}}),
            std::nullopt);
  json queued = a_plan_loop("p1-s1", "spec", "queued", "p1");
  queued["queue_reason"] = "waiting for a slot";
  printer.event({"loop.updated", {{"loop", queued}}});
  printer.event({"loop.updated", {{"loop", queued}}});
  queued["queue_reason"] = "waiting for p1-s0";
  printer.event({"loop.updated", {{"loop", queued}}});
  // p10 is another plan, though its id starts with "p1".
  printer.event({"loop.updated", {{"loop", a_plan_loop("p10-s1", "spec", "running", "p10")}}});
  printer.event({"loop.merged", {{"loop_id", "p10-s1"}, {"into", "loop/p10"}, {"commit", "ab"}}});
  EXPECT_EQ(out.str(),
            "p1-s1: queued (waiting for a slot)\n"
            "p1-s1: queued (waiting for p1-s0)\n");
  EXPECT_EQ(printer.event({"plan.awaiting_approval",
                           {{"plan", a_plan_loop("p1", "plan", "awaiting_approval", "")}}}),
            std::optional<std::string>("awaiting_approval"));
}

TEST(PlanTreeFollow, ASnapshotPrintsWhatTheEventsMissed) {
  std::ostringstream out;
  client::PlanTreePrinter printer("p1", false, out);
  printer.known(a_plan_loop("p1", "plan", "waiting", ""));
  printer.event({"loop.updated", {{"loop", a_plan_loop("p1-s1", "spec", "running", "p1")}}});
  const json plan_get = {
      {"plan", a_plan_loop("p1", "plan", "waiting", "")},
      {"tree",
       {a_plan_loop("p1-s1", "spec", "running", "p1"), a_plan_loop("p1-s2", "spec", "queued", "p1"),
        a_plan_loop("p2-s1", "spec", "running", "p2")}}};
  EXPECT_EQ(printer.snapshot(plan_get), std::nullopt);
  EXPECT_EQ(out.str(), "p1-s1: running\np1-s2: queued\n");
}

TEST(PlanTreeFollow, AsksPlanGetWhenTheEventsAreQuiet) {
  FakeDaemon fake;
  fake.answer("events.subscribe", {{"topics", json::array()}});
  json cancelled = a_plan_loop("p1", "plan", "cancelled", "");
  cancelled["status_reason"] = "cancelled by the user";
  fake.answer("plan.get",
              {{"plan", cancelled}, {"tree", {a_plan_loop("p1-s1", "spec", "cancelled", "p1")}}});
  fake.start();
  auto client = client::ControlClient::open(fake.socket_path());
  ASSERT_TRUE(client) << client.error().message;
  ASSERT_TRUE(client->call("events.subscribe", {{"topics", {"plan"}}}));
  std::ostringstream out;
  std::ostringstream err;
  client::PlanTreePrinter printer("p1", false, out);
  printer.known(a_plan_loop("p1", "plan", "waiting", ""));
  auto status =
      client::follow_plan(*client, printer, client::FollowOptions{client::Milliseconds(20)}, err);
  ASSERT_TRUE(status) << status.error().message;
  EXPECT_EQ(*status, "cancelled");
  EXPECT_EQ(fake.requests("plan.get").size(), 1u);
  EXPECT_EQ(fake.requests("plan.get")[0].params, (json{{"id", "p1"}}));
  EXPECT_EQ(out.str(), "p1-s1: cancelled\np1: cancelled (cancelled by the user)\n");
}

// ---- following a plan loop until it awaits approval ----

TEST(LoopFollow, StopsAtAStatusItWasToldToStopAt) {
  std::ostringstream out;
  client::LoopPrinter printer("p1", client::FollowStyle::live, false, out);
  printer.set_status("running");
  EXPECT_FALSE(printer.stops_at("awaiting_approval"));
  printer.stop_at("awaiting_approval");
  EXPECT_TRUE(printer.stops_at("awaiting_approval"));
  EXPECT_TRUE(printer.stops_at("rejected"));
  EXPECT_FALSE(printer.stops_at("waiting"));
  EXPECT_EQ(printer.event({"loop.updated", {{"loop", a_plan_loop("p1", "plan", "waiting", "")}}}),
            std::nullopt);
  EXPECT_EQ(printer.event(
                {"loop.updated", {{"loop", a_plan_loop("p1", "plan", "awaiting_approval", "")}}}),
            std::optional<std::string>("awaiting_approval"));
  EXPECT_EQ(out.str(), "status: waiting\n");
}

TEST(LoopFollow, AsksLoopGetWhenQuietAndStopsAtAwaitingApproval) {
  FakeDaemon fake;
  fake.answer("loop.get", {{"loop", a_plan_loop("p1", "plan", "awaiting_approval", "")}});
  fake.start();
  auto client = client::ControlClient::open(fake.socket_path());
  ASSERT_TRUE(client) << client.error().message;
  std::ostringstream out;
  std::ostringstream err;
  client::LoopPrinter printer("p1", client::FollowStyle::live, false, out);
  printer.stop_at("awaiting_approval");
  auto status =
      client::follow_loop(*client, printer, client::FollowOptions{client::Milliseconds(20)}, err);
  ASSERT_TRUE(status) << status.error().message;
  EXPECT_EQ(*status, "awaiting_approval");
}

}  // namespace
}  // namespace loopr::test
