// Races on one partition id through the user API: many clients released at
// the same moment, each on its own connection. The database decides; the
// replies must add up, and once quiet the agents agree with it.
#include <grpcpp/grpcpp.h>

#include <atomic>
#include <chrono>
#include <functional>
#include <future>
#include <thread>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "tests/integration/harness.h"
#include "tests/integration/shared_server_suite.h"
#include "tests/integration/state_snapshot.h"
#include "vipuuser.grpc.pb.h"

namespace vipu::testing {
namespace {

class ConcurrencyTest : public SharedServerSuite {
 protected:
  // A stub on its own TCP connection, so that the calls really overlap.
  static std::unique_ptr<virmgrpc::UserService::Stub> NewStub() {
    grpc::ChannelArguments args;
    args.SetInt(GRPC_ARG_USE_LOCAL_SUBCHANNEL_POOL, 1);
    return virmgrpc::UserService::NewStub(
        grpc::CreateCustomChannel(server_->address(), grpc::InsecureChannelCredentials(), args));
  }

  // Runs every call on its own thread, all released together once every
  // thread (and its connection) is ready; returns their statuses.
  static std::vector<grpc::Status> RaceCalls(
      const std::vector<std::function<grpc::Status(virmgrpc::UserService::Stub*)>>& calls) {
    std::promise<void> go;
    std::shared_future<void> start = go.get_future().share();
    std::atomic<int> ready{0};
    std::vector<grpc::Status> results(calls.size());
    std::vector<std::thread> threads;
    for (size_t i = 0; i < calls.size(); ++i) {
      threads.emplace_back([&, i] {
        auto stub = NewStub();
        // Connect first: the race is between the calls, not the handshakes.
        grpc::ClientContext warm;
        warm.set_deadline(std::chrono::system_clock::now() + std::chrono::seconds(10));
        virmgrpc::GetPartitionStatusRequest probe;
        probe.set_partition_id("warm-up");
        virmgrpc::GetPartitionStatusReply ignored;
        stub->GetPartitionStatus(&warm, probe, &ignored);
        ++ready;
        start.wait();
        results[i] = calls[i](stub.get());
      });
    }
    WaitFor([&] { return ready.load() == static_cast<int>(calls.size()); }, absl::Seconds(30));
    go.set_value();
    for (std::thread& t : threads) t.join();
    return results;
  }

  static grpc::Status Create(virmgrpc::UserService::Stub* stub, const std::string& id,
                             uint32_t size) {
    grpc::ClientContext ctx;
    ctx.set_deadline(std::chrono::system_clock::now() + std::chrono::seconds(30));
    virmgrpc::CreatePartitionRequest request;
    request.mutable_requirements()->set_id(id);
    request.mutable_requirements()->set_size(size);
    virmgrpc::CreatePartitionReply reply;
    return stub->CreatePartition(&ctx, request, &reply);
  }
  static grpc::Status Remove(virmgrpc::UserService::Stub* stub, const std::string& id) {
    grpc::ClientContext ctx;
    ctx.set_deadline(std::chrono::system_clock::now() + std::chrono::seconds(30));
    virmgrpc::RemovePartitionRequest request;
    request.set_partition_id(id);
    virmgrpc::RemovePartitionReply reply;
    return stub->RemovePartition(&ctx, request, &reply);
  }
  static grpc::Status Reset(virmgrpc::UserService::Stub* stub, const std::string& id) {
    grpc::ClientContext ctx;
    ctx.set_deadline(std::chrono::system_clock::now() + std::chrono::seconds(30));
    virmgrpc::ResetPartitionRequest request;
    request.set_partition_id(id);
    virmgrpc::ResetPartitionReply reply;
    return stub->ResetPartition(&ctx, request, &reply);
  }

  // Waits until nothing is in flight and the agents agree with the
  // database; returns the snapshot (fails the test on timeout).
  static StateSnapshot Settle() {
    StateSnapshot last;
    std::string why = "no snapshot";
    bool quiet = WaitFor(
        [&] {
          auto s = TakeSnapshot(*server_);
          if (!s.ok()) {
            why = s.status().ToString();
            return false;
          }
          last = *s;
          std::vector<std::string> problems = CheckAgentsAgree(last, /*no_orphans=*/true);
          for (const auto& [id, p] : last.stored) {
            if (p.ready_state == virmgrpc::PS_PENDING ||
                p.operation_state == virmgrpc::POS_REMOVING) {
              problems.push_back(absl::StrCat(id, " still in flight"));
            }
          }
          why = absl::StrJoin(problems, "\n");
          return problems.empty();
        },
        absl::Seconds(30));
    EXPECT_TRUE(quiet) << why;
    std::vector<std::string> placement = CheckPlacementInvariants(last, kPod16Ipus);
    EXPECT_TRUE(placement.empty()) << absl::StrJoin(placement, "\n");
    return last;
  }

  // The replies that are neither OK nor ALREADY_EXISTS, for a failure's message.
  static std::string Others(const std::vector<grpc::Status>& results) {
    std::string out;
    for (const grpc::Status& s : results) {
      if (s.ok() || s.error_code() == grpc::StatusCode::ALREADY_EXISTS) continue;
      absl::StrAppend(&out, "\n  code ", static_cast<int>(s.error_code()), ": ", s.error_message());
    }
    return out;
  }

