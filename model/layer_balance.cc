// BalanceLayers: the contiguous layer split that makes the slowest pipeline stage fastest.
#include "model/layer_balance.h"

#include <algorithm>

namespace vipu::model {
namespace {

class Balancer {
 public:
  Balancer(const std::vector<double>& unit_seconds, double first_extra, double last_extra,
           uint32_t ipus)
      : prefix_(unit_seconds.size() + 1, 0),
        first_extra_(first_extra),
        last_extra_(last_extra),
        ipus_(ipus) {
    for (size_t i = 0; i < unit_seconds.size(); ++i) {
      prefix_[i + 1] = prefix_[i] + unit_seconds[i];
    }
  }

  std::vector<uint32_t> Run() {
    std::vector<uint32_t> split(ipus_, 0);
    size_t from = 0;
    // Settle one IPU at a time: the best bottleneck for the IPUs left, then
    // the fewest layers this IPU can keep under it.
    for (uint32_t ipu = 0; ipu + 1 < ipus_; ++ipu) {
      const double bottleneck = Bottleneck(from, ipu);
      const size_t end = FirstIpuEnd(bottleneck, from, ipu);
      split[ipu] = static_cast<uint32_t>(end - from);
      from = end;
    }
    split[ipus_ - 1] = static_cast<uint32_t>(prefix_.size() - 1 - from);
    return split;
  }

 private:
  double Cost(uint32_t ipu, size_t from, size_t to) const {
    double c = prefix_[to] - prefix_[from];
    if (ipu == 0) c += first_extra_;
    if (ipu + 1 == ipus_) c += last_extra_;
    return c;
  }

  // Fills IPUs ipus-1 .. first+1 backwards, each as far as `limit` allows;
  // returns where the first IPU's run ends. Greedy filling from the back
  // leaves the least for the front, so it is feasible whenever any split is.
  size_t FirstIpuEnd(double limit, size_t from, uint32_t first) const {
    size_t end = prefix_.size() - 1;
    for (uint32_t ipu = ipus_ - 1; ipu > first; --ipu) {
      size_t start = end;
      while (start > from && Cost(ipu, start - 1, end) <= limit) --start;
      end = start;
    }
    return end;
  }

  bool Feasible(double limit, size_t from, uint32_t first) const {
    return Cost(first, from, FirstIpuEnd(limit, from, first)) <= limit;
  }

  double Bottleneck(size_t from, uint32_t first) const {
    double lo = 0;
    double hi = Cost(first, from, prefix_.size() - 1) + first_extra_ + last_extra_;
    for (int i = 0; i < 100 && hi - lo > 1e-12 * hi; ++i) {
      const double mid = (lo + hi) / 2;
      (Feasible(mid, from, first) ? hi : lo) = mid;
    }
    return hi;
  }

  std::vector<double> prefix_;
  double first_extra_;
  double last_extra_;
  uint32_t ipus_;
};

}  // namespace

std::vector<uint32_t> BalanceLayers(const std::vector<double>& unit_seconds, double first_extra_s,
                                    double last_extra_s, uint32_t ipus) {
  if (ipus == 0) return {};
  return Balancer(unit_seconds, first_extra_s, last_extra_s, ipus).Run();
}

}  // namespace vipu::model
