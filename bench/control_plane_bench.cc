// Control-plane benchmark: C concurrent clients, each on its own channel (own
// TCP connection), repeatedly create a partition, poll until it leaves
// PS_PENDING, and remove it, against a running vipu-server. Reports cycles/s
// and p50/p99/p999 latency of every phase and of the whole cycle.
//
//   control_plane_bench --server 127.0.0.1:8090 --clients 1,8,32,128 --seconds 10 [--json]
//       [--server-pid PID]   # also the server's and its agents' CPU per cycle
//       [--floor]            # also the RPC floor with as many clients, and the ratio
//
// With both --server-pid and --floor, a second table says where a cycle's CPU
// goes, counted in floor calls: the clients' (this process's), the server's and
// the agents', each divided by the CPU one floor call costs client and server
// together. On a machine the bench keeps busy, cycles/s ÷ floor is close to one
// over that sum, so a cycle at 0.2 of the floor may cost 5 floor calls in all.
//
// History mode measures whether throughput decays as the server records more
// operations (an operation = a partition created or removed): the clients
// cycle without pause, and a window of --window-seconds is measured once the
// count of operations reaches each checkpoint.
//
//   control_plane_bench --server ... --clients 32 --history 1000,100000 --window-seconds 5
//       [--server-pid PID --db PATH]   # also report the server's RSS and file sizes
#include <grpc/grpc.h>
#include <grpcpp/grpcpp.h>
#include <sys/resource.h>
#include <sys/stat.h>
#include <unistd.h>

#include <CLI/CLI.hpp>
#include <algorithm>
#include <atomic>
#include <cstdio>
#include <cstdlib>
#include <fstream>
#include <iterator>
#include <memory>
#include <string>
#include <thread>
#include <utility>
#include <vector>

#include "absl/status/statusor.h"
#include "absl/strings/ascii.h"
#include "absl/strings/match.h"
#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_split.h"
#include "absl/strings/strip.h"
#include "absl/time/clock.h"
#include "bench/latency_summary.h"
#include "bench/rpc_floor.h"
#include "vipuuser.grpc.pb.h"

