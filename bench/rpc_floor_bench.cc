// The floor under the control-plane benchmark: C clients, one channel each,
// calling the cheapest RPC of vipu-server (VersionService.GetVersion, no
// state, no storage) as fast as they can. What gRPC alone costs on this
// machine bounds the cycles/s of any cycle made of several RPCs.
//
//   rpc_floor_bench --server 127.0.0.1:8090 --clients 32 --seconds 5
#include <grpcpp/grpcpp.h>

#include <CLI/CLI.hpp>
#include <atomic>
#include <cstdio>
#include <thread>
#include <vector>

#include "absl/time/clock.h"
#include "version.grpc.pb.h"

int main(int argc, char** argv) {
  std::string server = "127.0.0.1:8090";
  int clients = 32;
  double seconds = 5;
  CLI::App app{"vipu RPC floor benchmark"};
  app.add_option("--server", server, "vipu-server address")->capture_default_str();
  app.add_option("--clients", clients, "concurrent clients")
      ->check(CLI::Range(1, 4096))
      ->capture_default_str();
  app.add_option("--seconds", seconds, "duration")->check(CLI::Range(0.1, 3600.0));
  CLI11_PARSE(app, argc, argv);

  std::atomic<bool> stop{false};
  std::atomic<uint64_t> calls{0}, errors{0};
  std::vector<std::thread> threads;
  for (int i = 0; i < clients; ++i) {
    threads.emplace_back([&, i] {
      grpc::ChannelArguments args;
      args.SetInt("bench.client", i);  // a connection per client
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
  absl::SleepFor(absl::Seconds(seconds));
  stop = true;
  for (auto& t : threads) t.join();
  const double elapsed = absl::ToDoubleSeconds(absl::Now() - start);
  std::printf("| clients | calls | calls/s | errors |\n|---|---|---|---|\n");
  std::printf(
      "| %d | %llu | %.0f | %llu |\n", clients, static_cast<unsigned long long>(calls.load()),
      static_cast<double>(calls.load()) / elapsed, static_cast<unsigned long long>(errors.load()));
  return errors.load() == 0 ? 0 : 1;
}
