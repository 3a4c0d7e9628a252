#include "tui/daemon_state.hpp"

#include <algorithm>
#include <ctime>

#include "client/loop_view.hpp"
#include "common/utf8.hpp"

namespace loopr::tui {
namespace {

using client::integer_of;
using client::member;
using client::number_of;
using client::string_of;
using nlohmann::json;

}  // namespace

void DaemonState::set_link(LinkState state, std::string detail) {
  link_ = state;
  link_detail_ = std::move(detail);
  ++version_;
}

const json* DaemonState::find_loop(const std::string& id) const {
  const auto it = loop_index_.find(id);
  return it == loop_index_.end() ? nullptr : &loops_[it->second];
}

void DaemonState::upsert_loop(const json& loop) {
  const std::string id = string_of(loop, "id");
  if (id.empty()) return;
  const auto it = loop_index_.find(id);
  if (it != loop_index_.end()) {
    json& known = loops_[it->second];
    if (integer_of(loop, "updated_at_ms") < integer_of(known, "updated_at_ms")) return;
    known = loop;
  } else {
    if (loops_.size() >= kMaxLoops) return;  // the next snapshot shows the rest
    loop_index_.emplace(id, loops_.size());
    loops_.push_back(loop);
  }
  ++version_;
}

void DaemonState::apply_snapshot(const Snapshot& snapshot, std::int64_t steady_ms) {
  daemon_version_ = snapshot.daemon_version;
  loops_ = json::array();
  loop_index_.clear();
  if (snapshot.loops.is_array())
    for (const json& loop : snapshot.loops)
      upsert_loop(loop);
  approvals_ = json::array();
  if (snapshot.approvals.is_array())
    for (const json& approval : snapshot.approvals)
      if (approval.is_object() && approvals_.size() < kMaxApprovals) approvals_.push_back(approval);
  last_calls_.reset();
  calls_per_second_.reset();
  apply_metrics(snapshot.metrics, steady_ms);
  ++version_;
}

void DaemonState::apply_metrics(const json& metrics, std::int64_t steady_ms) {
  if (!metrics.is_object()) return;
  if (number_of(member(metrics, "uptime_ms"))) uptime_ms_ = integer_of(metrics, "uptime_ms");
  lanes_.clear();
  const json& lanes = member(metrics, "lanes");
  if (lanes.is_array()) {
    for (const json& lane : lanes) {
      if (!lane.is_object() || lanes_.size() >= 16) continue;
      lanes_.push_back({string_of(lane, "lane"), string_of(lane, "state"),
                        integer_of(lane, "slots"), integer_of(lane, "in_flight"),
                        integer_of(lane, "queued")});
    }
  }
  cluster_ = ClusterFigures{};
  const json& cluster = member(metrics, "cluster");
  if (cluster.is_object() && member(cluster, "configured").is_boolean() &&
      cluster["configured"].get<bool>()) {
    cluster_.configured = true;
    cluster_.state = string_of(cluster, "state");
    cluster_.last_error = string_of(cluster, "last_error");
    cluster_.in_flight = integer_of(cluster, "in_flight");
    cluster_.queued = integer_of(cluster, "queued");
    const json& workers = member(cluster, "workers");
    if (workers.is_array()) {
      cluster_.worker_count = static_cast<std::int64_t>(workers.size());
      for (const json& worker : workers) {
        if (!worker.is_object() || cluster_.workers.size() >= 8) continue;
        std::string name = string_of(worker, "id");
        const json& labels = member(worker, "labels");
        if (labels.is_array() && !labels.empty()) {
          std::string list;
          for (const json& label : labels)
            if (label.is_string()) list += (list.empty() ? "" : ",") + label.get<std::string>();
          name += "[" + list + "]";
        }
        cluster_.workers.push_back(std::move(name));
      }
    }
  }
  double total = 0;
  const json& calls = member(metrics, "calls");
  if (calls.is_array())
    for (const json& row : calls)
      total += number_of(member(row, "count")).value_or(0);
  if (last_calls_ && steady_ms > last_calls_->first && total >= last_calls_->second) {
    calls_per_second_ = (total - last_calls_->second) * 1000.0 /
                        static_cast<double>(steady_ms - last_calls_->first);
  }
  last_calls_ = std::make_pair(steady_ms, total);
  ++version_;
}

std::optional<std::int64_t> DaemonState::uptime_ms(std::int64_t now_ms) const {
  if (!uptime_ms_) return std::nullopt;
  if (uptime_read_at_ms_ <= 0 || now_ms < uptime_read_at_ms_) return uptime_ms_;
  return *uptime_ms_ + (now_ms - uptime_read_at_ms_);
}

std::vector<const json*> DaemonState::plans_awaiting() const {
  std::vector<const json*> out;
  for (const json& loop : loops_)
    if (string_of(loop, "type") == "plan" && string_of(loop, "status") == "awaiting_approval")
      out.push_back(&loop);
  return out;
}

const std::string* DaemonState::plan_markdown(const std::string& plan_id) const {
  const auto it = plan_markdown_.find(plan_id);
  return it == plan_markdown_.end() ? nullptr : &it->second;
}

void DaemonState::set_plan_markdown(const std::string& plan_id, std::string markdown) {
  if (plan_markdown_.size() >= kMaxPlanTexts && plan_markdown_.count(plan_id) == 0)
    plan_markdown_.erase(plan_markdown_.begin());
  if (markdown.size() > kMaxPlanTextBytes)
    markdown.resize(utf8_safe_prefix(markdown, kMaxPlanTextBytes));
  plan_markdown_[plan_id] = std::move(markdown);
  ++version_;
}

bool DaemonState::open_detail(const std::string& loop_id) {
  if (detail_ && detail_->loop_id() == loop_id) return false;
  detail_.emplace(loop_id);
  ++version_;
  return true;
}

const ToolCallRecord* DaemonState::waiting_call(const std::string& loop_id) const {
  for (auto it = tool_calls_.rbegin(); it != tool_calls_.rend(); ++it)
    if (it->loop_id == loop_id && it->waiting_ahead) return &*it;
  return nullptr;
}

void DaemonState::apply_tool_event(const proto::Event& event, std::int64_t now_ms) {
  const json& data = event.data;
  const std::string call_id = string_of(data, "call_id");
  if (call_id.empty()) return;
  ToolCallRecord* record = nullptr;
  for (auto it = tool_calls_.rbegin(); it != tool_calls_.rend() && record == nullptr; ++it)
    if (it->call_id == call_id) record = &*it;
  if (event.event == "tool.started") {
    if (record != nullptr) return;
    if (tool_calls_.size() >= kMaxToolCalls) tool_calls_.pop_front();
    ToolCallRecord fresh;
    fresh.call_id = call_id;
    fresh.tool = string_of(data, "tool");
    fresh.lane = string_of(data, "lane");
    fresh.loop_id = string_of(data, "loop_id");
    fresh.worktree = string_of(data, "worktree");
    fresh.started_at_ms = now_ms;
    tool_calls_.push_back(std::move(fresh));
  } else if (record == nullptr) {
    return;
  } else if (event.event == "tool.queued") {
    record->waiting_ahead = integer_of(data, "ahead");
  } else if (event.event == "tool.output") {
    record->output_bytes += string_of(data, "data").size();
    record->waiting_ahead.reset();
  } else if (event.event == "tool.finished") {
    record->waiting_ahead.reset();
    record->status = string_of(data, "status");
    record->ok = member(data, "ok") != json(false);
    if (number_of(member(data, "duration_ms")))
      record->duration_ms = integer_of(data, "duration_ms");
    if (record->lane.empty()) record->lane = string_of(data, "lane");
  }
}

void DaemonState::apply_event(const proto::Event& event, std::int64_t now_ms) {
  const std::string& name = event.event;
  const json& data = event.data;
  if (name == "loop.created" || name == "loop.updated") {
    upsert_loop(member(data, "loop"));
  } else if (name.rfind("plan.", 0) == 0) {
    upsert_loop(member(data, "plan"));
    if (name == "plan.awaiting_approval") {
      const std::string markdown = string_of(data, "markdown");
      const std::string id = string_of(member(data, "plan"), "id");
      if (!id.empty() && !markdown.empty()) set_plan_markdown(id, markdown);
    }
  } else if (name == "approval.requested") {
    // Subscribed before the snapshot was read: the snapshot may list it too.
    const std::string id = string_of(data, "id");
    const bool known = std::any_of(approvals_.begin(), approvals_.end(), [&](const json& listed) {
      return string_of(listed, "id") == id;
    });
    if (data.is_object() && !known && approvals_.size() < kMaxApprovals) approvals_.push_back(data);
  } else if (name == "approval.resolved") {
    const std::string id = string_of(data, "id");
    for (auto it = approvals_.begin(); it != approvals_.end(); ++it) {
      if (string_of(*it, "id") == id) {
        approvals_.erase(it);
        break;
      }
    }
  } else if (name.rfind("tool.", 0) == 0) {
    apply_tool_event(event, now_ms);
  }
  if (detail_) detail_->apply_event(event);
  ++version_;
}

SpendToday spend_today(const json& loops, std::int64_t midnight_ms) {
  SpendToday out;
  if (!loops.is_array()) return out;
  for (const json& loop : loops) {
    if (integer_of(loop, "updated_at_ms") < midnight_ms) continue;
    ++out.loops;
    const json& usage = member(loop, "usage");
    for (const char* key :
         {"input_tokens", "output_tokens", "cache_read_tokens", "cache_write_tokens"})
      out.tokens += number_of(member(usage, key)).value_or(0);
    out.cost_usd += number_of(member(usage, "cost_usd")).value_or(0);
  }
  return out;
}

std::int64_t local_midnight_ms(std::int64_t now_ms) {
  const std::time_t now = static_cast<std::time_t>(now_ms / 1000);
  std::tm local{};
  ::localtime_r(&now, &local);
  local.tm_hour = 0;
  local.tm_min = 0;
  local.tm_sec = 0;
  local.tm_isdst = -1;
  return static_cast<std::int64_t>(std::mktime(&local)) * 1000;
}

}  // namespace loopr::tui
