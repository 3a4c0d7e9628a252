// ProviderSlots is a small FIFO semaphore written here: asio offers none,
// std::counting_semaphore blocks the thread (the io thread runs every loop),
// and a waiter must be able to leave the queue when its loop is cancelled.
// daemon/wakeup.hpp is a similar timer-based wake-up, but loops/ does not
// include daemon/ code.
#include "loops/scheduler.hpp"

#include <algorithm>
#include <asio/redirect_error.hpp>
#include <asio/steady_timer.hpp>
#include <asio/use_awaitable.hpp>
#include <chrono>
#include <tuple>
#include <utility>

namespace loopr::loops {

namespace {

const std::string& plan_of(const ScheduledLoop& loop) {
  return loop.plan_id.empty() ? loop.id : loop.plan_id;
}

bool below(std::int64_t count, std::int64_t limit) {
  return limit <= 0 || count < limit;
}

}  // namespace

int type_priority(const std::string& type) {
  if (type == "code") return 0;
  if (type == "phase") return 1;
  if (type == "spec") return 2;
  if (type == "plan") return 3;
  return 4;
}

std::vector<std::string> pick_loops_to_start(const std::vector<ScheduledLoop>& ready,
                                             const std::vector<ScheduledLoop>& running,
                                             const config::SchedulerSettings& limits) {
  std::int64_t total = static_cast<std::int64_t>(running.size());
  std::map<std::string, std::int64_t> per_type;
  std::map<std::string, std::int64_t> per_plan;
  for (const ScheduledLoop& loop : running) {
    ++per_type[loop.type];
    ++per_plan[plan_of(loop)];
  }
  // Each round takes the best loop that its type's limit still admits; the
  // plans' counts change with every pick, so the order is decided one pick
  // at a time. `ready` is small (the queued loops of one daemon).
  std::vector<const ScheduledLoop*> left;
  left.reserve(ready.size());
  for (const ScheduledLoop& loop : ready)
    left.push_back(&loop);
  std::vector<std::string> picked;
  while (below(total, limits.max_running)) {
    auto best = left.end();
    for (auto it = left.begin(); it != left.end(); ++it) {
      const ScheduledLoop& loop = **it;
      if (!below(per_type[loop.type], limits.limit_for(loop.type))) continue;
      if (best == left.end()) {
        best = it;
        continue;
      }
      const ScheduledLoop& other = **best;
      const auto key = std::tuple(type_priority(loop.type), per_plan[plan_of(loop)], loop.seq);
      const auto best_key =
          std::tuple(type_priority(other.type), per_plan[plan_of(other)], other.seq);
      if (key < best_key) best = it;  // ties keep the earlier entry of `ready`
    }
    if (best == left.end()) break;
    const ScheduledLoop& chosen = **best;
    picked.push_back(chosen.id);
    ++total;
    ++per_type[chosen.type];
    ++per_plan[plan_of(chosen)];
    left.erase(best);
  }
  return picked;
}

// One acquire() that waits. Owned by the queue and by the waiting coroutine;
// `closed` tells a coroutine woken after ~ProviderSlots not to touch it.
struct ProviderSlots::Waiter {
  Waiter(asio::io_context& io, std::int64_t slot_limit, std::shared_ptr<bool> gave_up)
      : wake(io, std::chrono::steady_clock::time_point::max()),
        limit(slot_limit),
        abandoned(std::move(gave_up)) {}
  bool abandoned_now() const { return abandoned && *abandoned; }

  asio::steady_timer wake;  // never expires by itself: cancel() wakes
  std::int64_t limit;       // the limit this caller asked with
  std::shared_ptr<bool> abandoned;
  bool granted = false;  // a slot is counted in in_flight_ for it
  bool closed = false;   // the ProviderSlots is gone
};

namespace {

// Hands free slots to the waiters at the front of `queue`, in order: no
// later waiter goes before an earlier one. One that gave up is woken to
// leave instead. (A template only so that it need not name the private
// Waiter type.)
template <class Queue>
void grant_in_order(Queue& queue, std::int64_t& in_flight) {
  while (!queue.empty()) {
    const auto first = queue.front();
    if (first->abandoned_now()) {
      queue.pop_front();
      first->wake.cancel();
      continue;
    }
    if (in_flight >= first->limit) break;
    queue.pop_front();
    ++in_flight;
    first->granted = true;
    first->wake.cancel();
  }
}

// Held by the waiting coroutine: if its frame is destroyed while it waits
// (the io_context torn down, the loop's coroutine destroyed), the waiter
// leaves the queue and a slot granted to it goes back.
template <class Leave>
class LeaveOnExit {
 public:
  explicit LeaveOnExit(Leave leave) : leave_(std::move(leave)) {}
  LeaveOnExit(const LeaveOnExit&) = delete;
  LeaveOnExit& operator=(const LeaveOnExit&) = delete;
  ~LeaveOnExit() {
    if (armed_) leave_();
  }
  void disarm() { armed_ = false; }

