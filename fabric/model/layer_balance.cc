#include "fabric/model/layer_balance.h"

#include <algorithm>
#include <limits>

namespace vipu::fabric::model {

std::vector<uint32_t> BalanceLayers(const std::vector<double>& unit_seconds,
                                    double first_extra_s, double last_extra_s, uint32_t ipus) {
  const size_t n = unit_seconds.size();
  std::vector<uint32_t> split(ipus, 0);
  if (ipus == 0) return split;
  if (ipus == 1) {
    split[0] = static_cast<uint32_t>(n);
    return split;
  }
  std::vector<double> prefix(n + 1, 0);
  for (size_t i = 0; i < n; ++i) prefix[i + 1] = prefix[i] + unit_seconds[i];
  auto cost = [&](uint32_t ipu, size_t from, size_t to) {
    double c = prefix[to] - prefix[from];
    if (ipu == 0) c += first_extra_s;
    if (ipu + 1 == ipus) c += last_extra_s;
    return c;
  };
  // best[j][i]: smallest bottleneck placing the first i layers on IPUs 0..j.
  constexpr double kInf = std::numeric_limits<double>::infinity();
  std::vector<double> prev(n + 1), cur(n + 1);
  for (size_t i = 0; i <= n; ++i) prev[i] = cost(0, 0, i);
  for (uint32_t j = 1; j < ipus; ++j) {
    for (size_t i = 0; i <= n; ++i) {
      double best = kInf;
      for (size_t k = 0; k <= i; ++k) best = std::min(best, std::max(prev[k], cost(j, k, i)));
      cur[i] = best;
    }
    std::swap(prev, cur);
  }
  const double bottleneck = prev[n] * (1 + 1e-9) + 1e-15;
  // Fill from the last IPU backwards; greedy is feasible whenever any split
  // meets the bottleneck.
  size_t end = n;
  for (uint32_t j = ipus - 1; j > 0; --j) {
    size_t start = end;
    while (start > 0 && cost(j, start - 1, end) <= bottleneck) --start;
    split[j] = static_cast<uint32_t>(end - start);
    end = start;
  }
  split[0] = static_cast<uint32_t>(end);
  return split;
}

}  // namespace vipu::fabric::model
