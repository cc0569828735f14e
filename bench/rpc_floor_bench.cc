// Measures the RPC floor (bench/rpc_floor.h) by itself:
//   rpc_floor_bench --server 127.0.0.1:8090 --clients 32 --seconds 5
#include <grpcpp/grpcpp.h>

#include <CLI/CLI.hpp>
#include <cstdio>

#include "bench/rpc_floor.h"

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

  const vipu::bench::RpcFloor floor = vipu::bench::MeasureRpcFloor(server, clients, seconds);
  std::printf("| clients | calls | calls/s | errors |\n|---|---|---|---|\n");
  std::printf("| %d | %llu | %.0f | %llu |\n", clients,
              static_cast<unsigned long long>(floor.calls), floor.PerSecond(),
              static_cast<unsigned long long>(floor.errors));
  return floor.errors == 0 ? 0 : 1;
}