 private:
  Leave leave_;
  bool armed_ = true;
};

}  // namespace

ProviderSlots::Slot::Slot(ProviderSlots* owner, std::string provider)
    : owner_(owner), provider_(std::move(provider)) {}

ProviderSlots::Slot::Slot(Slot&& other) noexcept
    : owner_(std::exchange(other.owner_, nullptr)), provider_(std::move(other.provider_)) {}

ProviderSlots::Slot& ProviderSlots::Slot::operator=(Slot&& other) noexcept {
  if (this != &other) {
    if (owner_ != nullptr) owner_->release(provider_);
    owner_ = std::exchange(other.owner_, nullptr);
    provider_ = std::move(other.provider_);
  }
  return *this;
}

ProviderSlots::Slot::~Slot() {
  if (owner_ != nullptr) owner_->release(provider_);
}

ProviderSlots::~ProviderSlots() {
  // Slots must be gone by now (they point here); waiters are woken and
  // return an empty Slot without touching this object.
  for (auto& [provider, queue] : waiters_) {
    for (const auto& waiter : queue) {
      waiter->closed = true;
      waiter->wake.cancel();
    }
  }
}

asio::awaitable<ProviderSlots::Slot> ProviderSlots::acquire(std::string provider,
                                                            std::int64_t limit,
                                                            std::shared_ptr<bool> abandoned) {
  if (limit <= 0) {
    ++in_flight_[provider];
    co_return Slot(this, provider);
  }
  auto waiter = std::make_shared<Waiter>(io_, limit, std::move(abandoned));
  auto& queue = waiters_[provider];
  queue.push_back(waiter);
  grant_in_order(queue, in_flight_[provider]);
  auto leave = [this, waiter, provider] {
    if (waiter->closed) return;
    auto& waiting_queue = waiters_[provider];
    std::erase(waiting_queue, waiter);
    if (waiter->granted) {
      waiter->granted = false;
      release(provider);
    } else {
      grant_in_order(waiting_queue, in_flight_[provider]);  // it may have held others back
    }
  };
  LeaveOnExit<decltype(leave)> on_exit(leave);
  while (!waiter->closed && !waiter->granted && !waiter->abandoned_now()) {
    waiter->wake.expires_at(std::chrono::steady_clock::time_point::max());
    std::error_code ignored;
    co_await waiter->wake.async_wait(asio::redirect_error(asio::use_awaitable, ignored));
  }
  if (waiter->closed) {
    on_exit.disarm();
    co_return Slot();
  }
  // Gave up: on_exit takes it off the queue, or gives back a slot granted
  // to it meanwhile.
  if (waiter->abandoned_now()) co_return Slot();
  on_exit.disarm();
  co_return Slot(this, provider);  // already counted in in_flight_, off the queue
}

void ProviderSlots::wake_all() {
  for (auto& [provider, queue] : waiters_) {
    for (const auto& waiter : queue)
      waiter->wake.cancel();
  }
}

std::int64_t ProviderSlots::in_flight(const std::string& provider) const {
  auto it = in_flight_.find(provider);
  return it == in_flight_.end() ? 0 : it->second;
}

std::size_t ProviderSlots::waiting(const std::string& provider) const {
  auto it = waiters_.find(provider);
  return it == waiters_.end() ? 0 : it->second.size();
}

void ProviderSlots::release(const std::string& provider) {
  std::int64_t& count = in_flight_[provider];
  if (count > 0) --count;
  grant_in_order(waiters_[provider], count);
}

}  // namespace loopr::loops
