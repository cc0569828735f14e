// The contract of storage/store.h as a value-parameterized GoogleTest suite,
// StoreContract, that every Store implementation runs: records of each kind
// inserted, read, listed, updated and deleted; the error codes; invariant 1
// (an IPU in at most one partition); generations; all-or-nothing callbacks;
// WriteAsync; snapshots; users and shared marks.
//
// The test bodies live in the `storage_contract` library
// (tests/unit/support/storage_contract.cc); a test binary links it and instantiates
// the suite once per implementation, in namespace vipu::storage:
//
//   INSTANTIATE_TEST_SUITE_P(
//       Etcd, StoreContract,
//       ::testing::Values(StoreContractParam{"Etcd", [](const std::string& dir) {...}}),
//       StoreContractParamName);
//
// Behaviour only one implementation has (files, schema migration, group
// commit counts, caches) is tested next to it, not here.
#ifndef VIPU_TESTS_UNIT_SUPPORT_STORAGE_CONTRACT_H_
#define VIPU_TESTS_UNIT_SUPPORT_STORAGE_CONTRACT_H_

#include <functional>
#include <memory>
#include <ostream>
#include <string>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "gtest/gtest.h"
#include "storage/store.h"
#include "tests/unit/support/temp_dir.h"

namespace vipu::storage {

// Opens the Store kept under `dir`, a fresh empty directory owned by the test
// (an implementation that keeps nothing on disk may use it as a unique name).
// Called again with the same `dir` after the previous store was destroyed, it
// must give back the same state: that is how the suite tests durability.
// Returns nullptr (after reporting why, e.g. with ADD_FAILURE) when it cannot.
using StoreFactory = std::function<std::unique_ptr<Store>(const std::string& dir)>;

struct StoreContractParam {
  std::string name;  // the implementation, as a GoogleTest name: [A-Za-z0-9_]+
  StoreFactory factory;
};

// For GoogleTest's messages and test names.
void PrintTo(const StoreContractParam& param, std::ostream* os);
std::string StoreContractParamName(const ::testing::TestParamInfo<StoreContractParam>& info);

// A store (from the parameter's factory) holding agents a0..a5; cluster
// c1 = a0..a3 and c2 = a4, a5; allocations al1 = a0, a1 and al2 = a2, a3 in
// c1, al3 = a4 in c2; no partitions, no users.
class StoreContract : public ::testing::TestWithParam<StoreContractParam> {
 protected:
  void SetUp() override;

  // Destroys the store and opens it again from the same directory.
  void Reopen();

  absl::Status W(const std::function<absl::Status(WriteTxn&)>& fn) { return store_->Write(fn); }

  // fn's value from a Read, or the Read's error.
  template <typename T>
  absl::StatusOr<T> R(const std::function<absl::StatusOr<T>(ReadTxn&)>& fn) {
    absl::StatusOr<T> out = absl::UnknownError("not run");
    absl::Status s = store_->Read([&](ReadTxn& txn) {
      out = fn(txn);
      return absl::OkStatus();
    });
    if (!s.ok()) return s;
    return out;
  }

  test::TempDir dir_{"vipu-store-contract"};
  std::unique_ptr<Store> store_;
};

}  // namespace vipu::storage

#endif  // VIPU_TESTS_UNIT_SUPPORT_STORAGE_CONTRACT_H_
