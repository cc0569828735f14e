// An IPU of a GCD is attached to one application at a time: a second one is
// refused naming the holder, nothing is attached by a refusal, and detaching
// (by ticket, or with the partition) frees the IPUs.
#include "agents/attachments.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

namespace vipu::agents {
namespace {

using ::testing::ElementsAre;
using ::testing::HasSubstr;
using ::testing::Pair;

const Attachments::Place kGcd0{"ag1", "p1", 0};

TEST(AttachmentsTest, AnIpuInUseIsRefusedNamingItsHolder) {
  Attachments attachments;
  ASSERT_TRUE(attachments.Attach(kGcd0, {0, 1}, "pid 7 on a").ok());
  absl::StatusOr<uint64_t> second = attachments.Attach(kGcd0, {1, 2}, "pid 8 on b");
  ASSERT_FALSE(second.ok());
  EXPECT_TRUE(absl::IsFailedPrecondition(second.status()));
  EXPECT_THAT(second.status().message(),
              HasSubstr("partition p1 GCD 0: IPU 1 is in use by pid 7 on a"));
  // The refusal attached nothing: IPU 2 is still free.
  EXPECT_THAT(attachments.AttachedAt(kGcd0),
              ElementsAre(Pair(0, "pid 7 on a"), Pair(1, "pid 7 on a")));
  EXPECT_TRUE(attachments.Attach(kGcd0, {2, 3}, "pid 8 on b").ok());
}

TEST(AttachmentsTest, OtherGcdsPartitionsAndMachinesAreApart) {
  Attachments attachments;
  ASSERT_TRUE(attachments.Attach(kGcd0, {0}, "a").ok());
  EXPECT_TRUE(attachments.Attach({"ag1", "p1", 1}, {0}, "b").ok());
  EXPECT_TRUE(attachments.Attach({"ag1", "p2", 0}, {0}, "c").ok());
  EXPECT_TRUE(attachments.Attach({"ag2", "p1", 0}, {0}, "d").ok());
}

TEST(AttachmentsTest, DetachFreesTheIpusOnce) {
  Attachments attachments;
  absl::StatusOr<uint64_t> ticket = attachments.Attach(kGcd0, {0, 1, 2, 3}, "a");
  ASSERT_TRUE(ticket.ok());
  attachments.Detach(*ticket);
  attachments.Detach(*ticket);  // already freed: ignored
  EXPECT_TRUE(attachments.AttachedAt(kGcd0).empty());
  EXPECT_TRUE(attachments.Attach(kGcd0, {0, 1, 2, 3}, "b").ok());
}

TEST(AttachmentsTest, AReleasedPartitionFreesItsIpus) {
  Attachments attachments;
  ASSERT_TRUE(attachments.Attach(kGcd0, {0}, "a").ok());
  ASSERT_TRUE(attachments.Attach({"ag1", "p2", 0}, {0}, "b").ok());
  attachments.DetachPartition("ag1", "p1");
  EXPECT_TRUE(attachments.AttachedAt(kGcd0).empty());
  EXPECT_EQ(attachments.AttachedAt({"ag1", "p2", 0}).size(), 1u);
}

TEST(AttachmentsTest, BadIpuListsAreRefusedAndAttachNothing) {
  Attachments attachments;
  for (const std::vector<uint32_t>& ipus :
       {std::vector<uint32_t>{}, std::vector<uint32_t>{1, 1}, std::vector<uint32_t>(65, 0)}) {
    absl::StatusOr<uint64_t> refused = attachments.Attach(kGcd0, ipus, "a");
    ASSERT_FALSE(refused.ok());
    EXPECT_TRUE(absl::IsInvalidArgument(refused.status())) << refused.status();
    EXPECT_THAT(refused.status().message(), HasSubstr("ipus:"));
  }
  EXPECT_TRUE(attachments.AttachedAt(kGcd0).empty());
}

}  // namespace
}  // namespace vipu::agents