namespace {

// One completed create -> ACTIVE -> remove cycle.
struct Cycle {
  double create_ms = 0, active_ms = 0, remove_ms = 0, cycle_ms = 0;
  int status_calls = 0;  // GetPartitionStatus calls until the partition left PS_PENDING
  absl::Time end;
};

struct ClientResult {
  std::vector<Cycle> cycles;
  int refused = 0;  // RESOURCE_EXHAUSTED on create: more clients than free IPUs
  int errors = 0;   // any other failed call, or a partition that ended in PS_ERROR
};

struct Shared {
  std::string server;
  uint32_t size = 1;
  std::atomic<bool> stop{false};
  std::atomic<uint64_t> ops{0};  // successful creates + removes
  std::atomic<uint64_t> seq{0};
};

double Ms(absl::Duration d) { return absl::ToDoubleMilliseconds(d); }

std::chrono::system_clock::time_point Deadline() {
  return absl::ToChronoTime(absl::Now() + absl::Seconds(30));
}

void RunClient(Shared* shared, int index, ClientResult* out) {
  grpc::ChannelArguments args;
  args.SetInt(GRPC_ARG_USE_LOCAL_SUBCHANNEL_POOL, 1);  // a connection per client
  args.SetInt("bench.client", index);
  auto stub = virmgrpc::UserService::NewStub(
      grpc::CreateCustomChannel(shared->server, grpc::InsecureChannelCredentials(), args));
  while (!shared->stop.load(std::memory_order_relaxed)) {
    const std::string id = absl::StrCat("bench-", index, "-", shared->seq.fetch_add(1));
    const absl::Time t0 = absl::Now();
    {
      grpc::ClientContext ctx;
      ctx.set_deadline(Deadline());
      virmgrpc::CreatePartitionRequest req;
      req.mutable_requirements()->set_id(id);
      req.mutable_requirements()->set_size(shared->size);
      virmgrpc::CreatePartitionReply reply;
      grpc::Status s = stub->CreatePartition(&ctx, req, &reply);
      if (!s.ok()) {
        if (s.error_code() == grpc::StatusCode::RESOURCE_EXHAUSTED) {
          ++out->refused;
        } else {
          ++out->errors;
        }
        absl::SleepFor(absl::Milliseconds(1));  // a client backing off before retrying
        continue;
      }
    }
    shared->ops.fetch_add(1, std::memory_order_relaxed);
    const absl::Time t1 = absl::Now();
    absl::Duration pause = absl::Microseconds(100);
    int status_calls = 0;
    for (;;) {
      ++status_calls;
      grpc::ClientContext ctx;
      ctx.set_deadline(Deadline());
      virmgrpc::GetPartitionStatusRequest req;
      req.set_partition_id(id);
      virmgrpc::GetPartitionStatusReply reply;
      grpc::Status s = stub->GetPartitionStatus(&ctx, req, &reply);
      if (s.ok() && reply.status().ready_state() != virmgrpc::PS_PENDING) {
        if (reply.status().ready_state() != virmgrpc::PS_ACTIVE) ++out->errors;
        break;
      }
      if (!s.ok() && s.error_code() != grpc::StatusCode::UNAVAILABLE) {
        ++out->errors;
        break;
      }
      absl::SleepFor(pause);  // a client polling for state, as vipu and poprun do
      pause = std::min(pause * 2, absl::Milliseconds(5));
    }
    const absl::Time t2 = absl::Now();
    {
      grpc::ClientContext ctx;
      ctx.set_deadline(Deadline());
      virmgrpc::RemovePartitionRequest req;
      req.set_partition_id(id);
      virmgrpc::RemovePartitionReply reply;
      if (!stub->RemovePartition(&ctx, req, &reply).ok()) {
        ++out->errors;
        continue;
      }
    }
    shared->ops.fetch_add(1, std::memory_order_relaxed);
    const absl::Time t3 = absl::Now();
    out->cycles.push_back({Ms(t1 - t0), Ms(t2 - t1), Ms(t3 - t2), Ms(t3 - t0), status_calls, t3});
  }
}

using ::vipu::bench::Summarize;
using ::vipu::bench::Summary;

// Statistics of the cycles that ended inside [from, to].
struct WindowStats {
  size_t cycles = 0;
  double seconds = 0;
  Summary create, active, remove, cycle;
  double status_calls = 0;  // per cycle, mean
  int refused = 0, errors = 0;
  double PerSecond() const { return seconds > 0 ? static_cast<double>(cycles) / seconds : 0; }
};

WindowStats Window(const std::vector<ClientResult>& results, absl::Time from, absl::Time to) {
  std::vector<double> create, active, remove, cycle;
  WindowStats w;
  double status_calls = 0;
  for (const ClientResult& r : results) {
    for (const Cycle& c : r.cycles) {
      if (c.end < from || c.end > to) continue;
      create.push_back(c.create_ms);
      active.push_back(c.active_ms);
      remove.push_back(c.remove_ms);
      cycle.push_back(c.cycle_ms);
      status_calls += c.status_calls;
    }
    w.refused += r.refused;
    w.errors += r.errors;
  }
  w.cycles = cycle.size();
  w.status_calls = w.cycles > 0 ? status_calls / static_cast<double>(w.cycles) : 0;
  w.seconds = absl::ToDoubleSeconds(to - from);
  w.create = Summarize(std::move(create));
  w.active = Summarize(std::move(active));
  w.remove = Summarize(std::move(remove));
  w.cycle = Summarize(std::move(cycle));
  return w;
}

std::string Fixed(double v, int digits) {
  char buf[32];
  std::snprintf(buf, sizeof(buf), "%.*f", digits, v);
  return buf;
}

std::string CellMs(const Summary& s) {
  return absl::StrCat(Fixed(s.p50, 2), " / ", Fixed(s.p99, 2), " / ", Fixed(s.p999, 2));
}

std::string JsonSummary(const Summary& s) {
  return absl::StrCat("{\"p50_ms\":", Fixed(s.p50, 3), ",\"p99_ms\":", Fixed(s.p99, 3),
                      ",\"p999_ms\":", Fixed(s.p999, 3), ",\"max_ms\":", Fixed(s.max, 3), "}");
}

std::string JsonStats(const WindowStats& w) {
  return absl::StrCat("\"cycles\":", w.cycles, ",\"seconds\":", Fixed(w.seconds, 3),
                      ",\"cycles_per_s\":", Fixed(w.PerSecond(), 1),
                      ",\"create\":", JsonSummary(w.create), ",\"active\":", JsonSummary(w.active),
                      ",\"remove\":", JsonSummary(w.remove), ",\"cycle\":", JsonSummary(w.cycle),
                      ",\"status_calls_per_cycle\":", Fixed(w.status_calls, 2),
                      ",\"refused\":", w.refused, ",\"errors\":", w.errors);
}

// What the server keeps that might grow with history: its resident memory,
// that of its children (the simulated agents) and the database files. Zero
// when not asked for or not readable.
struct ServerFootprint {
  int64_t rss_kb = 0, agents_rss_kb = 0, db_bytes = 0, wal_bytes = 0;
};

int64_t FileSize(const std::string& path) {
  struct stat st;
  return stat(path.c_str(), &st) == 0 ? static_cast<int64_t>(st.st_size) : 0;
}

int64_t RssKb(int pid) {
  std::ifstream status(absl::StrCat("/proc/", pid, "/status"));
  std::string line;
  int64_t kb = 0;
  while (std::getline(status, line)) {
    if (absl::StartsWith(line, "VmRSS:")) {
      (void)absl::SimpleAtoi(
          absl::StripAsciiWhitespace(absl::StripSuffix(absl::StripPrefix(line, "VmRSS:"), "kB")),
          &kb);
    }
  }
  return kb;
}

// The processes `pid` started (the simulated agents of --simulate).
std::vector<int> ChildrenOf(int pid) {
  std::vector<int> out;
  std::ifstream children(absl::StrCat("/proc/", pid, "/task/", pid, "/children"));
  int child = 0;
  while (children >> child) out.push_back(child);
  return out;
}

ServerFootprint Footprint(int pid, const std::string& db) {
  ServerFootprint f;
  if (pid > 0) {
    f.rss_kb = RssKb(pid);
    for (int child : ChildrenOf(pid)) f.agents_rss_kb += RssKb(child);
  }
  if (!db.empty()) {
    f.db_bytes = FileSize(db);
    f.wal_bytes = FileSize(db + "-wal");
  }
  return f;
}

// CPU time (user + system, seconds) of a process and of its children (the
// simulated agents of --simulate), from /proc; zero when unreadable.
struct CpuTime {
  double process = 0, children = 0;
};

double CpuSeconds(int pid) {
  std::ifstream stat(absl::StrCat("/proc/", pid, "/stat"));
  std::string text((std::istreambuf_iterator<char>(stat)), std::istreambuf_iterator<char>());
  // The command name may hold spaces: fields are counted after its ')'.
  const size_t close = text.rfind(')');
  if (close == std::string::npos) return 0;
  std::vector<std::string> fields = absl::StrSplit(text.substr(close + 2), ' ');
  // utime and stime are fields 14 and 15 of the line, 12 and 13 after ')'.
  int64_t utime = 0, stime = 0;
  if (fields.size() < 13 || !absl::SimpleAtoi(fields[11], &utime) ||
      !absl::SimpleAtoi(fields[12], &stime)) {
    return 0;
  }
  return static_cast<double>(utime + stime) / static_cast<double>(sysconf(_SC_CLK_TCK));
}

CpuTime CpuOf(int pid) {
  CpuTime t;
  if (pid <= 0) return t;
  t.process = CpuSeconds(pid);
  for (int child : ChildrenOf(pid)) t.children += CpuSeconds(child);
  return t;
}

struct Run {
  std::vector<ClientResult> results;
  std::vector<std::thread> threads;
  void Start(Shared* shared, int clients) {
    results.resize(clients);
    for (int i = 0; i < clients; ++i) threads.emplace_back(RunClient, shared, i, &results[i]);
  }
  void Stop(Shared* shared) {
    shared->stop = true;
    for (auto& t : threads) t.join();
  }
};

absl::StatusOr<std::vector<int64_t>> ParseList(const std::string& flag, const std::string& text) {
  std::vector<int64_t> out;
  for (absl::string_view part : absl::StrSplit(text, ',')) {
    int64_t n = 0;
    if (!absl::SimpleAtoi(part, &n) || n <= 0) {
      return absl::InvalidArgumentError(absl::StrCat(
          flag, ": must be a comma list of positive numbers, got \"", std::string(part), "\""));
    }
    out.push_back(n);
  }
  return out;
}

// What a cycle costs beyond its latency, when asked for: the server's CPU
// and its agents' per cycle, and the RPC floor of the same server with the
// same clients measured right after the cycles.
struct CycleCost {
  double server_cpu_ms = -1, agents_cpu_ms = -1;  // per cycle; < 0: not measured
  double client_cpu_ms = -1;                      // this process's clients, per cycle
  double floor_calls_per_s = -1;
  // The floor's own cost per call, when measured with the server's pid.
  double floor_client_cpu_ms = -1, floor_server_cpu_ms = -1;

