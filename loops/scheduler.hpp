// Scheduler (DESIGN.md §8, docs/control-protocol.md "Plans"): which queued
// loops start now, given what runs and the [scheduler] limits — loops
// running at once in all, and per loop type. Priority: code > phase > spec >
// plan (the nearer a loop is to code, the sooner its plan finishes), then
// fair across plans (the plan with fewer loops running goes first), then
// older (lower seq) first. A loop outside any plan counts as its own plan.
//
// ProviderSlots bounds the model calls in flight at once per provider
// ([providers.NAME] max_in_flight): a loop waits for a slot before its call.
//
// Thread-safety: pick() is a pure function; ProviderSlots is used on the io
// thread only.
#pragma once

#include <asio/awaitable.hpp>
#include <asio/io_context.hpp>
#include <cstdint>
#include <deque>
#include <map>
#include <memory>
#include <string>
#include <vector>

#include "config/settings.hpp"

namespace loopr::loops {

struct ScheduledLoop {
  std::string id;
  std::string type;     // plan, spec, phase, code
  std::string plan_id;  // the plan at the root of its tree; "" outside a plan
  std::int64_t seq = 0;
};

// The ids of `ready` (queued loops whose dependencies are met) to start now,
// in the order to start them, given `running` and the limits (0 = no limit).
std::vector<std::string> pick_loops_to_start(const std::vector<ScheduledLoop>& ready,
                                             const std::vector<ScheduledLoop>& running,
                                             const config::SchedulerSettings& limits);

// Lower is sooner: code 0, phase 1, spec 2, plan 3, anything else 4.
int type_priority(const std::string& type);

// A counting semaphore per provider name, FIFO. acquire() returns once the
// caller holds a slot; the Slot gives it back when destroyed. `limit` <= 0:
// no limit.
class ProviderSlots {
 public:
  class Slot {
   public:
    Slot() = default;
    Slot(Slot&& other) noexcept;
    Slot& operator=(Slot&& other) noexcept;
    Slot(const Slot&) = delete;
    Slot& operator=(const Slot&) = delete;
    ~Slot();

   private:
    friend class ProviderSlots;
    Slot(ProviderSlots* owner, std::string provider);
    ProviderSlots* owner_ = nullptr;
    std::string provider_;
  };

  explicit ProviderSlots(asio::io_context& io) : io_(io) {}
  ~ProviderSlots();

  // Waits (FIFO among waiters of the same provider) for a slot of
  // `provider`. A waiter whose `abandoned` flag reads true when woken gives
  // up (returns an empty Slot) — for a loop cancelled or stopped while it
  // waited; wake_all() wakes every waiter so they can check.
  asio::awaitable<Slot> acquire(std::string provider, std::int64_t limit,
                                std::shared_ptr<bool> abandoned);
  void wake_all();
  std::int64_t in_flight(const std::string& provider) const;
  std::size_t waiting(const std::string& provider) const;

 private:
  struct Waiter;
  void release(const std::string& provider);

  asio::io_context& io_;
  std::map<std::string, std::int64_t> in_flight_;
  std::map<std::string, std::deque<std::shared_ptr<Waiter>>> waiters_;
};

}  // namespace loopr::loops