  static int Count(const std::vector<grpc::Status>& results, grpc::StatusCode code) {
    int n = 0;
    for (const grpc::Status& s : results) n += s.error_code() == code;
    return n;
  }
};

TEST_F(ConcurrencyTest, SameIdFromSixteenClientsCreatesItOnce) {
  // Small, medium and the whole pod: the loser sees ALREADY_EXISTS whether
  // or not its request would also have fitted.
  for (uint32_t size : {1u, 4u, 16u}) {
    const std::string id = absl::StrCat("same-", size);
    std::vector<std::function<grpc::Status(virmgrpc::UserService::Stub*)>> calls(
        16, [&](virmgrpc::UserService::Stub* stub) { return Create(stub, id, size); });
    std::vector<grpc::Status> results = RaceCalls(calls);
    EXPECT_EQ(Count(results, grpc::StatusCode::OK), 1) << id << Others(results);
    EXPECT_EQ(Count(results, grpc::StatusCode::ALREADY_EXISTS), 15) << id << Others(results);
    for (const grpc::Status& s : results) {
      if (s.error_code() == grpc::StatusCode::ALREADY_EXISTS) {
        EXPECT_THAT(s.error_message(), ::testing::HasSubstr(id));
      }
    }
    StateSnapshot state = Settle();
    ASSERT_EQ(state.stored.count(id), 1u) << id;
    EXPECT_EQ(state.stored.at(id).ready_state, virmgrpc::PS_ACTIVE);
    EXPECT_EQ(state.stored.at(id).ipus.size(), size);
    EXPECT_EQ(state.listed.size(), 1u);
    ASSERT_TRUE(Remove(NewStub().get(), id).ok());
  }
}

TEST_F(ConcurrencyTest, CreateRemoveAndResetRacingOnOneIdLeaveItWholeOrGone) {
  for (int round = 0; round < 15; ++round) {
    SCOPED_TRACE(absl::StrCat("round ", round));
    const std::string id = absl::StrCat("race-", round);
    std::vector<std::function<grpc::Status(virmgrpc::UserService::Stub*)>> calls;
    // Interleaved so that every kind starts early and late in the fan-out.
    for (int i = 0; i < 6; ++i) {
      calls.push_back([&](virmgrpc::UserService::Stub* s) { return Create(s, id, 4); });
      calls.push_back([&](virmgrpc::UserService::Stub* s) { return Remove(s, id); });
      if (i % 2 == 0) calls.push_back([&](virmgrpc::UserService::Stub* s) { return Reset(s, id); });
    }
    std::vector<grpc::Status> results = RaceCalls(calls);
    int creates_ok = 0, removes_ok = 0;
    for (const grpc::Status& s : results) {
      EXPECT_NE(s.error_code(), grpc::StatusCode::INTERNAL) << s.error_message();
      EXPECT_NE(s.error_code(), grpc::StatusCode::UNKNOWN) << s.error_message();
      EXPECT_NE(s.error_code(), grpc::StatusCode::DEADLINE_EXCEEDED) << s.error_message();
    }
    // Calls were pushed in the order create, remove[, reset] per i.
    size_t k = 0;
    for (int i = 0; i < 6; ++i) {
      const grpc::Status& c = results[k++];
      const grpc::Status& r = results[k++];
      creates_ok += c.ok();
      removes_ok += r.ok();
      EXPECT_TRUE(c.ok() || c.error_code() == grpc::StatusCode::ALREADY_EXISTS)
          << "create: " << c.error_code() << " " << c.error_message();
      EXPECT_TRUE(r.ok() || r.error_code() == grpc::StatusCode::NOT_FOUND ||
                  r.error_code() == grpc::StatusCode::FAILED_PRECONDITION)
          << "remove: " << r.error_code() << " " << r.error_message();
      if (i % 2 == 0) {
        const grpc::Status& t = results[k++];
        EXPECT_TRUE(t.ok() || t.error_code() == grpc::StatusCode::NOT_FOUND ||
                    t.error_code() == grpc::StatusCode::FAILED_PRECONDITION)
            << "reset: " << t.error_code() << " " << t.error_message();
      }
    }
    // Each acknowledged remove ended one acknowledged create (removes
    // without force cannot both succeed on one incarnation).
    StateSnapshot state = Settle();
    const bool present = state.stored.count(id) > 0;
    EXPECT_EQ(creates_ok - removes_ok, present ? 1 : 0)
        << creates_ok << " creates and " << removes_ok << " removes acknowledged";
    EXPECT_GE(creates_ok, 1);
    if (present) {
      EXPECT_EQ(state.stored.at(id).ready_state, virmgrpc::PS_ACTIVE);
      EXPECT_EQ(state.stored.at(id).operation_state, virmgrpc::POS_IDLE);
      EXPECT_EQ(state.listed.count(id), 1u);
      ASSERT_TRUE(Remove(NewStub().get(), id).ok());
    }
  }
  // Nothing leaked: the whole pod still fits.
  auto stub = NewStub();
  ASSERT_TRUE(Create(stub.get(), "all", kPod16Ipus).ok());
  StateSnapshot state = Settle();
  EXPECT_EQ(state.stored.at("all").ready_state, virmgrpc::PS_ACTIVE);
  ASSERT_TRUE(Remove(stub.get(), "all").ok());
}

}  // namespace
}  // namespace vipu::testing