  // What clients, server and agents together spend on one cycle; < 0 when
  // not measured.
  double CycleCpuMs() const {
    return server_cpu_ms < 0 ? -1 : client_cpu_ms + server_cpu_ms + agents_cpu_ms;
  }
  // What one floor call costs clients and server together; < 0 when not measured.
  double FloorCallCpuMs() const {
    return floor_client_cpu_ms < 0 || floor_server_cpu_ms < 0
               ? -1
               : floor_client_cpu_ms + floor_server_cpu_ms;
  }
  // `ms` of CPU counted in floor calls; < 0 when either is not measured.
  double InFloorCalls(double ms) const {
    return ms >= 0 && FloorCallCpuMs() > 0 ? ms / FloorCallCpuMs() : -1;
  }
  bool Budgeted() const { return InFloorCalls(CycleCpuMs()) >= 0; }
};

// The CPU this process (every client thread) has used so far.
double SelfCpuSeconds() {
  rusage usage{};
  if (getrusage(RUSAGE_SELF, &usage) != 0) return 0;
  auto seconds = [](const timeval& t) {
    return static_cast<double>(t.tv_sec) + static_cast<double>(t.tv_usec) / 1e6;
  };
  return seconds(usage.ru_utime) + seconds(usage.ru_stime);
}

std::string CellOrDash(double v, int digits) { return v < 0 ? "-" : Fixed(v, digits); }

std::string JsonCost(const CycleCost& c, const WindowStats& w) {
  std::string out;
  if (c.server_cpu_ms >= 0) {
    absl::StrAppend(&out, ",\"server_cpu_ms_per_cycle\":", Fixed(c.server_cpu_ms, 3),
                    ",\"agents_cpu_ms_per_cycle\":", Fixed(c.agents_cpu_ms, 3));
  }
  if (c.floor_calls_per_s > 0) {
    absl::StrAppend(&out, ",\"floor_calls_per_s\":", Fixed(c.floor_calls_per_s, 1),
                    ",\"cycles_per_floor_call\":", Fixed(w.PerSecond() / c.floor_calls_per_s, 3));
  }
  if (c.Budgeted()) {
    absl::StrAppend(&out, ",\"client_cpu_ms_per_cycle\":", Fixed(c.client_cpu_ms, 3),
                    ",\"floor_client_cpu_ms_per_call\":", Fixed(c.floor_client_cpu_ms, 4),
                    ",\"floor_server_cpu_ms_per_call\":", Fixed(c.floor_server_cpu_ms, 4),
                    ",\"cycle_cpu_in_floor_calls\":", Fixed(c.InFloorCalls(c.CycleCpuMs()), 2));
  }
  return out;
}

// The ratio the control plane aims at: cycles/s ÷ floor calls/s. Its
// inverse is the CPU a cycle may spend, in floor calls.
constexpr double kTargetCyclesPerFloorCall = 0.2;

// Where a cycle's CPU goes, in floor calls, one row per client count. The
// client threads' CPU is this process's, so it includes the bench's own
// bookkeeping; the floor's client CPU is measured the same way.
void PrintBudget(const std::vector<std::pair<int64_t, CycleCost>>& rows) {
  std::printf(
      "\n| clients | floor call CPU ms (client + server) | cycle CPU in floor calls | "
      "clients | server | agents | at %.1f cycles per floor call |\n"
      "|---|---|---|---|---|---|---|\n",
      kTargetCyclesPerFloorCall);
  for (const auto& [n, c] : rows) {
    if (!c.Budgeted()) continue;
    std::printf("| %lld | %s + %s | %s | %s | %s | %s | %.2f |\n", static_cast<long long>(n),
                Fixed(c.floor_client_cpu_ms, 4).c_str(), Fixed(c.floor_server_cpu_ms, 4).c_str(),
                Fixed(c.InFloorCalls(c.CycleCpuMs()), 2).c_str(),
                Fixed(c.InFloorCalls(c.client_cpu_ms), 2).c_str(),
                Fixed(c.InFloorCalls(c.server_cpu_ms), 2).c_str(),
                Fixed(c.InFloorCalls(c.agents_cpu_ms), 2).c_str(), 1 / kTargetCyclesPerFloorCall);
  }
}

int TableMode(Shared* shared, const std::vector<int64_t>& clients, double seconds, int server_pid,
              bool floor, bool json) {
  std::vector<std::pair<int64_t, CycleCost>> budgets;
  if (!json) {
    std::printf(
        "| clients | cycles | cycles/s | create ms p50 / p99 / p999 | ACTIVE ms p50 / p99 / p999 | "
        "remove ms p50 / p99 / p999 | cycle ms p50 / p99 / p999 | status calls / cycle | "
        "server CPU ms / cycle | agents CPU ms / cycle | floor calls/s | cycles/s / floor | "
        "refused | errors |\n"
        "|---|---|---|---|---|---|---|---|---|---|---|---|---|---|\n");
  }
  for (int64_t n : clients) {
    shared->stop = false;
    Run run;
    const absl::Time start = absl::Now();
    const CpuTime cpu_start = CpuOf(server_pid);
    const double self_start = SelfCpuSeconds();
    run.Start(shared, static_cast<int>(n));
    absl::SleepFor(absl::Seconds(seconds));  // the measured interval
    const absl::Time end = absl::Now();
    const CpuTime cpu_end = CpuOf(server_pid);
    const double self_end = SelfCpuSeconds();
    run.Stop(shared);
    const WindowStats w = Window(run.results, start, end);
    CycleCost cost;
    if (server_pid > 0 && w.cycles > 0) {
      const double cycles = static_cast<double>(w.cycles);
      cost.server_cpu_ms = 1000 * (cpu_end.process - cpu_start.process) / cycles;
      cost.agents_cpu_ms = 1000 * (cpu_end.children - cpu_start.children) / cycles;
      cost.client_cpu_ms = 1000 * (self_end - self_start) / cycles;
    }
    if (floor) {
      const CpuTime floor_server_start = CpuOf(server_pid);
      const double floor_self_start = SelfCpuSeconds();
      const vipu::bench::RpcFloor f =
          vipu::bench::MeasureRpcFloor(shared->server, static_cast<int>(n), seconds);
      cost.floor_calls_per_s = f.PerSecond();
      if (server_pid > 0 && f.calls > 0) {
        const double calls = static_cast<double>(f.calls);
        cost.floor_client_cpu_ms = 1000 * (SelfCpuSeconds() - floor_self_start) / calls;
        cost.floor_server_cpu_ms =
            1000 * (CpuOf(server_pid).process - floor_server_start.process) / calls;
      }
      budgets.push_back({n, cost});
    }
    if (json) {
      std::printf("{\"mode\":\"cycles\",\"clients\":%lld,%s%s}\n", static_cast<long long>(n),
                  JsonStats(w).c_str(), JsonCost(cost, w).c_str());
    } else {
      const double per_floor =
          cost.floor_calls_per_s > 0 ? w.PerSecond() / cost.floor_calls_per_s : -1;
      std::printf(
          "| %lld | %zu | %.0f | %s | %s | %s | %s | %.2f | %s | %s | %s | %s | %d | %d |\n",
          static_cast<long long>(n), w.cycles, w.PerSecond(), CellMs(w.create).c_str(),
          CellMs(w.active).c_str(), CellMs(w.remove).c_str(), CellMs(w.cycle).c_str(),
          w.status_calls, CellOrDash(cost.server_cpu_ms, 3).c_str(),
          CellOrDash(cost.agents_cpu_ms, 3).c_str(), CellOrDash(cost.floor_calls_per_s, 0).c_str(),
          CellOrDash(per_floor, 3).c_str(), w.refused, w.errors);
    }
    std::fflush(stdout);
  }
  if (!json && !budgets.empty()) PrintBudget(budgets);
  return 0;
}

int HistoryMode(Shared* shared, int clients, const std::vector<int64_t>& checkpoints,
                double window_seconds, int server_pid, const std::string& db, bool json) {
  struct Measured {
    int64_t checkpoint;
    uint64_t ops_at_start;
    absl::Time from, to;
    ServerFootprint footprint;
  };
  std::vector<Measured> windows;
  Run run;
  run.Start(shared, clients);
  for (int64_t checkpoint : checkpoints) {
    // Waiting for the clients to reach the checkpoint; the 10 ms poll only
    // sets where the window starts, not what it measures.
    uint64_t seen = shared->ops.load();
    absl::Time progress = absl::Now();
    while (shared->ops.load() < static_cast<uint64_t>(checkpoint)) {
      absl::SleepFor(absl::Milliseconds(10));
      if (shared->ops.load() != seen) {
        seen = shared->ops.load();
        progress = absl::Now();
      } else if (absl::Now() - progress > absl::Seconds(60)) {
        std::fprintf(stderr, "history: no operation succeeded for 60 s at %llu operations\n",
                     static_cast<unsigned long long>(seen));
        std::_Exit(1);  // the clients may be blocked in calls; do not join them
      }
    }
    Measured m{checkpoint, shared->ops.load(), absl::Now(), {}, Footprint(server_pid, db)};
    absl::SleepFor(absl::Seconds(window_seconds));
    m.to = absl::Now();
    windows.push_back(m);
    if (!json) {
      std::fprintf(stderr, "history: window after %lld operations measured\n",
                   static_cast<long long>(checkpoint));
    }
  }
  run.Stop(shared);
  if (!json) {
    std::printf(
        "| operations recorded | clients | cycles/s | create ms p50 / p99 / p999 | cycle ms p50 / "
        "p99 / p999 | server RSS MiB | agents RSS MiB | db + WAL MiB | errors |\n"
        "|---|---|---|---|---|---|---|---|---|\n");
  }
  double first = 0, last = 0;
  for (const Measured& m : windows) {
    const WindowStats w = Window(run.results, m.from, m.to);
    if (&m == &windows.front()) first = w.PerSecond();
    last = w.PerSecond();
    if (json) {
      std::printf(
          "{\"mode\":\"history\",\"clients\":%d,\"after_ops\":%lld,\"ops_at_start\":%llu,"
          "\"server_rss_kb\":%lld,\"agents_rss_kb\":%lld,\"db_bytes\":%lld,\"wal_bytes\":%lld,%s}"
          "\n",
          clients, static_cast<long long>(m.checkpoint),
          static_cast<unsigned long long>(m.ops_at_start),
          static_cast<long long>(m.footprint.rss_kb),
          static_cast<long long>(m.footprint.agents_rss_kb),
          static_cast<long long>(m.footprint.db_bytes),
          static_cast<long long>(m.footprint.wal_bytes), JsonStats(w).c_str());
    } else {
      std::printf("| %lld | %d | %.0f | %s | %s | %.1f | %.1f | %.1f + %.1f | %d |\n",
                  static_cast<long long>(m.checkpoint), clients, w.PerSecond(),
                  CellMs(w.create).c_str(), CellMs(w.cycle).c_str(),
                  static_cast<double>(m.footprint.rss_kb) / 1024,
                  static_cast<double>(m.footprint.agents_rss_kb) / 1024,
                  static_cast<double>(m.footprint.db_bytes) / (1 << 20),
                  static_cast<double>(m.footprint.wal_bytes) / (1 << 20), w.errors);
    }
  }
  const double ratio = first > 0 ? last / first : 0;
  if (json) {
    std::printf(
        "{\"mode\":\"history_ratio\",\"clients\":%d,\"from_ops\":%lld,\"to_ops\":%lld,"
        "\"ratio\":%.3f}\n",
        clients, static_cast<long long>(checkpoints.front()),
        static_cast<long long>(checkpoints.back()), ratio);
  } else {
    std::printf("\nthroughput after %lld operations / after %lld: %.2f (target >= 0.80)\n",
                static_cast<long long>(checkpoints.back()),
                static_cast<long long>(checkpoints.front()), ratio);
  }
  return 0;
}

}  // namespace

