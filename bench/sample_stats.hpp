// Quantiles of a bench's samples, one definition for the benches that report
// p50/p90/p99: the sample at index min(n - 1, floor(q * n)) of the sorted
// samples (runner_latency_bench keeps its own nearest-rank rule, to stay
// comparable with its published figures).
#pragma once

#include <algorithm>
#include <cstddef>
#include <vector>

namespace loopr::bench {

struct SampleStats {
  std::size_t n = 0;
  double p50 = 0, p90 = 0, p99 = 0, max = 0;
};

inline double quantile_of_sorted(const std::vector<double>& sorted, double q) {
  if (sorted.empty()) return 0;
  return sorted[std::min(sorted.size() - 1,
                         static_cast<std::size_t>(q * static_cast<double>(sorted.size())))];
}

inline double quantile(std::vector<double> samples, double q) {
  std::sort(samples.begin(), samples.end());
  return quantile_of_sorted(samples, q);
}

inline SampleStats stats_of(std::vector<double> samples) {
  SampleStats s;
  s.n = samples.size();
  if (samples.empty()) return s;
  std::sort(samples.begin(), samples.end());
  s.p50 = quantile_of_sorted(samples, 0.50);
  s.p90 = quantile_of_sorted(samples, 0.90);
  s.p99 = quantile_of_sorted(samples, 0.99);
  s.max = samples.back();
  return s;
}

}  // namespace loopr::bench
