#include "client/metrics_view.hpp"

#include <algorithm>
#include <cstdint>
#include <ostream>
#include <string>
#include <utility>
#include <vector>

#include "client/commands.hpp"
#include "client/text_format.hpp"

namespace loopr::client {
namespace {

using nlohmann::json;

json member_or_null(const json& object, const char* key) {
  const auto it = object.find(key);
  return it == object.end() ? json() : *it;
}

TextTable lane_table(const json& lanes) {
  TextTable table(
      {"LANE", "STATE", "PID", "SLOTS", "IN FLIGHT", "QUEUED", "RESTARTS", "LAST ERROR"});
  for (const json& lane : lanes) {
    table.add_row({cell(lane, "lane"), cell(lane, "state"), cell(lane, "pid"), cell(lane, "slots"),
                   cell(lane, "in_flight"), cell(lane, "queued"), cell(lane, "restarts"),
                   cell(lane, "last_error")});
  }
  return table;
}

// "loopback 2, private 1": what refused a lane's connections, most first.
std::string refusals(const json& by_rule) {
  if (!by_rule.is_object() || by_rule.empty()) return "-";
  std::vector<std::pair<std::uint64_t, std::string>> counted;
  for (const auto& [rule, count] : by_rule.items()) {
    counted.emplace_back(count.is_number_unsigned() ? count.get<std::uint64_t>() : 0, rule);
  }
  std::sort(counted.begin(), counted.end(), [](const auto& a, const auto& b) {
    return a.first > b.first || (a.first == b.first && a.second < b.second);
  });
  std::string text;
  for (const auto& [count, rule] : counted) {
    if (!text.empty()) text += ", ";
    text += rule + " " + std::to_string(count);
  }
  return text;
}

}  // namespace

Result<void> print_lanes(const json& metrics, std::ostream& out) {
  auto lanes = objects_in(metrics, "lanes", "metrics.get", false);
  if (!lanes) return std::move(lanes).error();
  if (lanes->empty()) {
    out << "no lanes reported\n";
  } else {
    lane_table(*lanes).print(out);
  }
  return {};
}

Result<void> print_cluster(const json& metrics, std::ostream& out) {
  const json cluster = member_or_null(metrics, "cluster");
  if (!cluster.is_object() || !cluster.value("configured", false)) return {};
  const std::string state = cell(cluster, "state");
  const json lanes = member_or_null(cluster, "lanes");
  std::string lane_list;
  if (lanes.is_array()) {
    for (const json& lane : lanes)
      if (lane.is_string()) lane_list += (lane_list.empty() ? "" : ", ") + lane.get<std::string>();
  }
  const json workers = member_or_null(cluster, "workers");
  const std::size_t worker_count = workers.is_array() ? workers.size() : 0;
  if (state == "connected") {
    out << "cluster: connected to " << cell(cluster, "url") << "; lanes " << lane_list
        << " go to workers: " << worker_count << (worker_count == 1 ? " worker" : " workers")
        << ", " << cell(cluster, "in_flight") << " running, " << cell(cluster, "queued")
        << " queued, " << cell(cluster, "completed") << " done, " << cell(cluster, "fallbacks")
        << " ran here instead, " << cell(cluster, "duplicates_ignored")
        << " duplicate results ignored\n";
  } else {
    out << "cluster: NATS at " << cell(cluster, "url") << " is " << state;
    if (cluster.contains("last_error")) out << " (" << cell(cluster, "last_error") << ")";
    out << "; lanes " << lane_list << " run on this machine until it is reachable\n";
  }
  return {};
}

Result<void> print_workers(const json& metrics, std::ostream& out) {
  const json cluster = member_or_null(metrics, "cluster");
  if (!cluster.is_object() || !cluster.value("configured", false)) {
    out << "no [cluster] in loopr.toml: every lane runs on this machine (docs/cluster.md)\n";
    return {};
  }
  auto workers = objects_in(cluster, "workers", "metrics.get cluster", false);
  if (!workers) return std::move(workers).error();
  if (workers->empty()) {
    out << "no worker seen in the last 10 s; start one with `loopr-runner --join "
        << cell(cluster, "url") << " --state DIR --tool PATH` (docs/cluster.md)\n";
    return {};
  }
  TextTable table({"WORKER", "LABELS", "SLOTS", "RUNNING", "SEEN"});
  for (const json& worker : *workers) {
    std::string labels, running;
    const json label_list = member_or_null(worker, "labels");
    if (label_list.is_array()) {
      for (const json& label : label_list)
        if (label.is_string()) labels += (labels.empty() ? "" : ",") + label.get<std::string>();
    }
    const json jobs = member_or_null(worker, "running");
    if (jobs.is_array()) {
      for (const json& job : jobs) {
        if (!job.is_object()) continue;
        running += (running.empty() ? "" : " ") + cell(job, "tool") + ":" + cell(job, "job_id");
        if (!job.value("mine", true)) running += "(other looprd)";
      }
    }
    table.add_row({cell(worker, "id"), labels.empty() ? "-" : labels, cell(worker, "slots"),
                   running.empty() ? "-" : running,
                   format_duration_ms(member_or_null(worker, "seen_ms_ago")) + " ago"});
  }
  table.print(out);
  return {};
}

Result<void> print_metrics(const json& metrics, std::ostream& out) {
  auto calls = objects_in(metrics, "calls", "metrics.get", false);
  if (!calls) return std::move(calls).error();
  auto lanes = objects_in(metrics, "lanes", "metrics.get", false);
  if (!lanes) return std::move(lanes).error();

  out << "uptime " << format_duration_ms(member_or_null(metrics, "uptime_ms")) << ", RSS "
      << format_bytes(member_or_null(metrics, "rss_bytes")) << ", clients "
      << cell(metrics, "clients") << ", runner restarts " << cell(metrics, "runner_restarts")
      << "\n\n";
  if (calls->empty()) {
    out << "no tool calls yet\n";
  } else {
    TextTable table({"TOOL", "LANE", "CALLS", "ERRORS", "P50", "P90", "P99", "MAX"});
    for (const json& call : *calls) {
      table.add_row({cell(call, "tool"), cell(call, "lane"), cell(call, "count"),
                     cell(call, "errors"), format_duration_ms(member_or_null(call, "p50_ms")),
                     format_duration_ms(member_or_null(call, "p90_ms")),
                     format_duration_ms(member_or_null(call, "p99_ms")),
                     format_duration_ms(member_or_null(call, "max_ms"))});
    }
    table.print(out);
  }
  out << '\n';
  if (lanes->empty()) {
    out << "no lanes reported\n";
  } else {
    lane_table(*lanes).print(out);
  }
  if (auto printed = print_cluster(metrics, out); !printed) return printed;
  // Connections through the lanes' egress proxy (older daemons: no key).
  auto egress = objects_in(metrics, "egress", "metrics.get", false);
  if (!egress) return std::move(egress).error();
  if (!egress->empty()) {
    out << '\n';
    TextTable table({"NETWORK", "ALLOWED", "REFUSED", "BYTES", "REFUSED BY"});
    for (const json& lane : *egress) {
      table.add_row({cell(lane, "lane"), cell(lane, "allowed"), cell(lane, "refused"),
                     format_bytes(member_or_null(lane, "bytes")),
                     refusals(member_or_null(lane, "refused_by"))});
    }
    table.print(out);
  }
  return {};
}

}  // namespace loopr::client
