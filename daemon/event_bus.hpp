// EventBus: pushed events (DESIGN.md §3) from the daemon's components to the
// clients that subscribed. An event is encoded once and handed to every
// matching subscriber as a ready NDJSON line.
//
// Topics: a subscriber's topic matches an event with the same name, or any
// event under it ("tool" matches "tool.started"); no topics means every event.
// Threads: used only on the daemon's io thread. A sink must not call back into
// the bus (sessions only queue the line).
#pragma once

#include <cstdint>
#include <functional>
#include <map>
#include <nlohmann/json.hpp>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

namespace loopr::daemon {

class EventBus {
 public:
  using Sink = std::function<void(const std::string& line)>;
  using SubscriptionId = std::uint64_t;
  // Whether an event's data is for this subscriber; called on the io thread
  // during publish(), so it must not call back into the bus.
  using Filter = std::function<bool(const nlohmann::json& data)>;

  // With `loop_id`, only events whose data names that loop (data.loop_id,
  // or data.loop.id) reach the sink; with `accepts`, only events it accepts.
  SubscriptionId subscribe(std::vector<std::string> topics, Sink sink,
                           std::optional<std::string> loop_id = std::nullopt,
                           Filter accepts = nullptr);
  void unsubscribe(SubscriptionId id);

  // Encodes {"event", "data"} once and delivers it to each matching sink.
  void publish(std::string_view event, nlohmann::json data);

  // Whether anyone listens for `event`: lets a publisher skip building data.
  bool has_subscribers(std::string_view event) const;
  std::size_t subscriber_count() const { return subscribers_.size(); }

  static bool topic_matches(std::string_view topic, std::string_view event);

 private:
  struct Subscriber {
    std::vector<std::string> topics;
    Sink sink;
    std::optional<std::string> loop_id;
    Filter accepts;
  };
  bool wants(const Subscriber& subscriber, std::string_view event) const;
  static bool about_loop(const nlohmann::json& data, const std::string& loop_id);

  std::map<SubscriptionId, Subscriber> subscribers_;
  SubscriptionId next_id_ = 1;
};

}  // namespace loopr::daemon
