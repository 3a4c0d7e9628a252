// DaemonState: what the TUI knows about looprd, built only from the control
// protocol — snapshots (loop.list, approval.list, metrics.get, ping) and the
// events that follow them. It is a cache of the daemon's state, never a
// source of its own: after a reconnect a fresh snapshot replaces it.
//
// Contract:
//  - Every container is capped (loops, approvals, recent tool calls, plan
//    texts, per-call output), so an event flood cannot grow memory.
//  - A <loop> from an event replaces the known one unless it is older
//    (updated_at_ms), so an event queued before a snapshot cannot undo it.
//  - Any JSON is accepted: a missing or mistyped field is left out.
//  - The detail of at most one loop is followed (open_detail()).
// Not thread-safe: the UI thread owns it.
#pragma once

#include <cstddef>
#include <cstdint>
#include <deque>
#include <map>
#include <nlohmann/json.hpp>
#include <optional>
#include <string>
#include <unordered_map>
#include <vector>

#include "proto/control_messages.hpp"
#include "tui/loop_detail.hpp"

namespace loopr::tui {

enum class LinkState { connecting, connected, reconnecting };

// A call seen in tool.started / tool.finished events (the tool-calls pane).
struct ToolCallRecord {
  std::string call_id;
  std::string tool;
  std::string lane;
  std::string loop_id;  // empty for a direct client's call
  std::string worktree;
  std::string status = "running";
  bool ok = true;
  std::optional<std::int64_t> duration_ms;
  std::int64_t started_at_ms = 0;  // wall clock when the TUI saw it start
  std::uint64_t output_bytes = 0;  // tool.output seen, counted not kept
  // Set by tool.queued (every slot of its lane was busy): the calls that
  // waited before it; cleared once it prints or finishes.
  std::optional<std::int64_t> waiting_ahead;
};

struct LaneFigures {
  std::string lane;
  std::string state;
  std::int64_t slots = 0;
  std::int64_t in_flight = 0;
  std::int64_t queued = 0;
};

// metrics.get's cluster part ([cluster], docs/cluster.md): the NATS link
// and the workers looprd saw lately.
struct ClusterFigures {
  bool configured = false;
  std::string state;  // connected, connecting, unreachable
  std::string last_error;
  std::vector<std::string> workers;  // "id" or "id[label,label]", at most 8
  std::int64_t worker_count = 0;
  std::int64_t in_flight = 0;
  std::int64_t queued = 0;
};

// What one connection's snapshot read, in order: initialize, then after
// events.subscribe, loop.list, approval.list, metrics.get.
struct Snapshot {
  std::string daemon_version;
  nlohmann::json loops = nlohmann::json::array();
  nlohmann::json approvals = nlohmann::json::array();
  nlohmann::json metrics = nlohmann::json::object();
};

class DaemonState {
 public:
  static constexpr std::size_t kMaxLoops = 10'000;
  static constexpr std::size_t kMaxApprovals = 1'000;
  static constexpr std::size_t kMaxToolCalls = 500;
  static constexpr std::size_t kMaxPlanTexts = 64;
  static constexpr std::size_t kMaxPlanTextBytes = 256 * 1024;

  // ---- the link ----
  void set_link(LinkState state, std::string detail = {});
  LinkState link() const { return link_; }
  const std::string& link_detail() const { return link_detail_; }
  // Replaces everything the previous connection knew (the detail pane
  // reloads: see detail_needs_reload()).
  void apply_snapshot(const Snapshot& snapshot, std::int64_t steady_ms);
  // metrics.get's result read at `steady_ms` (a monotonic clock): lanes,
  // uptime, and calls per second from the previous reading.
  void apply_metrics(const nlohmann::json& metrics, std::int64_t steady_ms);
  // An event; `now_ms` is the wall clock (for tool calls' start times).
  void apply_event(const proto::Event& event, std::int64_t now_ms);

  // ---- loops ----
  // Every known loop, oldest first (loop.list's order, new ones appended).
  const nlohmann::json& loops() const { return loops_; }
  const nlohmann::json* find_loop(const std::string& id) const;
  void upsert_loop(const nlohmann::json& loop);

  // ---- approvals ----
  const nlohmann::json& approvals() const { return approvals_; }
  // Plan loops awaiting approval, oldest first.
  std::vector<const nlohmann::json*> plans_awaiting() const;
  // The rendered plan (plan.awaiting_approval's or plan.get's markdown).
  const std::string* plan_markdown(const std::string& plan_id) const;
  void set_plan_markdown(const std::string& plan_id, std::string markdown);

  // ---- header ----
  const std::string& daemon_version() const { return daemon_version_; }
  // looprd's uptime at wall-clock `now_ms`: the last reading plus the time
  // since it was read (note_reading_time()).
  std::optional<std::int64_t> uptime_ms(std::int64_t now_ms) const;
  // The wall clock when the last snapshot or metrics were applied.
  void note_reading_time(std::int64_t now_ms) { uptime_read_at_ms_ = now_ms; }
  const std::vector<LaneFigures>& lanes() const { return lanes_; }
  const ClusterFigures& cluster() const { return cluster_; }
  std::optional<double> calls_per_second() const { return calls_per_second_; }

  // ---- tool calls, newest last ----
  const std::deque<ToolCallRecord>& tool_calls() const { return tool_calls_; }
  // The newest call of `loop_id` still waiting for a lane slot, or null.
  const ToolCallRecord* waiting_call(const std::string& loop_id) const;

  // ---- the followed loop ----
  LoopDetail* detail() { return detail_ ? &*detail_ : nullptr; }
  const LoopDetail* detail() const { return detail_ ? &*detail_ : nullptr; }
  // Starts following `loop_id` (a no-op when it is already followed).
  // Returns true when the caller must fetch loop.get and loop.transcript.
  bool open_detail(const std::string& loop_id);
  void close_detail() { detail_.reset(); }

  // Bumped on every change, so views know when to rebuild.
  std::uint64_t version() const { return version_; }

 private:
  void apply_tool_event(const proto::Event& event, std::int64_t now_ms);

  LinkState link_ = LinkState::connecting;
  std::string link_detail_;
  std::string daemon_version_;
  std::optional<std::int64_t> uptime_ms_;
  std::int64_t uptime_read_at_ms_ = 0;
  std::vector<LaneFigures> lanes_;
  ClusterFigures cluster_;
  std::optional<double> calls_per_second_;
  std::optional<std::pair<std::int64_t, double>> last_calls_;  // steady ms, total count

  nlohmann::json loops_ = nlohmann::json::array();
  std::unordered_map<std::string, std::size_t> loop_index_;
  nlohmann::json approvals_ = nlohmann::json::array();
  std::map<std::string, std::string> plan_markdown_;
  std::deque<ToolCallRecord> tool_calls_;
  std::optional<LoopDetail> detail_;
  std::uint64_t version_ = 0;
};

// Tokens and cost of the loops that were active today (updated since local
// midnight `midnight_ms`): each such loop's whole usage counts, so a loop
// started yesterday and still running counts in full.
struct SpendToday {
  std::size_t loops = 0;
  double tokens = 0;
  double cost_usd = 0;
};
SpendToday spend_today(const nlohmann::json& loops, std::int64_t midnight_ms);

// Local midnight before `now_ms` (wall clock, ms since the epoch).
std::int64_t local_midnight_ms(std::int64_t now_ms);

}  // namespace loopr::tui
