#include "daemon/approval_gate.hpp"

#include "common/utf8.hpp"

namespace loopr::daemon {

nlohmann::json abbreviated_for_display(const nlohmann::json& args) {
  if (args.is_string()) {
    const auto& text = args.get_ref<const std::string&>();
    if (text.size() <= kMaxShownStringBytes) return args;
    return text.substr(0, utf8_safe_prefix(text, kMaxShownStringBytes)) + "... [" +
           std::to_string(text.size()) + " bytes in all]";
  }
  if (args.is_object()) {
    nlohmann::json out = nlohmann::json::object();
    for (const auto& [key, value] : args.items())
      out[key] = abbreviated_for_display(value);
    return out;
  }
  if (args.is_array()) {
    nlohmann::json out = nlohmann::json::array();
    for (const auto& value : args)
      out.push_back(abbreviated_for_display(value));
    return out;
  }
  return args;
}

std::int64_t unix_ms() {
  return std::chrono::duration_cast<std::chrono::milliseconds>(
             std::chrono::system_clock::now().time_since_epoch())
      .count();
}

nlohmann::json ApprovalGate::describe(const std::string& id, const Pending& pending) const {
  nlohmann::json out = {{"id", id},
                        {"call_id", pending.request.call_id},
                        {"tool", pending.request.tool},
                        {"lane", pending.request.lane},
                        {"tier", pending.request.tier},
                        {"args", pending.request.args},
                        {"worktree", pending.request.worktree},
                        {"requested_at_ms", pending.requested_at_ms},
                        {"expires_at_ms", pending.expires_at_ms}};
  if (!pending.request.loop_id.empty()) out["loop_id"] = pending.request.loop_id;
  if (!pending.request.rule.is_null()) out["rule"] = pending.request.rule;
  if (!pending.request.uncertain.empty()) out["uncertain"] = pending.request.uncertain;
  return out;
}

asio::awaitable<ApprovalDecision> ApprovalGate::request(ApprovalRequest request,
                                                        std::chrono::milliseconds timeout) {
  if (closed_) co_return ApprovalDecision{false, true, *closed_};
  const std::string id = "a-" + std::to_string(next_id_++);
  request.args = abbreviated_for_display(request.args);
  auto pending = std::make_shared<Pending>(
      Pending{std::move(request), unix_ms(), 0, std::nullopt, Wakeup(executor_)});
  pending->expires_at_ms = pending->requested_at_ms + timeout.count();
  pending_.emplace(id, pending);
  events_.publish("approval.requested", describe(id, *pending));

  const bool decided = co_await pending->decided.wait_until(Wakeup::Clock::now() + timeout);
  pending_.erase(id);
  ApprovalDecision decision;
  if (decided && pending->decision) {
    decision = *pending->decision;
  } else {
    decision.reason = "no one answered the approval request within " +
                      std::to_string(timeout.count() / 1000) + " s";
  }
  nlohmann::json resolved = {
      {"id", id}, {"call_id", pending->request.call_id}, {"approved", decision.approved}};
  if (!decision.approved) resolved["reason"] = decision.reason;
  events_.publish("approval.resolved", std::move(resolved));
  co_return decision;
}

Result<void> ApprovalGate::decide(const std::string& id, bool approved, std::string reason) {
  auto it = pending_.find(id);
  if (it == pending_.end() || it->second->decision) {
    return make_error(errc::invalid_arguments, "no pending approval with id '" + id + "'",
                      "list the pending ones with approval.list (looprctl approvals); it may "
                      "have timed out or been decided already");
  }
  it->second->decision = ApprovalDecision{approved, false, std::move(reason)};
  it->second->decided.notify();
  return {};
}

bool ApprovalGate::cancel_call(const std::string& call_id, const std::string& reason) {
  for (auto& [id, pending] : pending_) {
    if (pending->request.call_id == call_id && !pending->decision) {
      pending->decision = ApprovalDecision{false, true, reason};
      pending->decided.notify();
      return true;
    }
  }
  return false;
}

void ApprovalGate::deny_all(const std::string& reason) {
  for (auto& [id, pending] : pending_) {
    if (!pending->decision) {
      pending->decision = ApprovalDecision{false, true, reason};
      pending->decided.notify();
    }
  }
}

void ApprovalGate::close(const std::string& reason) {
  closed_ = reason;
  deny_all(reason);
}

std::optional<ApprovalRequest> ApprovalGate::find(const std::string& id) const {
  const auto it = pending_.find(id);
  if (it == pending_.end() || it->second->decision) return std::nullopt;
  return it->second->request;
}

nlohmann::json ApprovalGate::pending_json() const {
  nlohmann::json out = nlohmann::json::array();
  for (const auto& [id, pending] : pending_) {
    if (!pending->decision) out.push_back(describe(id, *pending));
  }
  return out;
}

}  // namespace loopr::daemon
