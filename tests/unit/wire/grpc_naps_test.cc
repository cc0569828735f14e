// gpr_sleep_until as the executables link it: gRPC's sleeps cut short, in
// isolation and on the callback threads of a live server.
#include "wire/grpc_naps.h"

#include <grpc/support/time.h>
#include <grpcpp/grpcpp.h>

#include <chrono>
#include <future>
#include <memory>
#include <thread>

#include "gtest/gtest.h"
#include "version.grpc.pb.h"

namespace vipu::wire {
namespace {

// Waits until `pred` holds or `deadline` passes; returns whether it held.
template <typename Pred>
bool WaitUntil(Pred pred, std::chrono::seconds deadline) {
  const auto until = std::chrono::steady_clock::now() + deadline;
  while (!pred()) {
    if (std::chrono::steady_clock::now() >= until) return false;
    std::this_thread::sleep_for(std::chrono::milliseconds(5));
  }
  return true;
}

gpr_timespec FromNow(std::chrono::milliseconds ms) {
  return gpr_time_add(gpr_now(GPR_CLOCK_MONOTONIC),
                      gpr_time_from_millis(static_cast<int64_t>(ms.count()), GPR_TIMESPAN));
}

TEST(GrpcNapsTest, ANapIsTheTimeLeftAtMostTheLimit) {
  using std::chrono::milliseconds;
  EXPECT_EQ(GrpcNapUntil(FromNow(milliseconds(100))), kLongestGrpcNap);
  EXPECT_EQ(GrpcNapUntil(gpr_inf_future(GPR_CLOCK_REALTIME)), kLongestGrpcNap);
  const std::chrono::nanoseconds short_nap = GrpcNapUntil(gpr_time_from_micros(200, GPR_TIMESPAN));
  EXPECT_GT(short_nap.count(), 0);
  EXPECT_LE(short_nap, std::chrono::microseconds(200));
  EXPECT_EQ(GrpcNapUntil(gpr_inf_past(GPR_CLOCK_REALTIME)).count(), 0);
  EXPECT_EQ(
      GrpcNapUntil(gpr_time_sub(gpr_now(GPR_CLOCK_REALTIME), gpr_time_from_millis(5, GPR_TIMESPAN)))
          .count(),
      0);
}

TEST(GrpcNapsTest, GrpcsOwnSleepIsThisOneAndCountsTheCut) {
  const uint64_t before = GrpcNapsShortened();
  gpr_sleep_until(FromNow(std::chrono::milliseconds(100)));
  // libgpr's own definition counts nothing: this is the one linked here.
  // (gRPC's callback threads, if any are alive, may count naps as well.)
  EXPECT_GE(GrpcNapsShortened(), before + 1);
}

class Version final : public virmgrpc::VersionService::CallbackService {
  grpc::ServerUnaryReactor* GetVersion(grpc::CallbackServerContext* context,
                                       const virmgrpc::VersionRequest*,
                                       virmgrpc::VersionReply* reply) override {
    reply->set_version("naps");
    grpc::ServerUnaryReactor* reactor = context->DefaultReactor();
    reactor->Finish(grpc::Status::OK);
    return reactor;
  }
};

// One callback call; its status.
grpc::Status Call(virmgrpc::VersionService::Stub& stub) {
  grpc::ClientContext context;
  context.set_deadline(std::chrono::system_clock::now() + std::chrono::seconds(30));
  virmgrpc::VersionRequest request;
  virmgrpc::VersionReply reply;
  std::promise<grpc::Status> done;
  stub.async()->GetVersion(&context, &request, &reply,
                           [&done](grpc::Status s) { done.set_value(std::move(s)); });
  return done.get_future().get();
}

TEST(GrpcNapsTest, CallbackThreadsOfALiveServerAreNotLeftAsleep) {
  Version service;
  grpc::ServerBuilder builder;
  int port = 0;
  builder.AddListeningPort("127.0.0.1:0", grpc::InsecureServerCredentials(), &port);
  builder.RegisterService(&service);
  std::unique_ptr<grpc::Server> server = builder.BuildAndStart();
  ASSERT_NE(server, nullptr);
  auto stub = virmgrpc::VersionService::NewStub(
      grpc::CreateChannel("127.0.0.1:" + std::to_string(port), grpc::InsecureChannelCredentials()));
  ASSERT_TRUE(Call(*stub).ok());
  // A second without callback work: gRPC's callback threads ask for their
  // nap, and get the short one.
  const uint64_t before = GrpcNapsShortened();
  EXPECT_TRUE(WaitUntil([&] { return GrpcNapsShortened() > before; }, std::chrono::seconds(20)))
      << "gRPC's callback threads never asked for a nap within 20 s";
  EXPECT_TRUE(Call(*stub).ok());
  server->Shutdown();
}

}  // namespace
}  // namespace vipu::wire
