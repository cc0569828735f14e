// Simulated pods started at the same moment on one host never collide: each
// new machine's agent takes its ports by binding them, so no two servers
// are handed the same port, and every pod starts.
#include <memory>
#include <set>
#include <stdexcept>
#include <string>
#include <thread>
#include <vector>

#include "absl/strings/str_cat.h"
#include "absl/synchronization/blocking_counter.h"
#include "absl/synchronization/notification.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "tests/integration/harness.h"
#include "tests/integration/machine_ports.h"

namespace vipu::testing {
namespace {

constexpr int kPods = 12;
constexpr int kRounds = 3;

TEST(SimultaneousPodsTest, TwelvePodsStartedAtOnceAllStartOnPortsOfTheirOwn) {
  for (int round = 1; round <= kRounds; ++round) {
    std::vector<std::unique_ptr<ServerProcess>> servers(kPods);
    std::vector<std::string> failures(kPods);
    // A server dies with the thread that started it (PR_SET_PDEATHSIG), so
    // each starter stays until the round is over.
    absl::BlockingCounter started(kPods);
    absl::Notification round_over;
    std::vector<std::thread> starters;
    for (int i = 0; i < kPods; ++i) {
      starters.emplace_back([&, i] {
        try {
          servers[i] = ServerProcess::Start("pod16");
        } catch (const std::exception& e) {
          failures[i] = e.what();
        }
        started.DecrementCount();
        round_over.WaitForNotification();
        servers[i].reset();
      });
    }
    started.Wait();
    for (int i = 0; i < kPods; ++i) {
      EXPECT_EQ(failures[i], "") << "round " << round << ", pod " << i;
    }
    // Every machine port of every pod is its own, and its partition's IPUoF
    // configs name it.
    std::set<uint32_t> every;
    for (int i = 0; i < kPods; ++i) {
      if (servers[i] == nullptr) continue;
      CommandResult r = servers[i]->Vipu({"create", "partition", "p", "--size", "16"});
      EXPECT_EQ(r.exit_code, 0) << "pod " << i << ": " << r.err << r.out;
      std::set<uint32_t> pod;
      for (const DevicePorts& d : IpuofDevicePorts(servers[i]->address(), "p")) {
        pod.insert(d.server_port);
        pod.insert(d.rdma_port);
      }
      EXPECT_EQ(pod.size(), 8u) << "pod " << i;  // 4 machines, two ports each
      for (uint32_t port : pod) {
        EXPECT_TRUE(every.insert(port).second) << "port " << port << " in two pods";
      }
    }
    round_over.Notify();
    for (std::thread& t : starters) t.join();
  }
}

}  // namespace
}  // namespace vipu::testing
