// A PartitionController with everything it stands on, for unit tests.
#ifndef VIPU_TESTS_UNIT_SUPPORT_CONTROLLER_HARNESS_H_
#define VIPU_TESTS_UNIT_SUPPORT_CONTROLLER_HARNESS_H_

#include <cstdint>
#include <memory>
#include <string>
#include <utility>

#include "absl/status/statusor.h"
#include "absl/time/clock.h"
#include "server/control/partition_controller.h"
#include "server/fleet/agent_client.h"
#include "server/fleet/agent_driver.h"
#include "server/fleet/agent_registry.h"
#include "server/fleet/cluster_links_cache.h"
#include "storage/sqlite_store.h"
#include "storage/store.h"
#include "tests/unit/support/temp_dir.h"

namespace vipu::test {

// A fresh store in a temporary directory, the cluster-links cache, a
// registry whose agents stay Up for the whole test (an hour's heartbeat
// period), a driver over the test's agent client and the controller.
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
    std::unique_ptr<ControllerHarness> h(new ControllerHarness(prefix));
    auto store = storage::SqliteStore::Open(h->dir.File("vipu.db"));
    if (!store.ok()) return store.status();
    h->store = *std::move(store);
    h->driver = std::make_unique<server::AgentDriver>(&h->registry, client);
    h->controller = std::make_unique<server::PartitionController>(
        h->store.get(), &h->cluster_links, &h->registry, h->driver.get(), workers);
    return h;
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

  TempDir dir;
  std::unique_ptr<storage::Store> store;
  server::ClusterLinksCache cluster_links;
  server::AgentRegistry registry{absl::Hours(1)};
  std::unique_ptr<server::AgentDriver> driver;
  std::unique_ptr<server::PartitionController> controller;

 private:
  explicit ControllerHarness(const std::string& prefix) : dir(prefix) {}
};

}  // namespace vipu::test

#endif  // VIPU_TESTS_UNIT_SUPPORT_CONTROLLER_HARNESS_H_
