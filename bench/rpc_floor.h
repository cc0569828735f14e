// The floor under the control-plane benchmark: C clients, one channel each,
// calling the cheapest RPC of vipu-server (VersionService.GetVersion, no
// state, no storage) as fast as they can. What gRPC alone costs on this
// machine bounds the cycles/s of any cycle made of several RPCs.
#ifndef VIPU_BENCH_RPC_FLOOR_H_
#define VIPU_BENCH_RPC_FLOOR_H_

#include <grpcpp/grpcpp.h>

#include <atomic>
#include <cstdint>
#include <string>
#include <thread>
#include <vector>

#include "absl/time/clock.h"
#include "absl/time/time.h"
#include "version.grpc.pb.h"

namespace vipu::bench {

struct RpcFloor {
  uint64_t calls = 0, errors = 0;
  double seconds = 0;
  double PerSecond() const { return seconds > 0 ? static_cast<double>(calls) / seconds : 0; }
};

// Runs `clients` callers against `server` for `seconds` and counts the calls.
inline RpcFloor MeasureRpcFloor(const std::string& server, int clients, double seconds) {
  std::atomic<bool> stop{false};
  std::atomic<uint64_t> calls{0}, errors{0};
  std::vector<std::thread> threads;
  for (int i = 0; i < clients; ++i) {
    threads.emplace_back([&, i] {
      grpc::ChannelArguments args;
      args.SetInt(GRPC_ARG_USE_LOCAL_SUBCHANNEL_POOL, 1);  // a connection per client
      args.SetInt("bench.client", i);
      auto stub = virmgrpc::VersionService::NewStub(
          grpc::CreateCustomChannel(server, grpc::InsecureChannelCredentials(), args));
      while (!stop.load(std::memory_order_relaxed)) {
        grpc::ClientContext ctx;
        ctx.set_deadline(absl::ToChronoTime(absl::Now() + absl::Seconds(10)));
        virmgrpc::VersionRequest req;
        virmgrpc::VersionReply reply;
        if (stub->GetVersion(&ctx, req, &reply).ok()) {
          calls.fetch_add(1, std::memory_order_relaxed);
        } else {
          errors.fetch_add(1, std::memory_order_relaxed);
        }
      }
    });
  }
  const absl::Time start = absl::Now();
  absl::SleepFor(absl::Seconds(seconds));  // the measured interval
  stop = true;
  for (auto& t : threads) t.join();
  RpcFloor out;
  out.seconds = absl::ToDoubleSeconds(absl::Now() - start);
  out.calls = calls.load();
  out.errors = errors.load();
  return out;
}

}  // namespace vipu::bench

#endif  // VIPU_BENCH_RPC_FLOOR_H_
