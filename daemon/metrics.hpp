// Metrics: what metrics.get reports (calls per tool and lane, latency
// percentiles, errors, runner restarts). Latencies are kept in a bounded ring
// per (tool, lane), so memory stays flat however many calls run.
// Threads: used only on the daemon's io thread.
#pragma once

#include <chrono>
#include <cstdint>
#include <map>
#include <nlohmann/json.hpp>
#include <string>
#include <utility>
#include <vector>

namespace loopr::daemon {

class Metrics {
 public:
  // The latest kLatencySamples durations of each (tool, lane) are kept.
  static constexpr std::size_t kLatencySamples = 4096;

  void record_call(const std::string& tool, const std::string& lane, bool ok,
                   std::chrono::microseconds duration);
  void record_runner_restart(const std::string& lane);
  // One connection through a lane's egress proxy, when it ended (refused
  // ones at once). `rule` is the proxy's ("allowed", "loopback", ...).
  void record_connection(const std::string& lane, bool allowed, const std::string& rule,
                         std::uint64_t bytes);

  std::uint64_t runner_restarts(const std::string& lane) const;
  std::uint64_t total_runner_restarts() const;
  // [{tool, lane, count, errors, p50_ms, p90_ms, p99_ms, max_ms}] in name order.
  nlohmann::json calls_json() const;
  // [{lane, allowed, refused, bytes, refused_by: {rule: count}}] in lane order.
  nlohmann::json egress_json() const;

 private:
  struct CallStats {
    std::uint64_t count = 0;
    std::uint64_t errors = 0;
    std::vector<std::int64_t> samples_us;  // ring once full
    std::size_t next_sample = 0;
  };
  std::map<std::pair<std::string, std::string>, CallStats> calls_;
  std::map<std::string, std::uint64_t> restarts_;
  struct EgressStats {
    std::uint64_t allowed = 0;
    std::uint64_t refused = 0;
    std::uint64_t bytes = 0;
    std::map<std::string, std::uint64_t> refused_by;  // rule -> count
  };
  std::map<std::string, EgressStats> egress_;
};

// Resident set size of this process in bytes (from /proc/self/statm), 0 if unknown.
std::uint64_t resident_set_bytes();

}  // namespace loopr::daemon
