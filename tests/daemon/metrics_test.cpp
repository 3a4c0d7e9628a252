#include "daemon/metrics.hpp"

#include <gtest/gtest.h>

namespace loopr::daemon {
namespace {

TEST(Metrics, PercentilesComeFromTheRecordedDurations) {
  Metrics metrics;
  for (int ms = 1; ms <= 100; ++ms) {
    metrics.record_call("read_file", "no-net", ms != 100, std::chrono::milliseconds(ms));
  }
  auto calls = metrics.calls_json();
  ASSERT_EQ(calls.size(), 1u);
  EXPECT_EQ(calls[0]["count"], 100);
  EXPECT_EQ(calls[0]["errors"], 1);
  EXPECT_DOUBLE_EQ(calls[0]["p50_ms"].get<double>(), 50.0);
  EXPECT_DOUBLE_EQ(calls[0]["p90_ms"].get<double>(), 90.0);
  EXPECT_DOUBLE_EQ(calls[0]["p99_ms"].get<double>(), 99.0);
  EXPECT_DOUBLE_EQ(calls[0]["max_ms"].get<double>(), 100.0);
}

TEST(Metrics, MemoryStaysBoundedAndRecentCallsWin) {
  Metrics metrics;
  for (std::size_t i = 0; i < Metrics::kLatencySamples; ++i) {
    metrics.record_call("grep", "no-net", true, std::chrono::seconds(1));
  }
  for (std::size_t i = 0; i < Metrics::kLatencySamples; ++i) {
    metrics.record_call("grep", "no-net", true, std::chrono::milliseconds(2));
  }
  auto calls = metrics.calls_json();
  EXPECT_EQ(calls[0]["count"], 2 * Metrics::kLatencySamples);
  EXPECT_DOUBLE_EQ(calls[0]["max_ms"].get<double>(), 2.0);
}

TEST(Metrics, RunnerRestartsAreCountedPerLane) {
  Metrics metrics;
  metrics.record_runner_restart("net");
  metrics.record_runner_restart("net");
  metrics.record_runner_restart("heavy");
  EXPECT_EQ(metrics.runner_restarts("net"), 2u);
  EXPECT_EQ(metrics.runner_restarts("no-net"), 0u);
  EXPECT_EQ(metrics.total_runner_restarts(), 3u);
  EXPECT_GT(resident_set_bytes(), 0u);
}

}  // namespace
}  // namespace loopr::daemon
