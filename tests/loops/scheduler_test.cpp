// Scheduler: which queued loops start (type priority, fairness across plans,
// age; the total and per-type limits, 0 meaning none) and ProviderSlots (a
// FIFO semaphore per provider whose waiters can give up).
#include "loops/scheduler.hpp"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <asio/co_spawn.hpp>
#include <asio/detached.hpp>
#include <asio/io_context.hpp>
#include <map>
#include <memory>
#include <string>
#include <vector>

namespace loopr::loops {
namespace {

using ::testing::ElementsAre;

using Ids = std::vector<std::string>;

ScheduledLoop loop(std::string id, std::string type, std::string plan_id, std::int64_t seq) {
  return ScheduledLoop{std::move(id), std::move(type), std::move(plan_id), seq};
}

config::SchedulerSettings unlimited() {
  config::SchedulerSettings limits;
  limits.max_running = 0;
  return limits;
}

TEST(TypePriority, CodeFirstThenPhaseSpecPlanThenAnythingElse) {
  EXPECT_EQ(type_priority("code"), 0);
  EXPECT_EQ(type_priority("phase"), 1);
  EXPECT_EQ(type_priority("spec"), 2);
  EXPECT_EQ(type_priority("plan"), 3);
  EXPECT_EQ(type_priority("review"), 4);
  EXPECT_EQ(type_priority(""), 4);
}

TEST(PickLoops, TheNearerToCodeTheSooner) {
  const std::vector<ScheduledLoop> ready = {
      loop("p1", "plan", "", 1), loop("p2-s1", "spec", "p2", 2), loop("x", "review", "", 0),
      loop("p2-s1-ph1", "phase", "p2", 3), loop("p2-s1-ph1-c1", "code", "p2", 4)};
  EXPECT_THAT(pick_loops_to_start(ready, {}, unlimited()),
              ElementsAre("p2-s1-ph1-c1", "p2-s1-ph1", "p2-s1", "p1", "x"));
}

TEST(PickLoops, OlderFirstWithinATypeAndAPlan) {
  const std::vector<ScheduledLoop> ready = {
      loop("c5", "code", "p1", 5), loop("c3", "code", "p1", 3), loop("c4", "code", "p1", 4)};
  EXPECT_THAT(pick_loops_to_start(ready, {}, unlimited()), ElementsAre("c3", "c4", "c5"));
}

TEST(PickLoops, ThePlanWithFewerLoopsRunningGoesFirstCountingThoseJustPicked) {
  const std::vector<ScheduledLoop> running = {loop("p1-a", "code", "p1", 0),
                                              loop("p1-b", "spec", "p1", 0)};
  const std::vector<ScheduledLoop> ready = {
      loop("p1-c1", "code", "p1", 1), loop("p1-c2", "code", "p1", 2),
      loop("p2-c10", "code", "p2", 10), loop("p2-c11", "code", "p2", 11),
      loop("p2-c12", "code", "p2", 12)};
  // p2 has none running: two of its loops, then p1 (2 running) and p2 (2
  // picked) tie and the older goes, then p2 has fewer again.
  EXPECT_THAT(pick_loops_to_start(ready, running, unlimited()),
              ElementsAre("p2-c10", "p2-c11", "p1-c1", "p2-c12", "p1-c2"));
}

TEST(PickLoops, TypeBeatsFairness) {
  const std::vector<ScheduledLoop> running = {loop("p1-a", "code", "p1", 0),
                                              loop("p1-b", "code", "p1", 0)};
  const std::vector<ScheduledLoop> ready = {loop("p2-s1", "spec", "p2", 1),
                                            loop("p1-c3", "code", "p1", 9)};
  EXPECT_THAT(pick_loops_to_start(ready, running, unlimited()), ElementsAre("p1-c3", "p2-s1"));
}

TEST(PickLoops, ALoopOutsideAPlanIsItsOwnPlan) {
  // "solo" is running outside any plan; it does not count against "a" or
  // "b", which are each their own plan with nothing running.
  const std::vector<ScheduledLoop> running = {loop("solo", "code", "", 0),
                                              loop("p1-c1", "code", "p1", 1)};
  const std::vector<ScheduledLoop> ready = {loop("p1-c2", "code", "p1", 2),
                                            loop("a", "code", "", 5), loop("b", "code", "", 6)};
  EXPECT_THAT(pick_loops_to_start(ready, running, unlimited()), ElementsAre("a", "b", "p1-c2"));
}

TEST(PickLoops, TheTotalLimitCountsWhatRuns) {
  config::SchedulerSettings limits;
  limits.max_running = 4;
  const std::vector<ScheduledLoop> ready = {loop("c1", "code", "", 1), loop("c2", "code", "", 2)};
  const std::vector<ScheduledLoop> three = {loop("r1", "code", "", 0), loop("r2", "spec", "", 0),
                                            loop("r3", "plan", "", 0)};
  EXPECT_THAT(pick_loops_to_start(ready, three, limits), ElementsAre("c1"));
  const std::vector<ScheduledLoop> five = {loop("r1", "code", "", 0), loop("r2", "code", "", 0),
                                           loop("r3", "code", "", 0), loop("r4", "code", "", 0),
                                           loop("r5", "code", "", 0)};
  EXPECT_TRUE(pick_loops_to_start(ready, five, limits).empty());  // already above the limit
  EXPECT_THAT(pick_loops_to_start(ready, {}, limits), ElementsAre("c1", "c2"));
  limits.max_running = 1;
  EXPECT_THAT(pick_loops_to_start(ready, {}, limits), ElementsAre("c1"));
}

TEST(PickLoops, APerTypeLimitLeavesRoomForOtherTypes) {
  config::SchedulerSettings limits;
  limits.max_running = 3;
  limits.max_running_code = 1;
  const std::vector<ScheduledLoop> running = {loop("r1", "code", "p9", 0)};
  const std::vector<ScheduledLoop> ready = {loop("c1", "code", "p1", 1),
                                            loop("s1", "spec", "p1", 2), loop("p2", "plan", "", 3),
                                            loop("s2", "spec", "p3", 4)};
  // The code loop waits (its type is full); two others fill the total.
  EXPECT_THAT(pick_loops_to_start(ready, running, limits), ElementsAre("s1", "s2"));
}

TEST(PickLoops, APerTypeLimitCountsThoseJustPicked) {
  config::SchedulerSettings limits = unlimited();
  limits.max_running_code = 2;
  limits.max_running_plan = 1;
  const std::vector<ScheduledLoop> ready = {loop("c1", "code", "", 1), loop("c2", "code", "", 2),
                                            loop("c3", "code", "", 3), loop("p1", "plan", "", 4),
                                            loop("p2", "plan", "", 5), loop("s1", "spec", "", 6)};
  EXPECT_THAT(pick_loops_to_start(ready, {}, limits), ElementsAre("c1", "c2", "s1", "p1"));
  // Types without a limit of their own are bounded only by the total.
  EXPECT_EQ(limits.limit_for("spec"), 0);
}

TEST(PickLoops, ZeroMeansNoLimit) {
  std::vector<ScheduledLoop> ready;
  for (int i = 0; i < 50; ++i)
    ready.push_back(loop("c" + std::to_string(i), "code", "p1", i));
  const std::vector<std::string> picked = pick_loops_to_start(ready, {}, unlimited());
  ASSERT_EQ(picked.size(), 50u);
  EXPECT_EQ(picked.front(), "c0");
  EXPECT_EQ(picked.back(), "c49");
  EXPECT_TRUE(pick_loops_to_start({}, {}, unlimited()).empty());
}

// --- ProviderSlots ---------------------------------------------------------

// What the acquirers did: the order their acquire() returned in, and what
// they got (kept until the test drops it).
struct Acquirers {
  Ids returned;
  std::map<std::string, ProviderSlots::Slot> slots;
};

asio::awaitable<void> take(ProviderSlots& slots, std::string provider, std::int64_t limit,
                           std::string name, Acquirers& out,
                           std::shared_ptr<bool> abandoned = nullptr) {
  ProviderSlots::Slot slot = co_await slots.acquire(std::move(provider), limit, abandoned);
  out.returned.push_back(name);
  out.slots.emplace(name, std::move(slot));
}

// Runs every handler that is ready; the waiters' timers never expire by
// themselves, so this returns once everyone is waiting or done.
void settle(asio::io_context& io) {
  io.restart();
  io.poll();
}

TEST(ProviderSlots, TwoHoldTheThirdGetsTheSlotAfterARelease) {
  asio::io_context io;
  ProviderSlots slots(io);
  Acquirers got;
  for (const char* name : {"a", "b", "c", "d"})
    asio::co_spawn(io, take(slots, "anthropic", 2, name, got), asio::detached);
  settle(io);
  EXPECT_THAT(got.returned, ElementsAre("a", "b"));
  EXPECT_EQ(slots.in_flight("anthropic"), 2);
  EXPECT_EQ(slots.waiting("anthropic"), 2u);

  got.slots.erase("a");
  EXPECT_EQ(slots.in_flight("anthropic"), 2);  // handed straight to c
  settle(io);
  EXPECT_THAT(got.returned, ElementsAre("a", "b", "c"));
  EXPECT_EQ(slots.waiting("anthropic"), 1u);

  got.slots.erase("c");
  settle(io);
  EXPECT_THAT(got.returned, ElementsAre("a", "b", "c", "d"));
  EXPECT_EQ(slots.waiting("anthropic"), 0u);
  got.slots.clear();
  EXPECT_EQ(slots.in_flight("anthropic"), 0);
}

TEST(ProviderSlots, WaitersAreServedInTheOrderTheyAsked) {
  asio::io_context io;
  ProviderSlots slots(io);
  Acquirers got;
  const Ids names = {"a", "b", "c", "d", "e"};
  for (const std::string& name : names)
    asio::co_spawn(io, take(slots, "p", 1, name, got), asio::detached);
  settle(io);
  for (std::size_t i = 0; i < names.size(); ++i) {
    ASSERT_EQ(got.returned.size(), i + 1);
    EXPECT_EQ(got.returned.back(), names[i]);
    EXPECT_EQ(slots.in_flight("p"), 1);
    got.slots.erase(names[i]);
    settle(io);
  }
  EXPECT_EQ(got.returned, names);
  EXPECT_EQ(slots.in_flight("p"), 0);
}

TEST(ProviderSlots, ASlotMovedKeepsItsCountAndGivesItBackOnce) {
  asio::io_context io;
  ProviderSlots slots(io);
  Acquirers got;
  asio::co_spawn(io, take(slots, "p", 1, "a", got), asio::detached);
  settle(io);
  ASSERT_EQ(slots.in_flight("p"), 1);
  ProviderSlots::Slot moved = std::move(got.slots.at("a"));
  got.slots.clear();  // the moved-from Slot gives nothing back
  EXPECT_EQ(slots.in_flight("p"), 1);
  ProviderSlots::Slot other;
  other = std::move(moved);
  EXPECT_EQ(slots.in_flight("p"), 1);
  other = ProviderSlots::Slot();
  EXPECT_EQ(slots.in_flight("p"), 0);
}

TEST(ProviderSlots, AnAbandonedWaiterGivesUpWhenWokenAndTheNextOneGetsTheSlot) {
  asio::io_context io;
  ProviderSlots slots(io);
  Acquirers got;
  auto cancelled = std::make_shared<bool>(false);
  asio::co_spawn(io, take(slots, "p", 1, "a", got), asio::detached);
  asio::co_spawn(io, take(slots, "p", 1, "b", got, cancelled), asio::detached);
  asio::co_spawn(io, take(slots, "p", 1, "c", got), asio::detached);
  settle(io);
  EXPECT_THAT(got.returned, ElementsAre("a"));
  ASSERT_EQ(slots.waiting("p"), 2u);

  slots.wake_all();  // nobody gave up yet: everyone waits on
  settle(io);
  EXPECT_THAT(got.returned, ElementsAre("a"));
  EXPECT_EQ(slots.waiting("p"), 2u);

  *cancelled = true;
  slots.wake_all();
  settle(io);
  EXPECT_THAT(got.returned, ElementsAre("a", "b"));
  EXPECT_EQ(slots.waiting("p"), 1u);
  EXPECT_EQ(slots.in_flight("p"), 1);
  got.slots.erase("b");  // b's Slot is empty: giving it back changes nothing
  EXPECT_EQ(slots.in_flight("p"), 1);

  got.slots.erase("a");
  settle(io);
  EXPECT_THAT(got.returned, ElementsAre("a", "b", "c"));
  EXPECT_EQ(slots.in_flight("p"), 1);
  got.slots.clear();
  EXPECT_EQ(slots.in_flight("p"), 0);
}

TEST(ProviderSlots, AWaiterThatGaveUpIsPassedOverByARelease) {
  asio::io_context io;
  ProviderSlots slots(io);
  Acquirers got;
  auto cancelled = std::make_shared<bool>(false);
  asio::co_spawn(io, take(slots, "p", 1, "a", got), asio::detached);
  asio::co_spawn(io, take(slots, "p", 1, "b", got, cancelled), asio::detached);
  asio::co_spawn(io, take(slots, "p", 1, "c", got), asio::detached);
  settle(io);
  *cancelled = true;  // no wake_all: the release finds out
  got.slots.erase("a");
  settle(io);
  EXPECT_THAT(got.returned, ElementsAre("a", "b", "c"));
  EXPECT_EQ(slots.in_flight("p"), 1);  // c's
  EXPECT_EQ(slots.waiting("p"), 0u);
  got.slots.erase("c");
  EXPECT_EQ(slots.in_flight("p"), 0);
  got.slots.clear();
  EXPECT_EQ(slots.in_flight("p"), 0);
}

TEST(ProviderSlots, LimitZeroNeverWaits) {
  asio::io_context io;
  ProviderSlots slots(io);
  Acquirers got;
  for (int i = 0; i < 10; ++i)
    asio::co_spawn(io, take(slots, "local", 0, "n" + std::to_string(i), got), asio::detached);
  settle(io);
  EXPECT_EQ(got.returned.size(), 10u);
  EXPECT_EQ(slots.waiting("local"), 0u);
  EXPECT_EQ(slots.in_flight("local"), 10);
  got.slots.clear();
  EXPECT_EQ(slots.in_flight("local"), 0);
}

TEST(ProviderSlots, ProvidersDoNotWaitForEachOther) {
  asio::io_context io;
  ProviderSlots slots(io);
  Acquirers got;
  asio::co_spawn(io, take(slots, "anthropic", 1, "a1", got), asio::detached);
  asio::co_spawn(io, take(slots, "anthropic", 1, "a2", got), asio::detached);
  asio::co_spawn(io, take(slots, "openai", 1, "o1", got), asio::detached);
  settle(io);
  EXPECT_THAT(got.returned, ElementsAre("a1", "o1"));
  EXPECT_EQ(slots.in_flight("anthropic"), 1);
  EXPECT_EQ(slots.in_flight("openai"), 1);
  EXPECT_EQ(slots.waiting("anthropic"), 1u);
  EXPECT_EQ(slots.waiting("openai"), 0u);
  EXPECT_EQ(slots.in_flight("never-used"), 0);
  got.slots.clear();
  settle(io);
  got.slots.clear();
}

TEST(ProviderSlots, AWaiterWhoseCoroutineIsDestroyedLeavesTheQueue) {
  auto io = std::make_unique<asio::io_context>();
  ProviderSlots slots(*io);
  Acquirers got;
  asio::co_spawn(*io, take(slots, "p", 1, "a", got), asio::detached);
  asio::co_spawn(*io, take(slots, "p", 1, "b", got), asio::detached);
  settle(*io);
  ASSERT_EQ(slots.waiting("p"), 1u);
  io.reset();  // destroys b's suspended coroutine
  EXPECT_EQ(slots.waiting("p"), 0u);
  EXPECT_EQ(slots.in_flight("p"), 1);
  got.slots.clear();
  EXPECT_EQ(slots.in_flight("p"), 0);  // nobody left to hand a's slot to
}

}  // namespace
}  // namespace loopr::loops
