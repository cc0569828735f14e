// Pure placement cost at the design limit: a cluster of 16,384
// machines (65,536 IPUs) in 1,024 ILDs of 64 IPUs, switched GW-Links. Times
// ClusterLayout::Build and fabric::Place for 64- and 256-IPU partitions when
// 90% of the ILDs are full (the free ones last, so the scan sees every ILD),
// and a refusal when no ILD has a free aligned block. No I/O, no server.
// Place is timed as the server calls it on every create: masks from the
// allowed machines and the used IPUs (MasksOf), then Place; the layout is
// built once per cluster.
//
//   placement_scale_bench [--iterations N]   prints a markdown table (us)
#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <set>
#include <string>
#include <vector>

#include "fabric/placement.h"
#include "fabric/topology.h"

namespace {

using Clock = std::chrono::steady_clock;
using vipu::fabric::ClusterLayout;

constexpr uint32_t kMachines = 16384;
constexpr uint32_t kIlds = 1024;

double Percentile(std::vector<double> v, double p) {
  std::sort(v.begin(), v.end());
  return v[std::min(v.size() - 1, static_cast<size_t>(p * static_cast<double>(v.size())))];
}

double Us(Clock::time_point a, Clock::time_point b) {
  return std::chrono::duration<double, std::micro>(b - a).count();
}

void Row(const char* what, const std::vector<double>& us) {
  std::printf("| %s | %.1f | %.1f |\n", what, Percentile(us, 0.5), Percentile(us, 0.99));
}

}  // namespace

int main(int argc, char** argv) {
  int iterations = 200;
  for (int i = 1; i + 1 < argc; ++i) {
    if (std::strcmp(argv[i], "--iterations") == 0) iterations = std::max(1, std::atoi(argv[i + 1]));
  }
  vipu::fabric::Cluster cluster{"pod64k",
                                {},
                                kIlds,
                                vipu::fabric::IldTopology::kTorus,
                                vipu::fabric::ClusterTopology::kSwitched};
  for (uint32_t m = 0; m < kMachines; ++m) cluster.agent_ids.push_back("m" + std::to_string(m));

  std::vector<double> build_us;
  auto layout = ClusterLayout::Build(cluster);
  for (int i = 0; i < std::max(1, iterations / 20); ++i) {
    auto t0 = Clock::now();
    layout = ClusterLayout::Build(cluster);
    build_us.push_back(Us(t0, Clock::now()));
  }
  if (!layout.ok()) {
    std::fprintf(stderr, "%s\n", std::string(layout.status().message()).c_str());
    return 1;
  }
  const std::vector<bool> agents(cluster.agent_ids.size(), true);  // every machine Up
  std::set<vipu::fabric::IpuRef> used, full;
  const uint32_t free_from = kIlds - kIlds / 10;  // the last 10% of the ILDs are free
  for (uint32_t ild = 0; ild < kIlds; ++ild) {
    for (uint32_t t = 0; t < 64; ++t) {
      if (ild < free_from) used.insert(layout->IpuAt(ild, t));
      if (t % 16 != 5) full.insert(layout->IpuAt(ild, t));  // no free aligned 64 or 16 anywhere
    }
  }
  std::printf("| placement on %u machines, %u ILDs (p50 / p99) | us p50 | us p99 |\n", kMachines,
              kIlds);
  std::printf("|---|---|---|\n");
  Row("ClusterLayout::Build", build_us);
  for (uint32_t size : {64u, 256u}) {
    vipu::fabric::PlacementRequest request;
    request.size = size;
    std::vector<double> fit_us, refuse_us;
    for (int i = 0; i < iterations; ++i) {
      auto t0 = Clock::now();
      auto fit = vipu::fabric::Place(*layout, MasksOf(*layout, agents, used), request);
      auto t1 = Clock::now();
      auto refused = vipu::fabric::Place(*layout, MasksOf(*layout, agents, full), request);
      auto t2 = Clock::now();
      if (!fit.ok() || refused.ok() || fit->size() != size) {
        std::fprintf(stderr, "unexpected placement outcome for size %u: %s\n", size,
                     std::string(fit.status().message()).c_str());
        return 1;
      }
      fit_us.push_back(Us(t0, t1));
      refuse_us.push_back(Us(t1, t2));
    }
    const std::string fits = "Place " + std::to_string(size) + " IPUs, 90% of ILDs full, fits";
    const std::string refuses = "Place " + std::to_string(size) + " IPUs, fragmented, refused";
    Row(fits.c_str(), fit_us);
    Row(refuses.c_str(), refuse_us);
  }
  return 0;
}
