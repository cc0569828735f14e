// PartitionWatch: a change announced after Watch() wakes the reader, one of
// another partition does not, and nothing is kept once nobody watches.
#include <gtest/gtest.h>

#include <atomic>
#include <thread>

#include "absl/time/clock.h"
#include "server/control/partition_watch.h"

namespace vipu::server {
namespace {

TEST(PartitionWatchTest, ChangeBetweenWatchAndWaitIsNotMissed) {
  PartitionWatch watch;
  PartitionWatch::Ticket ticket = watch.Watch("p");
  watch.Announce("p");
  // Already announced: returns at once, even with a deadline in the past.
  EXPECT_TRUE(ticket.Wait(absl::InfinitePast()));
}

TEST(PartitionWatchTest, NoChangeMeansFalseAtTheDeadline) {
  PartitionWatch watch;
  PartitionWatch::Ticket ticket = watch.Watch("p");
  watch.Announce("other");
  EXPECT_FALSE(ticket.Wait(absl::Now() + absl::Milliseconds(20)));
}

TEST(PartitionWatchTest, AnnounceFromAnotherThreadWakesTheReader) {
  PartitionWatch watch;
  PartitionWatch::Ticket ticket = watch.Watch("p");
  std::atomic<bool> woke{false};
  std::thread reader([&] { woke = ticket.Wait(absl::InfiniteFuture()); });
  watch.Announce("p");
  reader.join();
  EXPECT_TRUE(woke);
}

TEST(PartitionWatchTest, EveryReaderOfThePartitionWakes) {
  PartitionWatch watch;
  PartitionWatch::Ticket a = watch.Watch("p");
  PartitionWatch::Ticket b = watch.Watch("p");
  EXPECT_EQ(watch.WatchedForTesting(), 1u);
  std::thread ta([&] { EXPECT_TRUE(a.Wait(absl::InfiniteFuture())); });
  std::thread tb([&] { EXPECT_TRUE(b.Wait(absl::InfiniteFuture())); });
  watch.Announce("p");
  ta.join();
  tb.join();
}

TEST(PartitionWatchTest, NothingIsKeptForUnwatchedPartitions) {
  PartitionWatch watch;
  watch.Announce("never-watched");
  EXPECT_EQ(watch.WatchedForTesting(), 0u);
  {
    PartitionWatch::Ticket a = watch.Watch("p");
    PartitionWatch::Ticket b = watch.Watch("q");
    EXPECT_EQ(watch.WatchedForTesting(), 2u);
  }
  EXPECT_EQ(watch.WatchedForTesting(), 0u);
}

TEST(PartitionWatchTest, ALaterTicketDoesNotSeeEarlierChanges) {
  PartitionWatch watch;
  PartitionWatch::Ticket first = watch.Watch("p");
  watch.Announce("p");
  PartitionWatch::Ticket second = watch.Watch("p");
  EXPECT_TRUE(first.Wait(absl::InfinitePast()));
  EXPECT_FALSE(second.Wait(absl::InfinitePast()));
}

}  // namespace
}  // namespace vipu::server
