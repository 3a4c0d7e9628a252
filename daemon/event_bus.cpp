#include "daemon/event_bus.hpp"

#include "proto/control_messages.hpp"
#include "proto/line_codec.hpp"

namespace loopr::daemon {

EventBus::SubscriptionId EventBus::subscribe(std::vector<std::string> topics, Sink sink,
                                             std::optional<std::string> loop_id, Filter accepts) {
  const SubscriptionId id = next_id_++;
  subscribers_.emplace(
      id, Subscriber{std::move(topics), std::move(sink), std::move(loop_id), std::move(accepts)});
  return id;
}

bool EventBus::about_loop(const nlohmann::json& data, const std::string& loop_id) {
  if (!data.is_object()) return false;
  if (auto it = data.find("loop_id"); it != data.end() && it->is_string()) {
    return it->get_ref<const std::string&>() == loop_id;
  }
  for (const char* key : {"loop", "plan"}) {
    if (auto it = data.find(key); it != data.end() && it->is_object()) {
      auto id = it->find("id");
      return id != it->end() && id->is_string() && id->get_ref<const std::string&>() == loop_id;
    }
  }
  return false;
}

void EventBus::unsubscribe(SubscriptionId id) {
  subscribers_.erase(id);
}

bool EventBus::topic_matches(std::string_view topic, std::string_view event) {
  if (topic == event) return true;
  return event.size() > topic.size() && event.substr(0, topic.size()) == topic &&
         event[topic.size()] == '.';
}

bool EventBus::wants(const Subscriber& subscriber, std::string_view event) const {
  if (subscriber.topics.empty()) return true;
  for (const std::string& topic : subscriber.topics) {
    if (topic_matches(topic, event)) return true;
  }
  return false;
}

bool EventBus::has_subscribers(std::string_view event) const {
  for (const auto& [id, subscriber] : subscribers_) {
    if (wants(subscriber, event)) return true;
  }
  return false;
}

void EventBus::publish(std::string_view event, nlohmann::json data) {
  if (!has_subscribers(event)) return;
  // A sink may unsubscribe (its session closing) while we iterate: copy ids.
  std::vector<SubscriptionId> ids;
  ids.reserve(subscribers_.size());
  for (const auto& [id, subscriber] : subscribers_) {
    if (!wants(subscriber, event)) continue;
    if (subscriber.loop_id && !about_loop(data, *subscriber.loop_id)) continue;
    if (subscriber.accepts && !subscriber.accepts(data)) continue;
    ids.push_back(id);
  }
  if (ids.empty()) return;
  auto line = proto::encode_line(proto::to_json(proto::Event{std::string(event), std::move(data)}));
  if (!line) return;  // over the line cap: the event data is ours and bounded; drop it
  for (SubscriptionId id : ids) {
    auto it = subscribers_.find(id);
    if (it != subscribers_.end()) it->second.sink(*line);
  }
}

}  // namespace loopr::daemon
