// Micro-benchmarks of two hot paths, outside the unit tests so that no test
// asserts a time: placement of a 64-IPU partition on a 90%-fragmented pod256,
// and listing 10,000 partitions from the SQLite store.
//
//   placement_list_bench [--db-dir DIR]
#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <filesystem>
#include <string>
#include <vector>

#include "fabric/placement.h"
#include "fabric/pods.h"
#include "fabric/topology.h"
#include "storage/sqlite_store.h"
#include "storage/store.h"

namespace {

using Clock = std::chrono::steady_clock;

double Percentile(std::vector<double> v, double p) {
  std::sort(v.begin(), v.end());
  return v[std::min(v.size() - 1, static_cast<size_t>(p * static_cast<double>(v.size())))];
}

void BenchPlacement() {
  auto pod = vipu::fabric::PodPreset("pod256");
  auto layout = vipu::fabric::ClusterLayout::Build(vipu::fabric::PodCluster(*pod, "pod256"));
  std::set<std::string> agents(layout->cluster().agent_ids.begin(),
                               layout->cluster().agent_ids.end());
  // 90% of every ILD used except one IPU in ten; the last ILD keeps a free
  // aligned 64 only in the first case.
  std::set<vipu::fabric::IpuRef> used, full;
  for (uint32_t ild = 0; ild < 4; ++ild) {
    for (uint32_t t = 0; t < 64; ++t) {
      if (t % 10 == 3) continue;
      full.insert(layout->IpuAt(ild, t));
      if (ild < 3) used.insert(layout->IpuAt(ild, t));
    }
  }
  vipu::fabric::PlacementRequest req;
  req.size = 64;
  std::vector<double> fit_us, refuse_us;
  for (int i = 0; i < 2000; ++i) {
    auto t0 = Clock::now();
    auto a = vipu::fabric::Place(*layout, agents, used, req);
    auto t1 = Clock::now();
    auto b = vipu::fabric::Place(*layout, agents, full, req);
    auto t2 = Clock::now();
    if (!a.ok() || b.ok()) {
      std::fprintf(stderr, "unexpected placement outcome\n");
      std::exit(1);
    }
    fit_us.push_back(std::chrono::duration<double, std::micro>(t1 - t0).count());
    refuse_us.push_back(std::chrono::duration<double, std::micro>(t2 - t1).count());
  }
  std::printf("| placement, 64 IPUs, pod256 90%% fragmented, fits | %.1f us | %.1f us |\n",
              Percentile(fit_us, 0.5), Percentile(fit_us, 0.99));
  std::printf("| placement, 64 IPUs, pod256 90%% fragmented, refused | %.1f us | %.1f us |\n",
              Percentile(refuse_us, 0.5), Percentile(refuse_us, 0.99));
}

void BenchList(const std::string& dir) {
  std::filesystem::create_directories(dir);
  const std::string path = dir + "/list-bench.db";
  std::filesystem::remove(path);
  auto store = vipu::storage::SqliteStore::Open(path);
  if (!store.ok()) {
    std::fprintf(stderr, "%s\n", store.status().ToString().c_str());
    std::exit(1);
  }
  constexpr int kPartitions = 10000;
  absl::Status s = (*store)->Write([&](vipu::storage::WriteTxn& txn) -> absl::Status {
    vipu::fabric::Cluster cluster{
        "big", {}, 1, vipu::fabric::IldTopology::kTorus, vipu::fabric::ClusterTopology::kLooped};
    const int machines = kPartitions * 10 / 4 / 4 + 1;
    for (int m = 0; m < machines; ++m) {
      vipu::fabric::Agent a{"m" + std::to_string(m), "127.0.0.1", 1, {}};
      if (absl::Status st = txn.InsertAgent(a); !st.ok()) return st;
      cluster.agent_ids.push_back(a.id);
    }
    if (absl::Status st = txn.InsertCluster(cluster); !st.ok()) return st;
    if (absl::Status st = txn.InsertAllocation({"al", "big", cluster.agent_ids}); !st.ok())
      return st;
    int machine = 0, slot = 0;
    for (int i = 0; i < kPartitions; ++i) {
      vipu::fabric::Partition p;
      p.id = "p" + std::to_string(i);
      p.cluster_id = "big";
      p.allocation_id = "al";
      for (int k = 0; k <= i % 4; ++k) {
        vipu::fabric::PartitionIpu ipu;
        ipu.routing_id = k;
        ipu.ipu = {"m" + std::to_string(machine), static_cast<uint32_t>(slot)};
        p.ipus.push_back(ipu);
        if (++slot == 4) slot = 0, ++machine;
      }
      if (absl::Status st = txn.InsertPartition(p); !st.ok()) return st;
    }
    return absl::OkStatus();
  });
  if (!s.ok()) {
    std::fprintf(stderr, "%s\n", s.ToString().c_str());
    std::exit(1);
  }
  std::vector<double> ms;
  for (int i = 0; i < 30; ++i) {
    auto t0 = Clock::now();
    size_t n = 0;
    (void)(*store)->Read([&](vipu::storage::ReadTxn& txn) -> absl::Status {
      auto list = txn.ListPartitions();
      n = list.ok() ? list->size() : 0;
      return absl::OkStatus();
    });
    ms.push_back(std::chrono::duration<double, std::milli>(Clock::now() - t0).count());
    if (n != kPartitions) std::exit(1);
  }
  std::printf("| storage ListPartitions, 10,000 partitions | %.1f ms | %.1f ms |\n",
              Percentile(ms, 0.5), Percentile(ms, 0.99));
  store->reset();
  std::filesystem::remove_all(dir);
}

}  // namespace

int main(int argc, char** argv) {
  std::string dir = "/tmp/vipu-bench-" + std::to_string(getpid());
  if (argc == 3 && std::string(argv[1]) == "--db-dir") dir = argv[2];
  std::printf("| case | p50 | p99 |\n|---|---|---|\n");
  BenchPlacement();
  BenchList(dir);
  return 0;
}
