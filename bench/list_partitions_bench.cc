// Listing N partitions through a real vipu-server.
//
// No test machine runs the 2,500+ simulated IPU-Machines that 10,000 real
// partitions need, so `populate` writes the partitions with the storage
// library (the same rows PartitionController commits: ACTIVE, idle, one
// generation each) into a fresh database; a vipu-server started on that file
// then serves ListPartitions from it exactly as in production (the list path
// reads the store and never calls an agent). `measure` times ListPartitions
// over gRPC and, with --vipu, the whole `vipu list partitions` command.
//
//   list_partitions_bench populate --db DIR/vipu.db --partitions 10000
//   vipu-server --db DIR/vipu.db --listen 127.0.0.1:0 --ready-file DIR/ready &
//   list_partitions_bench measure --server HOST:PORT --partitions 10000 [--vipu build/bin/vipu]
#include <fcntl.h>
#include <grpcpp/grpcpp.h>
#include <spawn.h>
#include <sys/wait.h>
#include <unistd.h>

#include <CLI/CLI.hpp>
#include <algorithm>
#include <chrono>
#include <cstdio>
#include <filesystem>
#include <string>
#include <vector>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "absl/time/clock.h"
#include "bench/latency_summary.h"
#include "fabric/types.h"
#include "storage/sqlite_store.h"
#include "storage/store.h"
#include "vipuuser.grpc.pb.h"

extern char** environ;

