// Records and helpers the storage tests share: agents, IPUs and partitions
// to insert, a partition's IPUs as text, the ids of a store's agents, a
// collector of WriteAsync outcomes and a bounded wait for a condition.
#ifndef VIPU_TESTS_UNIT_SUPPORT_STORAGE_TEST_UTIL_H_
#define VIPU_TESTS_UNIT_SUPPORT_STORAGE_TEST_UTIL_H_

#include <chrono>
#include <condition_variable>
#include <functional>
#include <mutex>
#include <string>
#include <thread>
#include <utility>
#include <vector>

#include "absl/status/status.h"
#include "fabric/types.h"
#include "gtest/gtest.h"
#include "storage/store.h"

namespace vipu::storage::test_util {

inline fabric::Agent MakeAgent(const std::string& id, uint32_t port = 8100) {
  fabric::Agent a;
  a.id = id;
  a.host = "host-" + id;
  a.port = port;
  return a;
}

inline fabric::PartitionIpu Ipu(const std::string& agent, uint32_t ipu, uint32_t routing_id = 0) {
  fabric::PartitionIpu p;
  p.ipu = fabric::IpuRef{agent, ipu};
  p.routing_id = routing_id;
  p.topology_id = ipu;
  return p;
}

inline fabric::Partition MakePartition(const std::string& id, const std::string& cluster,
                                       const std::string& allocation,
                                       std::vector<fabric::PartitionIpu> ipus) {
  fabric::Partition p;
  p.id = id;
  p.cluster_id = cluster;
  p.allocation_id = allocation;
  p.ipus = std::move(ipus);
  return p;
}

// `ipus` as "agent:ipu/routing" in position order; "" for none.
inline std::string IpuList(const fabric::Partition& p) {
  std::string out;
  for (const fabric::PartitionIpu& ipu : p.ipus) {
    if (!out.empty()) out += " ";
    out += ipu.ipu.agent_id + ":" + std::to_string(ipu.ipu.ipu) + "/r" +
           std::to_string(ipu.routing_id);
  }
  return out;
}

inline std::vector<std::string> Summaries(const std::vector<fabric::Partition>& partitions) {
  std::vector<std::string> out;
  for (const fabric::Partition& p : partitions) out.push_back(p.id + "=[" + IpuList(p) + "]");
  return out;
}

// The ids of `store`'s agents, in the order ListAgents gives them.
inline std::vector<std::string> AgentIds(Store& store) {
  std::vector<std::string> ids;
  absl::Status s = store.Read([&](ReadTxn& txn) {
    absl::StatusOr<std::vector<fabric::Agent>> agents = txn.ListAgents();
    if (!agents.ok()) return agents.status();
    for (const auto& a : *agents) ids.push_back(a.id);
    return absl::OkStatus();
  });
  EXPECT_TRUE(s.ok()) << s;
  return ids;
}

// Collects WriteAsync outcomes; Await waits for `n` of them with a deadline.
class AsyncResults {
 public:
  std::function<void(absl::Status)> Callback() {
    return [this](absl::Status s) {
      std::lock_guard<std::mutex> lock(mu_);
      results_.push_back(std::move(s));
      cv_.notify_all();
    };
  }
  std::vector<absl::Status> Await(size_t n) {
    std::unique_lock<std::mutex> lock(mu_);
    cv_.wait_for(lock, std::chrono::seconds(30), [&] { return results_.size() >= n; });
    return results_;
  }

 private:
  std::mutex mu_;
  std::condition_variable cv_;
  std::vector<absl::Status> results_;
};

// Waits for `pred` with a deadline; false when it never held.
template <typename Pred>
bool WaitFor(Pred pred, std::chrono::seconds deadline = std::chrono::seconds(30)) {
  const auto end = std::chrono::steady_clock::now() + deadline;
  while (!pred()) {
    if (std::chrono::steady_clock::now() > end) return false;
    std::this_thread::yield();
  }
  return true;
}

}  // namespace vipu::storage::test_util

#endif  // VIPU_TESTS_UNIT_SUPPORT_STORAGE_TEST_UTIL_H_
