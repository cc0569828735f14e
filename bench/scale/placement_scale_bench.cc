// Pure placement cost at the design limit: a cluster of 16,384
// machines (65,536 IPUs) in 1,024 ILDs of 64 IPUs, switched GW-Links (or
// of --machines, a multiple of 16, as run_scale.sh passes it). Times
// ClusterLayout::Build and fabric::Place for 64- and 256-IPU partitions when
// 90% of the ILDs are full (the free ones last, so the scan sees every ILD),
// and a refusal when no ILD has a free aligned block. No I/O, no server.
// Place is timed as the server calls it on every create: masks from the
// allowed machines and the used IPUs (MasksOf), then Place; the layout is
// built once per cluster.
//
//   placement_scale_bench [--iterations N] [--machines M]   prints a markdown table (us);
//   a size that cannot fit in the free ILDs gets a row of "-"
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

// The cluster's size: 16,384 machines in 1,024 ILDs unless --machines says.
uint32_t g_machines = 16384;
uint32_t g_ilds = 1024;

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
    if (std::strcmp(argv[i], "--machines") == 0) {
      g_machines = std::max(16, std::atoi(argv[i + 1]) / 16 * 16);
      g_ilds = g_machines / 16;
    }
  }
  vipu::fabric::Cluster cluster{"pod64k",
                                {},
                                g_ilds,
                                vipu::fabric::IldTopology::kTorus,
                                vipu::fabric::ClusterTopology::kSwitched};
  for (uint32_t m = 0; m < g_machines; ++m) cluster.agent_ids.push_back("m" + std::to_string(m));

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
  // The last 10% of the ILDs are free (at least one).
  const uint32_t free_from = g_ilds - std::max<uint32_t>(1, g_ilds / 10);
  for (uint32_t ild = 0; ild < g_ilds; ++ild) {
    for (uint32_t t = 0; t < 64; ++t) {
      if (ild < free_from) used.insert(layout->IpuAt(ild, t));
      if (t % 16 != 5) full.insert(layout->IpuAt(ild, t));  // no free aligned 64 or 16 anywhere
    }
  }
  std::printf("| placement on %u machines, %u ILDs (p50 / p99) | us p50 | us p99 |\n", g_machines,
              g_ilds);
  std::printf("|---|---|---|\n");
  Row("ClusterLayout::Build", build_us);
  for (uint32_t size : {64u, 256u}) {
    const std::string fits = "Place " + std::to_string(size) + " IPUs, 90% of ILDs full, fits";
    const std::string refuses = "Place " + std::to_string(size) + " IPUs, fragmented, refused";
    if (size > 64 * (g_ilds - free_from)) {  // more than the free ILDs hold
      std::printf("| %s | - | - |\n| %s | - | - |\n", fits.c_str(), refuses.c_str());
      continue;
    }
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
    Row(fits.c_str(), fit_us);
    Row(refuses.c_str(), refuse_us);
  }
  return 0;
}