namespace {

using Clock = std::chrono::steady_clock;
namespace fabric = vipu::fabric;

constexpr uint32_t kMachinesPerCluster = 64;  // pod256: 4 ILDs of 16 machines
constexpr uint32_t kMachinesPerIld = 16;

using ::vipu::bench::Summarize;
using ::vipu::bench::Summary;

std::string AgentId(uint32_t machine) { return absl::StrFormat("m%05u", machine); }

// Machines cycle through three shapes of use: one 4-IPU partition, two 2-IPU
// partitions, four 1-IPU partitions (7 partitions per 12 IPUs).
absl::Status Populate(const std::string& path, int partitions) {
  std::filesystem::remove(path);
  std::filesystem::remove(path + "-wal");
  std::filesystem::remove(path + "-shm");
  auto store = vipu::storage::SqliteStore::Open(path);
  if (!store.ok()) return store.status();
  uint32_t machines = 0;
  for (int placed = 0; placed < partitions; ++machines) placed += (1 << (machines % 3));
  const uint32_t clusters = (machines + kMachinesPerCluster - 1) / kMachinesPerCluster;
  const int64_t now_ms = absl::ToUnixMillis(absl::Now());
  return (*store)->Write([&](vipu::storage::WriteTxn& txn) -> absl::Status {
    for (uint32_t c = 0; c < clusters; ++c) {
      fabric::Cluster cluster;
      cluster.id = absl::StrCat("cluster", c);
      cluster.num_ilds = 4;
      for (uint32_t m = 0; m < kMachinesPerCluster; ++m) {
        fabric::Agent agent{AgentId(c * kMachinesPerCluster + m), "127.0.0.1", 1,
                            fabric::MachineType::kM2000};
        if (absl::Status s = txn.InsertAgent(agent); !s.ok()) return s;
        cluster.agent_ids.push_back(agent.id);
      }
      if (absl::Status s = txn.InsertCluster(cluster); !s.ok()) return s;
      fabric::Allocation allocation{absl::StrCat("alloc", c), cluster.id, cluster.agent_ids};
      if (absl::Status s = txn.InsertAllocation(allocation); !s.ok()) return s;
    }
    int made = 0;
    for (uint32_t m = 0; m < machines && made < partitions; ++m) {
      const uint32_t per_machine = 1u << (m % 3);
      const uint32_t size = 4 / per_machine;
      const uint32_t in_cluster = m % kMachinesPerCluster;
      for (uint32_t k = 0; k < per_machine && made < partitions; ++k, ++made) {
        fabric::Partition p;
        p.id = absl::StrFormat("p%05d", made);
        p.cluster_id = absl::StrCat("cluster", m / kMachinesPerCluster);
        p.allocation_id = absl::StrCat("alloc", m / kMachinesPerCluster);
        p.routing = fabric::RoutingType::kRingSwnc;
        p.sync_type = fabric::SyncType::kPodNativeDefault;
        p.ready_state = fabric::ReadyState::kActive;
        p.operation_state = fabric::OperationState::kIdle;
        auto generation = txn.NextGeneration();
        if (!generation.ok()) return generation.status();
        p.generation = *generation;
        p.created_unix_ms = p.updated_unix_ms = now_ms;
        for (uint32_t i = 0; i < size; ++i) {
          fabric::PartitionIpu ipu;
          const uint32_t slot = k * size + i;
          ipu.ild = in_cluster / kMachinesPerIld;
          ipu.topology_id = 4 * (in_cluster % kMachinesPerIld) + slot;
          ipu.routing_id = i;
          ipu.ipu = {AgentId(m), slot};
          p.ipus.push_back(ipu);
        }
        if (absl::Status s = txn.InsertPartition(p); !s.ok()) return s;
      }
    }
    return absl::OkStatus();
  });
}

// Runs `argv` with stdout and stderr on /dev/null; returns its exit code.
int RunQuiet(const std::vector<std::string>& args) {
  std::vector<char*> argv;
  for (const std::string& a : args) argv.push_back(const_cast<char*>(a.c_str()));
  argv.push_back(nullptr);
  posix_spawn_file_actions_t actions;
  posix_spawn_file_actions_init(&actions);
  posix_spawn_file_actions_addopen(&actions, 1, "/dev/null", O_WRONLY, 0);
  posix_spawn_file_actions_addopen(&actions, 2, "/dev/null", O_WRONLY, 0);
  pid_t pid = 0;
  const int rc = posix_spawn(&pid, argv[0], &actions, nullptr, argv.data(), environ);
  posix_spawn_file_actions_destroy(&actions);
  if (rc != 0) return 127;
  int status = 0;
  if (waitpid(pid, &status, 0) != pid) return 127;
  return WIFEXITED(status) ? WEXITSTATUS(status) : 128;
}

void Print(bool json, const std::string& how, int partitions, int calls, const Summary& s,
           size_t reply_bytes) {
  if (json) {
    std::printf(
        "{\"mode\":\"list\",\"via\":\"%s\",\"partitions\":%d,\"calls\":%d,\"p50_ms\":%.3f,"
        "\"p99_ms\":%.3f,\"p999_ms\":%.3f,\"max_ms\":%.3f,\"reply_bytes\":%zu}\n",
        how.c_str(), partitions, calls, s.p50, s.p99, s.p999, s.max, reply_bytes);
  } else {
    std::printf("| %s | %d | %d | %.1f | %.1f | %.1f | %.1f | %.2f |\n", how.c_str(), partitions,
                calls, s.p50, s.p99, s.p999, s.max, static_cast<double>(reply_bytes) / (1 << 20));
  }
  std::fflush(stdout);
}

int Measure(const std::string& server, int partitions, int calls, const std::string& vipu,
            int cli_calls, bool json) {
  grpc::ChannelArguments args;
  args.SetMaxReceiveMessageSize(-1);  // the bench measures time, not the client's size limit
  auto stub = virmgrpc::UserService::NewStub(
      grpc::CreateCustomChannel(server, grpc::InsecureChannelCredentials(), args));
  if (!json) {
    std::printf(
        "| list via | partitions | calls | p50 ms | p99 ms | p999 ms | max ms | reply MiB |\n"
        "|---|---|---|---|---|---|---|---|\n");
  }
  std::vector<double> ms;
  size_t bytes = 0;
  for (int i = 0; i < calls + 3; ++i) {  // three warm-up calls: connection, page cache
    grpc::ClientContext ctx;
    ctx.set_deadline(std::chrono::system_clock::now() + std::chrono::seconds(60));
    virmgrpc::ListPartitionsRequest req;
    virmgrpc::ListPartitionsReply reply;
    const auto t0 = Clock::now();
    grpc::Status s = stub->ListPartitions(&ctx, req, &reply);
    const auto t1 = Clock::now();
    if (!s.ok() || reply.partitions_size() != partitions) {
      std::fprintf(stderr, "ListPartitions: %s, %d partitions (expected %d)\n",
                   s.error_message().c_str(), reply.partitions_size(), partitions);
      return 1;
    }
    bytes = reply.ByteSizeLong();
    if (i >= 3) ms.push_back(std::chrono::duration<double, std::milli>(t1 - t0).count());
  }
  Print(json, "gRPC ListPartitions", partitions, calls, Summarize(ms), bytes);
  if (vipu.empty()) return 0;
  const size_t colon = server.rfind(':');
  const std::vector<std::string> command = {
      vipu,   "--api-host", server.substr(0, colon), "--api-port", server.substr(colon + 1),
      "list", "partitions"};
  ms.clear();
  for (int i = 0; i < cli_calls; ++i) {
    const auto t0 = Clock::now();
    const int rc = RunQuiet(command);
    const auto t1 = Clock::now();
    if (rc != 0) {
      std::fprintf(stderr, "`%s ... list partitions` exited with %d\n", vipu.c_str(), rc);
      return 1;
    }
    ms.push_back(std::chrono::duration<double, std::milli>(t1 - t0).count());
  }
  Print(json, "vipu list partitions (process)", partitions, cli_calls, Summarize(ms), bytes);
  return 0;
}

}  // namespace

