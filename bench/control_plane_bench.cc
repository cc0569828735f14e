// Control-plane benchmark: C concurrent clients each repeatedly create a
// 1-IPU partition, wait for PS_ACTIVE, and remove it, against a running
// vipu-server. Reports cycles/s and latency percentiles per phase.
//
//   control_plane_bench --server 127.0.0.1:8090 --clients 1,8,32 --seconds 10
#include <grpcpp/grpcpp.h>

#include <CLI/CLI.hpp>
#include <algorithm>
#include <atomic>
#include <cstdio>
#include <thread>
#include <vector>

#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_split.h"
#include "absl/time/clock.h"
#include "vipuuser.grpc.pb.h"

namespace {

struct Samples {
  std::vector<double> create_ms, active_ms, remove_ms, cycle_ms;
  int errors = 0;
  void Merge(const Samples& o) {
    create_ms.insert(create_ms.end(), o.create_ms.begin(), o.create_ms.end());
    active_ms.insert(active_ms.end(), o.active_ms.begin(), o.active_ms.end());
    remove_ms.insert(remove_ms.end(), o.remove_ms.begin(), o.remove_ms.end());
    cycle_ms.insert(cycle_ms.end(), o.cycle_ms.begin(), o.cycle_ms.end());
    errors += o.errors;
  }
};

double Percentile(std::vector<double> v, double p) {
  if (v.empty()) return 0;
  std::sort(v.begin(), v.end());
  size_t i = std::min(v.size() - 1, static_cast<size_t>(p * static_cast<double>(v.size())));
  return v[i];
}

double Ms(absl::Duration d) { return absl::ToDoubleMilliseconds(d); }

void Client(const std::string& server, int index, absl::Time until, std::atomic<uint64_t>* seq,
            Samples* out) {
  auto stub = virmgrpc::UserService::NewStub(
      grpc::CreateCustomChannel(server, grpc::InsecureChannelCredentials(), [index] {
        grpc::ChannelArguments args;
        args.SetInt("bench.client", index);  // a connection per client
        return args;
      }()));
  while (absl::Now() < until) {
    const std::string id = absl::StrCat("bench-", index, "-", seq->fetch_add(1));
    const absl::Time t0 = absl::Now();
    {
      grpc::ClientContext ctx;
      ctx.set_deadline(absl::ToChronoTime(absl::Now() + absl::Seconds(30)));
      virmgrpc::CreatePartitionRequest req;
      req.mutable_requirements()->set_id(id);
      req.mutable_requirements()->set_size(1);
      virmgrpc::CreatePartitionReply reply;
      grpc::Status s = stub->CreatePartition(&ctx, req, &reply);
      if (!s.ok()) {
        // RESOURCE_EXHAUSTED when more clients than IPUs: count and go on.
        ++out->errors;
        continue;
      }
    }
    const absl::Time t1 = absl::Now();
    out->create_ms.push_back(Ms(t1 - t0));
    absl::Duration pause = absl::Microseconds(100);
    for (;;) {
      grpc::ClientContext ctx;
      virmgrpc::GetPartitionStatusRequest req;
      req.set_partition_id(id);
      virmgrpc::GetPartitionStatusReply reply;
      grpc::Status s = stub->GetPartitionStatus(&ctx, req, &reply);
      if (s.ok() && reply.status().ready_state() != virmgrpc::PS_PENDING) break;
      absl::SleepFor(pause);  // a client polling for state, as vipu and poprun do
      pause = std::min(pause * 2, absl::Milliseconds(5));
    }
    const absl::Time t2 = absl::Now();
    out->active_ms.push_back(Ms(t2 - t1));
    {
      grpc::ClientContext ctx;
      virmgrpc::RemovePartitionRequest req;
      req.set_partition_id(id);
      virmgrpc::RemovePartitionReply reply;
      if (!stub->RemovePartition(&ctx, req, &reply).ok()) ++out->errors;
    }
    const absl::Time t3 = absl::Now();
    out->remove_ms.push_back(Ms(t3 - t2));
    out->cycle_ms.push_back(Ms(t3 - t0));
  }
}

}  // namespace

int main(int argc, char** argv) {
  std::string server = "127.0.0.1:8090";
  std::string clients_list = "1,8,32";
  double seconds = 10;
  CLI::App app{"vipu control-plane benchmark"};
  app.add_option("--server", server, "vipu-server address")->capture_default_str();
  app.add_option("--clients", clients_list, "comma list of client counts")->capture_default_str();
  app.add_option("--seconds", seconds, "duration per client count")
      ->check(CLI::Range(0.1, 3600.0))
      ->capture_default_str();
  CLI11_PARSE(app, argc, argv);

  std::printf(
      "| clients | cycles | cycles/s | create p50 ms | create p99 ms | active p50 ms | active p99 "
      "ms | remove p50 ms | remove p99 ms | cycle p99 ms | errors |\n");
  std::printf("|---|---|---|---|---|---|---|---|---|---|---|\n");
  std::atomic<uint64_t> seq{static_cast<uint64_t>(absl::ToUnixMicros(absl::Now()))};
  for (absl::string_view c : absl::StrSplit(clients_list, ',')) {
    int n = 0;
    if (!absl::SimpleAtoi(c, &n) || n <= 0) {
      std::fprintf(stderr, "--clients: not a positive number: %s\n", std::string(c).c_str());
      return 2;
    }
    std::vector<Samples> per(n);
    std::vector<std::thread> threads;
    const absl::Time start = absl::Now();
    const absl::Time until = start + absl::Seconds(seconds);
    for (int i = 0; i < n; ++i) threads.emplace_back(Client, server, i, until, &seq, &per[i]);
    for (auto& t : threads) t.join();
    const double elapsed = absl::ToDoubleSeconds(absl::Now() - start);
    Samples all;
    for (const Samples& s : per) all.Merge(s);
    std::printf("| %d | %zu | %.0f | %.2f | %.2f | %.2f | %.2f | %.2f | %.2f | %.2f | %d |\n", n,
                all.cycle_ms.size(), static_cast<double>(all.cycle_ms.size()) / elapsed,
                Percentile(all.create_ms, 0.5), Percentile(all.create_ms, 0.99),
                Percentile(all.active_ms, 0.5), Percentile(all.active_ms, 0.99),
                Percentile(all.remove_ms, 0.5), Percentile(all.remove_ms, 0.99),
                Percentile(all.cycle_ms, 0.99), all.errors);
    std::fflush(stdout);
  }
  return 0;
}
