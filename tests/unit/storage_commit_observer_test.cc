// Store's commit observer sees every durable commit with its duration.
#include <atomic>
#include <string>

#include "gtest/gtest.h"
#include "storage/store.h"
#include "tests/unit/temp_dir.h"

namespace vipu::storage {
namespace {

TEST(CommitObserverTest, SeesEveryDurableCommitWithItsDuration) {
  test::TempDir dir("vipu-observer");
  {
    auto store = Store::Open(dir.File("v.db"));
    ASSERT_TRUE(store.ok()) << store.status();
    std::atomic<int> calls{0};
    std::atomic<size_t> writes{0};
    std::atomic<bool> negative{false};
    (*store)->SetCommitObserver([&](double seconds, size_t n) {
      ++calls;
      writes += n;
      if (seconds < 0) negative = true;
    });
    const uint64_t before = (*store)->commits();
    for (int i = 0; i < 3; ++i) {
      fabric::Agent a;
      a.id = "a" + std::to_string(i);
      a.host = "127.0.0.1";
      a.port = 8080;
      ASSERT_TRUE((*store)->Write([&](WriteTxn& txn) { return txn.InsertAgent(a); }).ok());
    }
    // A failed callback commits nothing and is not observed.
    EXPECT_FALSE((*store)->Write([](WriteTxn&) { return absl::InvalidArgumentError("no"); }).ok());
    EXPECT_EQ(calls.load(), static_cast<int>((*store)->commits() - before));
    EXPECT_EQ(calls.load(), 3);
    EXPECT_EQ(writes.load(), 3u);
    EXPECT_FALSE(negative.load());
    (*store)->SetCommitObserver(nullptr);
    fabric::Agent b;
    b.id = "b";
    b.host = "127.0.0.1";
    b.port = 1;
    ASSERT_TRUE((*store)->Write([&](WriteTxn& txn) { return txn.InsertAgent(b); }).ok());
    EXPECT_EQ(calls.load(), 3);
  }
}

}  // namespace
}  // namespace vipu::storage