int main(int argc, char** argv) {
  CLI::App app{"list N partitions through a real vipu-server"};
  app.require_subcommand(1);
  int partitions = 10000;
  std::string db, server, vipu;
  int calls = 50, cli_calls = 20;
  bool json = false;
  auto* populate = app.add_subcommand("populate", "write a database holding N partitions");
  populate->add_option("--db", db, "database file to (re)create")->required();
  populate->add_option("--partitions", partitions, "number of partitions")
      ->check(CLI::Range(1, 1000000))
      ->capture_default_str();
  auto* measure = app.add_subcommand("measure", "time ListPartitions against a server");
  measure->add_option("--server", server, "vipu-server host:port")->required();
  measure->add_option("--partitions", partitions, "partitions the server must return")
      ->check(CLI::Range(1, 1000000))
      ->capture_default_str();
  measure->add_option("--calls", calls, "timed gRPC calls")
      ->check(CLI::Range(1, 100000))
      ->capture_default_str();
  measure->add_option("--vipu", vipu, "also time this `vipu list partitions`");
  measure->add_option("--cli-calls", cli_calls, "timed CLI runs")
      ->check(CLI::Range(1, 10000))
      ->capture_default_str();
  measure->add_flag("--json", json, "one JSON object per line instead of the table");
  CLI11_PARSE(app, argc, argv);

  if (populate->parsed()) {
    const auto t0 = Clock::now();
    if (absl::Status s = Populate(db, partitions); !s.ok()) {
      std::fprintf(stderr, "populate: %s\n", s.ToString().c_str());
      return 1;
    }
    std::fprintf(stderr, "populate: %d partitions in %s (%.1f s)\n", partitions, db.c_str(),
                 std::chrono::duration<double>(Clock::now() - t0).count());
    return 0;
  }
  if (server.rfind(':') == std::string::npos) {
    std::fprintf(stderr, "--server: must be host:port, got \"%s\"\n", server.c_str());
    return 2;
  }
  return Measure(server, partitions, calls, vipu, cli_calls, json);
}
