// EventHub: every subscriber gets every event in order; one that does not
// read is dropped once its queue is full, without slowing the publisher or
// the others; the number of streams is capped; Close ends every stream.
#include "server/console/event_hub.h"

#include <atomic>
#include <string>
#include <thread>

#include "absl/strings/str_cat.h"
#include "gtest/gtest.h"
#include "server/console/history.h"

namespace vipu::server {
namespace {

TEST(ConsoleEventHubTest, FormatsServerSentEvents) {
  EXPECT_EQ(FormatEvent("state", "7"), "event: state\ndata: 7\n\n");
  EXPECT_EQ(FormatEvent("x", "a\nb"), "event: x\ndata: a\ndata: b\n\n");
}

TEST(ConsoleEventHubTest, StalledSubscriberIsDroppedOthersGetEverything) {
  EventHub hub(4, 8);
  auto reader = hub.Subscribe();
  auto stalled = hub.Subscribe();
  ASSERT_TRUE(reader.ok() && stalled.ok());
  std::atomic<int> received{0};
  std::thread consumer([&] {
    for (int i = 0; i < 100; ++i) {
      bool ended = false;
      std::optional<std::string> e;
      do {
        e = (*reader)->Next(absl::Seconds(1), &ended);
      } while (!e && !ended);
      if (ended) return;
      EXPECT_EQ(*e, FormatEvent("state", absl::StrCat(i)));
      ++received;
    }
  });
  for (int i = 0; i < 100; ++i) {
    // Stay within the reader's queue: wait until it is at most 4 behind.
    const absl::Time deadline = absl::Now() + absl::Seconds(30);
    while (i - received.load() >= 4 && absl::Now() < deadline) std::this_thread::yield();
    hub.Publish("state", absl::StrCat(i));
  }
  consumer.join();
  EXPECT_EQ(received.load(), 100);
  EXPECT_TRUE((*stalled)->DroppedForTesting());
  EXPECT_FALSE((*reader)->DroppedForTesting());
  EXPECT_EQ(hub.DroppedForTesting(), 1u);
  bool ended = false;
  EXPECT_FALSE((*stalled)->Next(absl::ZeroDuration(), &ended).has_value());
  EXPECT_TRUE(ended);
}

TEST(ConsoleEventHubTest, CapsSubscribersAndFreesSlots) {
  EventHub hub(2, 4);
  auto a = hub.Subscribe();
  auto b = hub.Subscribe();
  ASSERT_TRUE(a.ok() && b.ok());
  auto c = hub.Subscribe();
  ASSERT_FALSE(c.ok());
  EXPECT_EQ(c.status().code(), absl::StatusCode::kResourceExhausted);
  a->reset();
  EXPECT_EQ(hub.SubscribersForTesting(), 1u);
  EXPECT_TRUE(hub.Subscribe().ok());
}

TEST(ConsoleEventHubTest, CloseEndsStreamsAndRefusesNewOnes) {
  EventHub hub(2, 4);
  auto a = hub.Subscribe();
  ASSERT_TRUE(a.ok());
  std::thread closer([&] { hub.Close(); });
  bool ended = false;
  // Next wakes on Close well before its timeout.
  const absl::Time start = absl::Now();
  while (!ended && absl::Now() - start < absl::Seconds(30)) {
    (*a)->Next(absl::Seconds(30), &ended);
  }
  closer.join();
  EXPECT_TRUE(ended);
  EXPECT_LT(absl::Now() - start, absl::Seconds(30));
  EXPECT_EQ(hub.Subscribe().status().code(), absl::StatusCode::kUnavailable);
}

TEST(ConsoleHistoryTest, BoundedByCapacityAndWindow) {
  History h(5, absl::Minutes(1));
  const absl::Time t0 = absl::FromUnixSeconds(1000000);
  for (int i = 0; i < 20; ++i) {
    Sample s;
    s.unix_ms = absl::ToUnixMillis(t0 + absl::Seconds(i));
    s.by_allocation["a"].partitions = i;
    h.Add(s);
  }
  EXPECT_EQ(h.SizeForTesting(), 5u);
  auto all = h.Since(t0 + absl::Seconds(19), absl::Hours(1));
  ASSERT_EQ(all.size(), 5u);
  EXPECT_EQ(all.front().by_allocation["a"].partitions, 15u);
  EXPECT_EQ(all.back().by_allocation["a"].partitions, 19u);
  EXPECT_EQ(h.Since(t0 + absl::Seconds(19), absl::Seconds(2)).size(), 3u);
  Sample late;
  late.unix_ms = absl::ToUnixMillis(t0 + absl::Minutes(5));
  h.Add(late);
  EXPECT_EQ(h.SizeForTesting(), 1u);  // the others are older than the window
}

}  // namespace
}  // namespace vipu::server
