// `vipu-admin move leadership` on real etcd and vipu-server members: the
// leader hands over to the member named (others ahead of it in etcd's
// queue stand aside) or to the next standby, without a stop, and serves on
// as a standby; a request it cannot carry out changes nothing.
#include <gmock/gmock.h>
#include <grpcpp/grpcpp.h>
#include <gtest/gtest.h>

#include <memory>
#include <string>
#include <vector>

#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_split.h"
#include "absl/strings/string_view.h"
#include "absl/time/clock.h"
#include "tests/etcd_harness.h"
#include "tests/integration/cannot_run.h"
#include "tests/integration/daemon_process.h"
#include "tests/integration/ha_members.h"
#include "tests/integration/harness.h"
#include "vipu_admin.grpc.pb.h"

namespace vipu::testing {
namespace {

using ::testing::HasSubstr;

size_t CountOf(const std::string& text, const std::string& part) {
  size_t n = 0;
  for (size_t at = text.find(part); at != std::string::npos; at = text.find(part, at + 1)) ++n;
  return n;
}

// Three members on one etcd member, without agents.
class HaMoveTest : public ::testing::Test {
 protected:
  void SetUp() override {
    if (!EtcdCluster::Available()) VIPU_CANNOT_RUN_HERE() << "no etcd binary";
    ha_ = std::make_unique<HaMembers>(3);
    absl::Status etcd = ha_->LaunchEtcd(1);
    ASSERT_TRUE(etcd.ok()) << etcd;
    for (int i = 0; i < ha_->size(); ++i) ha_->StartMember(i, {});
    leader_ = ha_->AwaitAgreedLeader(absl::Seconds(60));
    ASSERT_GE(leader_, 0);
    // Every member stands for election once it says it is a standby.
    for (int i = 0; i < ha_->size(); ++i) {
      ASSERT_TRUE(WaitFor([&] { return !ha_->RoleOf(i).empty(); }, absl::Seconds(30)));
    }
  }

  CommandResult Move(const std::string& to) {
    std::vector<std::string> args = {VIPU_ADMIN_BIN,  "--api-host", ha_->MemberList(),
                                     "--api-timeout", "20",         "move",
                                     "leadership"};
    if (!to.empty()) {
      args.push_back("--to");
      args.push_back(to);
    }
    return RunCommand(args);
  }

  // MoveLeadership sent to member i as is, past the CLI's checks.
  grpc::Status MoveRpc(int i, const std::string& to) {
    auto stub = vipuadmin::AdminService::NewStub(
        grpc::CreateChannel(ha_->address(i), grpc::InsecureChannelCredentials()));
    grpc::ClientContext ctx;
    ctx.set_deadline(std::chrono::system_clock::now() + std::chrono::seconds(30));
    vipuadmin::MoveLeadershipRequest req;
    req.set_to(to);
    vipuadmin::MoveLeadershipReply reply;
    return stub->MoveLeadership(&ctx, req, &reply);
  }

  // Whether member i serves again after its restart as a standby.
  bool ServesAsStandby(int i) {
    return WaitFor([&] { return ha_->RoleOf(i) == "standby"; }, absl::Seconds(30));
  }