int main(int argc, char** argv) {
  auto shared = std::make_unique<Shared>();
  shared->server = "127.0.0.1:8090";
  std::string clients_list = "1,8,32";
  std::string history_list;
  double seconds = 10;
  double window_seconds = 5;
  int server_pid = 0;
  std::string db;
  bool json = false;
  bool floor = false;
  CLI::App app{"vipu control-plane benchmark"};
  app.add_option("--server", shared->server, "vipu-server address")->capture_default_str();
  app.add_option("--clients", clients_list, "comma list of client counts")->capture_default_str();
  app.add_option("--seconds", seconds, "duration per client count")
      ->check(CLI::Range(0.1, 3600.0))
      ->capture_default_str();
  app.add_option("--size", shared->size, "IPUs per partition")
      ->check(CLI::Range(1, 256))
      ->capture_default_str();
  app.add_option("--history", history_list,
                 "history mode: comma list of operation counts at which to measure a window "
                 "(e.g. 1000,100000); needs exactly one client count");
  app.add_option("--window-seconds", window_seconds, "history mode: length of each window")
      ->check(CLI::Range(0.1, 3600.0))
      ->capture_default_str();
  app.add_option("--server-pid", server_pid,
                 "the server's process: its CPU and its agents' per cycle; history mode: their "
                 "RSS")
      ->check(CLI::PositiveNumber);
  app.add_flag("--floor", floor,
               "after each client count, measure the RPC floor (GetVersion) with as many "
               "clients for as long, and report cycles/s divided by it");
  app.add_option("--db", db, "history mode: report the size of this database and its WAL");
  app.add_flag("--json", json, "one JSON object per line instead of the table");
  CLI11_PARSE(app, argc, argv);

  auto clients = ParseList("--clients", clients_list);
  if (!clients.ok()) {
    std::fprintf(stderr, "%s\n", std::string(clients.status().message()).c_str());
    return 2;
  }
  for (int64_t n : *clients) {
    if (n > 4096) {
      std::fprintf(stderr, "--clients: at most 4096 per run, got %lld\n",
                   static_cast<long long>(n));
      return 2;
    }
  }
  shared->seq = static_cast<uint64_t>(absl::ToUnixMicros(absl::Now()));
  if (history_list.empty())
    return TableMode(shared.get(), *clients, seconds, server_pid, floor, json);

  auto checkpoints = ParseList("--history", history_list);
  if (!checkpoints.ok()) {
    std::fprintf(stderr, "%s\n", std::string(checkpoints.status().message()).c_str());
    return 2;
  }
  if (!std::is_sorted(checkpoints->begin(), checkpoints->end())) {
    std::fprintf(stderr, "--history: checkpoints must be in increasing order, got %s\n",
                 history_list.c_str());
    return 2;
  }
  if (clients->size() != 1) {
    std::fprintf(stderr, "--clients: history mode takes one client count, got %s\n",
                 clients_list.c_str());
    return 2;
  }
  return HistoryMode(shared.get(), static_cast<int>(clients->front()), *checkpoints, window_seconds,
                     server_pid, db, json);
}
