#include "daemon/metrics.hpp"

#include <unistd.h>

#include <algorithm>
#include <cmath>
#include <fstream>

namespace loopr::daemon {
namespace {

double percentile_ms(std::vector<std::int64_t> sorted_us, double fraction) {
  if (sorted_us.empty()) return 0;
  const auto rank =
      static_cast<std::size_t>(std::ceil(fraction * static_cast<double>(sorted_us.size())));
  const std::size_t index = std::min(sorted_us.size() - 1, rank == 0 ? 0 : rank - 1);
  return static_cast<double>(sorted_us[index]) / 1000.0;
}

}  // namespace

void Metrics::record_call(const std::string& tool, const std::string& lane, bool ok,
                          std::chrono::microseconds duration) {
  CallStats& stats = calls_[{tool, lane}];
  ++stats.count;
  if (!ok) ++stats.errors;
  const std::int64_t us = duration.count();
  if (stats.samples_us.size() < kLatencySamples) {
    stats.samples_us.push_back(us);
  } else {
    stats.samples_us[stats.next_sample] = us;
    stats.next_sample = (stats.next_sample + 1) % kLatencySamples;
  }
}

void Metrics::record_connection(const std::string& lane, bool allowed, const std::string& rule,
                                std::uint64_t bytes) {
  EgressStats& stats = egress_[lane];
  stats.bytes += bytes;
  if (allowed) {
    ++stats.allowed;
  } else {
    ++stats.refused;
    ++stats.refused_by[rule];
  }
}

nlohmann::json Metrics::egress_json() const {
  nlohmann::json out = nlohmann::json::array();
  for (const auto& [lane, stats] : egress_) {
    out.push_back({{"lane", lane},
                   {"allowed", stats.allowed},
                   {"refused", stats.refused},
                   {"bytes", stats.bytes},
                   {"refused_by", stats.refused_by}});
  }
  return out;
}

void Metrics::record_runner_restart(const std::string& lane) {
  ++restarts_[lane];
}

std::uint64_t Metrics::runner_restarts(const std::string& lane) const {
  auto it = restarts_.find(lane);
  return it == restarts_.end() ? 0 : it->second;
}

std::uint64_t Metrics::total_runner_restarts() const {
  std::uint64_t total = 0;
  for (const auto& [lane, count] : restarts_)
    total += count;
  return total;
}

nlohmann::json Metrics::calls_json() const {
  nlohmann::json out = nlohmann::json::array();
  for (const auto& [key, stats] : calls_) {
    std::vector<std::int64_t> sorted = stats.samples_us;
    std::sort(sorted.begin(), sorted.end());
    out.push_back({{"tool", key.first},
                   {"lane", key.second},
                   {"count", stats.count},
                   {"errors", stats.errors},
                   {"p50_ms", percentile_ms(sorted, 0.50)},
                   {"p90_ms", percentile_ms(sorted, 0.90)},
                   {"p99_ms", percentile_ms(sorted, 0.99)},
                   {"max_ms", sorted.empty() ? 0.0 : static_cast<double>(sorted.back()) / 1000}});
  }
  return out;
}

std::uint64_t resident_set_bytes() {
  std::ifstream statm("/proc/self/statm");
  std::uint64_t size = 0;
  std::uint64_t resident = 0;
  if (!(statm >> size >> resident)) return 0;
  return resident * static_cast<std::uint64_t>(::sysconf(_SC_PAGESIZE));
}

}  // namespace loopr::daemon
