// Notifications ([notify] in loopr.toml, issue 27): which of looprd's events
// need a person, told to them outside the terminal (a webhook: Slack, ntfy,
// anything that takes an HTTP POST), so an approval does not wait unnoticed
// while nobody watches the TUI.
//
// Pure code: events in, notifications out; no I/O (webhook_notifier.hpp
// sends them). The kinds:
//   approval.needed        a call waits for approval (approval.requested)
//   plan.awaiting_approval a plan reached its gate (loop.updated)
//   loop.end / plan.end    a loop or plan reached a final status, once each
//   budget.near_limit      a loop's budget has 10 % or less left of one of
//                          its limits, once per loop
#pragma once

#include <chrono>
#include <cstddef>
#include <deque>
#include <map>
#include <nlohmann/json.hpp>
#include <optional>
#include <set>
#include <string>
#include <string_view>

namespace loopr::notify {

struct Notification {
  std::string event;  // one of the kinds above
  std::string text;   // one line for a person
  std::string loop_id;
  nlohmann::json data;  // the event's own data, as published
};

// Turns published events into notifications, remembering what it already
// said (a loop's end, its budget warning) so each is said once.
class NotificationFilter {
 public:
  std::optional<Notification> on_event(std::string_view event, const nlohmann::json& data);

 private:
  std::set<std::string> ended_;
  std::set<std::string> budget_warned_;
  std::set<std::string> awaiting_;  // plans told to be at their gate (until they move on)
};

// The request body for `notification`: with an empty template, the
// notification as JSON {event, text, loop_id, data}; else the template with
// {{event}}, {{text}} and {{loop_id}} replaced — JSON-escaped (without
// quotes) when the template is a JSON document (starts with '[', or with
// '{' but not "{{"), as they are otherwise. Unknown placeholders are left as written.
std::string webhook_body(const Notification& notification, const std::string& body_template);

// At most `per_minute` notifications in any 60 s; the rest are dropped (and
// counted). Time is passed in, for tests.
class RateLimit {
 public:
  using Clock = std::chrono::steady_clock;
  explicit RateLimit(std::size_t per_minute) : per_minute_(per_minute) {}
  bool allow(Clock::time_point now);
  std::size_t dropped() const { return dropped_; }

 private:
  std::size_t per_minute_;
  std::deque<Clock::time_point> sent_;
  std::size_t dropped_ = 0;
};

}  // namespace loopr::notify