  std::unique_ptr<HaMembers> ha_;
  int leader_ = -1;
};

// The members standing for election, in etcd's order (oldest campaign
// first), by index; empty when etcd does not answer.
std::vector<int> Queue(const HaMembers& ha) {
  CommandResult r = ha.Etcdctl({"get", "/vipu/leader/", "--prefix", "--sort-by=CREATE",
                                "--order=ASCEND", "--print-value-only"});
  std::vector<int> queue;
  if (r.exit_code != 0) return queue;
  for (absl::string_view line : absl::StrSplit(r.out, '\n', absl::SkipEmpty())) {
    for (int i = 0; i < ha.size(); ++i) {
      if (absl::StrContains(line, absl::StrCat("user=", ha.address(i), " "))) queue.push_back(i);
    }
  }
  return queue;
}

TEST_F(HaMoveTest, TheLeadershipGoesToTheMemberNamedAndTheOldLeaderServesOnAsAStandby) {
  int leader = leader_;
  const pid_t first_pid = ha_->Pid(leader);
  CommandResult moved = Move(ha_->address((leader + 1) % 3));
  ASSERT_EQ(moved.exit_code, 0) << moved.out << moved.err;
  EXPECT_EQ(moved.out, absl::StrCat("leadership moved from ", ha_->address(leader), " to ",
                                    ha_->address((leader + 1) % 3), "\n"));
  EXPECT_EQ(ha_->AwaitAgreedLeader(absl::Seconds(30)), (leader + 1) % 3);
  // The old leader handed over as on SIGTERM, and did not stop: the same
  // process serves on as a standby.
  EXPECT_THAT(ReadFile(ha_->Log(leader)), HasSubstr("handed the leadership over"));
  EXPECT_THAT(ReadFile(ha_->Log((leader + 1) % 3)), HasSubstr("took over 0 agents"));
  ASSERT_TRUE(ServesAsStandby(leader));
  EXPECT_TRUE(ha_->Running(leader));
  EXPECT_EQ(ha_->Pid(leader), first_pid);
  leader = (leader + 1) % 3;

  // To the member last in etcd's queue: the one ahead of it is elected
  // first and stands aside. Standbys campaign afresh every two seconds, so
  // the queue may change between its reading and the move (the one ahead
  // then needs no standing aside); a few moves make sure it was needed.
  int stood_aside = 0;
  for (int move = 0; move < 4; ++move) {
    std::vector<int> queue;
    ASSERT_TRUE(WaitFor(
        [&] {
          queue = Queue(*ha_);
          return queue.size() == 3u && queue.front() == leader;
        },
        absl::Seconds(30)));
    const int ahead = queue[1], last = queue[2];
    const std::string line =
        absl::StrCat("the leadership was moved to ", ha_->address(last), ": standing aside for it");
    const size_t said = CountOf(ReadFile(ha_->Log(ahead)), line);
    moved = Move(ha_->address(last));
    ASSERT_EQ(moved.exit_code, 0) << moved.out << moved.err;
    EXPECT_EQ(ha_->AwaitAgreedLeader(absl::Seconds(30)), last);
    if (CountOf(ReadFile(ha_->Log(ahead)), line) > said) ++stood_aside;
    ASSERT_TRUE(ServesAsStandby(leader));
    leader = last;
  }
  EXPECT_GE(stood_aside, 1);

  // Without --to: the standby next in line.
  ASSERT_TRUE(WaitFor([&] { return Queue(*ha_).size() == 3u; }, absl::Seconds(30)));
  moved = Move("");
  ASSERT_EQ(moved.exit_code, 0) << moved.out << moved.err;
  const int next = ha_->AwaitAgreedLeader(absl::Seconds(30));
  EXPECT_NE(next, leader);
  EXPECT_THAT(moved.out, HasSubstr(absl::StrCat(" to ", ha_->address(next))));
}

TEST_F(HaMoveTest, AMoveThatCannotBeMadeIsRefusedAndTheLeaderStays) {
  const pid_t pid = ha_->Pid(leader_);
  const int standby = (leader_ + 1) % 3;
  struct Case {
    std::string to;
    grpc::StatusCode code;
    std::string message;
  };
  for (const Case& c : std::vector<Case>{
           {"nohost", grpc::StatusCode::INVALID_ARGUMENT, "to: expected one member's address"},
           {"a b:1", grpc::StatusCode::INVALID_ARGUMENT, "to: expected one member's address"},
           {"h:70000", grpc::StatusCode::INVALID_ARGUMENT, "port must be an integer"},
           {"a:1,b:2", grpc::StatusCode::INVALID_ARGUMENT, "to: expected one member's address"},
           {ha_->address(leader_), grpc::StatusCode::INVALID_ARGUMENT, "already leads"},
           {"127.0.0.1:1", grpc::StatusCode::NOT_FOUND, "no member at 127.0.0.1:1"},
       }) {
    // Through a standby, which passes it on, and to the leader.
    for (int i : {standby, leader_}) {
      grpc::Status s = MoveRpc(i, c.to);
      EXPECT_EQ(s.error_code(), c.code) << c.to << ": " << s.error_message();
      EXPECT_THAT(s.error_message(), HasSubstr(c.message)) << c.to;
    }
  }
  // The CLI refuses a malformed --to itself.
  CommandResult bad = Move("nohost");
  EXPECT_NE(bad.exit_code, 0);
  EXPECT_THAT(bad.err, HasSubstr("--to:"));
  // The member not found is named among the standbys in the CLI's words.
  CommandResult unknown = Move("127.0.0.1:1");
  EXPECT_NE(unknown.exit_code, 0);
  EXPECT_THAT(unknown.err, HasSubstr(ha_->address(standby)));
  // Nothing moved.
  EXPECT_EQ(ha_->AwaitAgreedLeader(absl::Seconds(5)), leader_);
  EXPECT_EQ(ha_->Pid(leader_), pid);
  EXPECT_THAT(ReadFile(ha_->Log(leader_)), ::testing::Not(HasSubstr("handed the leadership")));
}

}  // namespace
}  // namespace vipu::testing
