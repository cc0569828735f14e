// A PartitionController with everything it stands on, for unit tests.
#ifndef VIPU_TESTS_UNIT_SUPPORT_CONTROLLER_HARNESS_H_
#define VIPU_TESTS_UNIT_SUPPORT_CONTROLLER_HARNESS_H_

#include <algorithm>
#include <cstdint>
#include <memory>
#include <string>
#include <utility>
#include <vector>

#include "absl/status/statusor.h"
#include "absl/strings/str_cat.h"
#include "absl/time/clock.h"
#include "fabric/types.h"
#include "server/control/partition_controller.h"
#include "server/fleet/agent_client.h"
#include "server/fleet/agent_driver.h"
#include "server/fleet/agent_registry.h"
#include "server/fleet/cluster_links_cache.h"
#include "storage/sqlite_store.h"
#include "storage/store.h"
#include "tests/unit/support/refusing_store.h"
#include "tests/unit/support/temp_dir.h"

namespace vipu::test {

// A fresh store in a temporary directory (behind a RefusingStore, so a test
// can make it refuse), the cluster-links cache, a registry whose agents stay
// Up for the whole test (an hour's heartbeat period), a driver over the
// test's agent client and the controller.
// Members are declared in the order they are built, so that destruction
// stops the controller's workers first and removes the directory last.
// Not thread-safe itself; the parts are as their headers say.
class ControllerHarness {
 public:
  // `client` is the test's and must outlive the harness. Errors: the
  // store's.
  static absl::StatusOr<std::unique_ptr<ControllerHarness>> Open(const std::string& prefix,
                                                                 server::AgentClient* client,
                                                                 int workers) {
    std::unique_ptr<ControllerHarness> h(new ControllerHarness(prefix, workers));
    auto store = storage::SqliteStore::Open(h->dir.File("vipu.db"));
    if (!store.ok()) return store.status();
    h->store = std::make_unique<RefusingStore>(*std::move(store));
    h->driver = std::make_unique<server::AgentDriver>(client);
    h->controller = std::make_unique<server::PartitionController>(
        h->store.get(), &h->cluster_links, &h->registry, h->driver.get(), workers);
    return h;
  }

  // Stops the controller and puts a new one in its place over the same
  // store, registry and driver: what a server start finds after the last
  // one went away.
  void RestartController() {
    controller.reset();
    controller = std::make_unique<server::PartitionController>(store.get(), &cluster_links,
                                                               &registry, driver.get(), workers_);
  }

  // Registers `id` Up at 127.0.0.1:`port` and records it as an M2000 in the
  // store. Errors: the store's.
  absl::Status AddMachine(const std::string& id, uint32_t port) {
    server::LiveAgent a;
    a.id = id;
    a.host = "127.0.0.1";
    a.port = port;
    registry.Register(a, absl::Now());
    return store->Write([&](storage::WriteTxn& txn) {
      return txn.InsertAgent({id, "127.0.0.1", port, fabric::MachineType::kM2000});
    });
  }

  // Machines m0..m<machines - 1> (AddMachine, on ports 7000 + i), cluster
  // "c" of them in `num_ilds` ILDs and allocation "all" of every one.
  // Returns their ids in the cluster's order. Errors: the store's.
  absl::StatusOr<std::vector<std::string>> AddCluster(int machines, uint32_t num_ilds) {
    std::vector<std::string> ids;
    for (int i = 0; i < machines; ++i) {
      ids.push_back(absl::StrCat("m", i));
      if (absl::Status s = AddMachine(ids.back(), static_cast<uint32_t>(7000 + i)); !s.ok()) {
        return s;
      }
    }
    absl::Status s = store->Write([&](storage::WriteTxn& txn) -> absl::Status {
      fabric::Cluster c{"c", ids, num_ilds, fabric::IldTopology::kTorus,
                        fabric::ClusterTopology::kSwitched};
      if (absl::Status s = txn.InsertCluster(c); !s.ok()) return s;
      return txn.InsertAllocation({"all", "c", ids});
    });
    if (!s.ok()) return s;
    return ids;
  }

  // Creates partition `id` of `size` IPUs, the other options left to their
  // defaults but `relocatable`.
  absl::StatusOr<fabric::Partition> Create(const std::string& id, uint32_t size,
                                           bool relocatable = false) {
    fabric::PartitionRequest r;
    r.id = id;
    r.size = size;
    r.relocatable = relocatable;
    return controller->Create(r);
  }

  // Creates partitions filler0, filler1, ... of `size` IPUs until placement
  // refuses one for want of room; returns their ids. Errors: any other
  // refusal.
  absl::StatusOr<std::vector<std::string>> Fill(uint32_t size) {
    std::vector<std::string> ids;
    for (;;) {
      const std::string id = absl::StrCat("filler", ids.size());
      auto created = Create(id, size);
      if (absl::IsResourceExhausted(created.status())) return ids;
      if (!created.ok()) return created.status();
      ids.push_back(id);
    }
  }

  // The partition once it is no longer PS_PENDING, read again each time a
  // change of it is announced; still PS_PENDING if `timeout` passes first.
  // A superseded operation's outcome is announced too, hence the loop.
  absl::StatusOr<fabric::Partition> Settled(const std::string& id,
                                            absl::Duration timeout = absl::Seconds(10)) {
    const absl::Time deadline = absl::Now() + timeout;
    for (;;) {
      auto p = controller->GetSettled(id, deadline);
      if (!p.ok() || p->ready_state != fabric::ReadyState::kPending || absl::Now() >= deadline) {
        return p;
      }
    }
  }

  // The machines holding `p`'s IPUs, each once, in the partition's order.
  static std::vector<std::string> MachinesOf(const fabric::Partition& p) {
    std::vector<std::string> machines;
    for (const fabric::PartitionIpu& ipu : p.ipus) {
      const std::string& agent = ipu.ipu.agent_id;
      if (std::find(machines.begin(), machines.end(), agent) == machines.end()) {
        machines.push_back(agent);
      }
    }
    return machines;
  }

  TempDir dir;
  std::unique_ptr<RefusingStore> store;
  server::ClusterLinksCache cluster_links;
  server::AgentRegistry registry{absl::Hours(1)};
  std::unique_ptr<server::AgentDriver> driver;
  std::unique_ptr<server::PartitionController> controller;

 private:
  ControllerHarness(const std::string& prefix, int workers) : dir(prefix), workers_(workers) {}

  const int workers_;  // for the controllers RestartController builds
};

}  // namespace vipu::test

#endif  // VIPU_TESTS_UNIT_SUPPORT_CONTROLLER_HARNESS_H_
