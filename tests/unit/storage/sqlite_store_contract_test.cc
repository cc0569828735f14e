// The StoreContract suite (tests/unit/support/storage_contract.h) run against
// SqliteStore.
#include "tests/unit/support/storage_contract.h"

#include <memory>
#include <string>

#include "gtest/gtest.h"
#include "storage/sqlite_store.h"
#include "storage/store.h"

namespace vipu::storage {
namespace {

std::unique_ptr<Store> OpenSqliteStore(const std::string& dir) {
  absl::StatusOr<std::unique_ptr<SqliteStore>> store = SqliteStore::Open(dir + "/vipu.db");
  if (!store.ok()) {
    ADD_FAILURE() << "SqliteStore::Open(" << dir << "/vipu.db): " << store.status();
    return nullptr;
  }
  return *std::move(store);
}

INSTANTIATE_TEST_SUITE_P(Sqlite, StoreContract,
                         ::testing::Values(StoreContractParam{"Sqlite", &OpenSqliteStore}),
                         StoreContractParamName);

}  // namespace
}  // namespace vipu::storage
