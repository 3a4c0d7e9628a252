#include "notify/notification.hpp"

#include "common/json_text.hpp"
#include "loops/loop_status.hpp"

namespace loopr::notify {
namespace {

using nlohmann::json;

// The first limit with 10 % or less left, as "usd: 0.40 of 5 left"; "" when
// none is that close.
std::string nearly_spent(const json& budget) {
  if (!budget.is_object()) return {};
  const json limits = budget.value("limits", json::object());
  const json left = budget.value("left", json::object());
  if (!limits.is_object() || !left.is_object()) return {};
  for (auto it = limits.begin(); it != limits.end(); ++it) {
    if (!it->is_number() || !left.contains(it.key()) || !left[it.key()].is_number()) continue;
    const double limit = it->get<double>();
    const double remaining = left[it.key()].get<double>();
    if (limit > 0 && remaining <= limit * 0.1) {
      return it.key() + ": " + left[it.key()].dump() + " of " + it->dump() + " left";
    }
  }
  return {};
}

void replace_all(std::string& text, const std::string& from, const std::string& to) {
  for (std::size_t at = text.find(from); at != std::string::npos;
       at = text.find(from, at + to.size())) {
    text.replace(at, from.size(), to);
  }
}

}  // namespace

std::optional<Notification> NotificationFilter::on_event(std::string_view event, const json& data) {
  if (event == "approval.requested") {
    const std::string loop_id = text_member(data, "loop_id");
    return Notification{"approval.needed",
                        "loopr: " + text_member(data, "tool") + " waits for your approval (" +
                            text_member(data, "id") + (loop_id.empty() ? "" : ", loop " + loop_id) +
                            "): looprctl approve " + text_member(data, "id"),
                        loop_id, data};
  }
  if (event != "loop.updated") return std::nullopt;
  const json loop = data.value("loop", json::object());
  const std::string id = text_member(loop, "id");
  const std::string status_text = text_member(loop, "status");
  const auto status = loops::parse_loop_status(status_text);
  if (id.empty() || !status) return std::nullopt;
  const bool plan = text_member(loop, "type") == "plan";
  if (*status == loops::LoopStatus::awaiting_approval) {
    if (!awaiting_.insert(id).second) return std::nullopt;
    return Notification{"plan.awaiting_approval",
                        "loopr: plan " + id + " awaits your approval: looprctl plan show " + id, id,
                        data};
  }
  awaiting_.erase(id);
  if (loops::is_final(*status)) {
    if (!ended_.insert(id).second) return std::nullopt;
    const std::string reason = text_member(loop, "status_reason");
    return Notification{plan ? "plan.end" : "loop.end",
                        "loopr: " + std::string(plan ? "plan " : "loop ") + id + " " + status_text +
                            (reason.empty() ? "" : ": " + reason),
                        id, data};
  }
  if (const std::string which = nearly_spent(loop.value("budget", json::object()));
      !which.empty() && budget_warned_.insert(id).second) {
    return Notification{"budget.near_limit",
                        "loopr: loop " + id + " has nearly spent its budget (" + which + ")", id,
                        data};
  }
  return std::nullopt;
}

std::string webhook_body(const Notification& notification, const std::string& body_template) {
  if (body_template.empty()) {
    return json{{"event", notification.event},
                {"text", notification.text},
                {"loop_id", notification.loop_id},
                {"data", notification.data}}
        .dump(-1, ' ', false, json::error_handler_t::replace);
  }
  // A JSON object or array; "{{" opens a placeholder, not an object.
  const std::size_t first = body_template.find_first_not_of(" \t\r\n");
  const bool json_document =
      first != std::string::npos &&
      (body_template[first] == '[' ||
       (body_template[first] == '{' && body_template.compare(first, 2, "{{") != 0));
  auto value = [&](const std::string& text) {
    if (!json_document) return text;
    const std::string quoted = json(text).dump(-1, ' ', false, json::error_handler_t::replace);
    return quoted.substr(1, quoted.size() - 2);
  };
  std::string body = body_template;
  replace_all(body, "{{event}}", value(notification.event));
  replace_all(body, "{{text}}", value(notification.text));
  replace_all(body, "{{loop_id}}", value(notification.loop_id));
  return body;
}

bool RateLimit::allow(Clock::time_point now) {
  while (!sent_.empty() && now - sent_.front() >= std::chrono::minutes(1))
    sent_.pop_front();
  if (sent_.size() >= per_minute_) {
    ++dropped_;
    return false;
  }
  sent_.push_back(now);
  return true;
}

}  // namespace loopr::notify
