// Percentiles of a set of latencies, as every benchmark here reports them.
#ifndef VIPU_BENCH_LATENCY_SUMMARY_H_
#define VIPU_BENCH_LATENCY_SUMMARY_H_

#include <algorithm>
#include <vector>

namespace vipu::bench {

struct Summary {
  double p50 = 0, p99 = 0, p999 = 0, max = 0;
};

// Nearest-rank percentiles; all zero for no samples.
inline Summary Summarize(std::vector<double> v) {
  Summary s;
  if (v.empty()) return s;
  std::sort(v.begin(), v.end());
  auto at = [&](double p) {
    return v[std::min(v.size() - 1, static_cast<size_t>(p * static_cast<double>(v.size())))];
  };
  s.p50 = at(0.5);
  s.p99 = at(0.99);
  s.p999 = at(0.999);
  s.max = v.back();
  return s;
}

}  // namespace vipu::bench

#endif  // VIPU_BENCH_LATENCY_SUMMARY_H_
