// Crash consistency (docs/architecture.md, invariants 1-3): client threads
// create, reset and remove partitions through the generated stubs while
// vipu-server is SIGKILLed at random moments; after every restart the
// acknowledged history must be what the server shows, no IPU is in two
// partitions or lost, and the agents hold every ACTIVE partition at its stored
// generation.
//
// CI runs 50 kills. Longer runs (bench/): VIPU_CRASH_ITERATIONS=1000; a failing
// run prints its seed, VIPU_CRASH_SEED=<seed> repeats the schedule of
// operations (kill moments still depend on timing).
#include <grpcpp/grpcpp.h>

#include <algorithm>
#include <atomic>
#include <chrono>
#include <cstdlib>
#include <iostream>
#include <mutex>
#include <random>
#include <thread>
#include <utility>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "absl/time/clock.h"
#include "gtest/gtest.h"
#include "tests/integration/harness.h"
#include "tests/integration/state_snapshot.h"
#include "vipuuser.grpc.pb.h"

namespace vipu::testing {
namespace {

constexpr int kClientThreads = 4;

int EnvInt(const char* name, int fallback) {
  const char* v = std::getenv(name);
  return v != nullptr && *v != '\0' ? std::atoi(v) : fallback;
}

// What the clients know about each partition id they used. Ids are never
// reused, so an old answer can never be mistaken for a new one.
enum class Known { kPresent, kAbsent, kUnknown };

class History {
 public:
  void Set(const std::string& id, Known k) {
    std::lock_guard<std::mutex> lock(mu_);
    ids_[id] = k;
  }
  Known Get(const std::string& id) {
    std::lock_guard<std::mutex> lock(mu_);
    auto it = ids_.find(id);
    return it == ids_.end() ? Known::kAbsent : it->second;
  }
  void Violation(std::string what) {
    std::lock_guard<std::mutex> lock(mu_);
    violations_.push_back(std::move(what));
  }
  std::map<std::string, Known> ids() {
    std::lock_guard<std::mutex> lock(mu_);
    return ids_;
  }
  // Counts of acknowledged operations and of lost replies, for the summary.
  std::atomic<int> creates{0}, removes{0}, resets{0}, unknown{0};

  std::vector<std::string> TakeViolations() {
    std::lock_guard<std::mutex> lock(mu_);
    return std::exchange(violations_, {});
  }

 private:
  std::mutex mu_;
  std::map<std::string, Known> ids_;
  std::vector<std::string> violations_;
};

// The server may have done it or not: the reply was lost with the process.
bool OutcomeUnknown(const grpc::Status& s) {
  switch (s.error_code()) {
    case grpc::StatusCode::UNAVAILABLE:
    case grpc::StatusCode::DEADLINE_EXCEEDED:
    case grpc::StatusCode::CANCELLED:
    case grpc::StatusCode::UNKNOWN:
    case grpc::StatusCode::INTERNAL:
    case grpc::StatusCode::ABORTED:
      return true;
    default:
      return false;
  }
}

// One client: works only on its own ids, one call at a time, so that the
// history of each id is sequential.
void RunClient(const std::string& address, const std::string& prefix, uint32_t seed,
               std::vector<std::string> own, History* history, std::atomic<bool>* stop) {
  auto stub = virmgrpc::UserService::NewStub(
      grpc::CreateChannel(address, grpc::InsecureChannelCredentials()));
  std::mt19937 rng(seed);
  int next = 0;
  auto deadline = [](grpc::ClientContext* ctx) {
    ctx->set_deadline(std::chrono::system_clock::now() + std::chrono::seconds(5));
  };
  while (!stop->load()) {
    const int dice = static_cast<int>(rng() % 100);
    if (own.empty() || dice < 40) {
      static constexpr uint32_t kSizes[] = {1, 1, 2, 2, 4, 8};
      const std::string id = absl::StrCat(prefix, "-", next++);
      virmgrpc::CreatePartitionRequest request;
      request.mutable_requirements()->set_id(id);
      request.mutable_requirements()->set_size(kSizes[rng() % 6]);
      history->Set(id, Known::kUnknown);  // before sending: a kill may land any moment now
      grpc::ClientContext ctx;
      deadline(&ctx);
      virmgrpc::CreatePartitionReply reply;
      grpc::Status s = stub->CreatePartition(&ctx, request, &reply);
      if (s.ok()) {
        history->Set(id, Known::kPresent);
        own.push_back(id);
        ++history->creates;
      } else if (OutcomeUnknown(s)) {
        ++history->unknown;
        return;  // the server is going down: one lost reply per client
      } else {
        history->Set(id, Known::kAbsent);
        if (s.error_code() != grpc::StatusCode::RESOURCE_EXHAUSTED) {
          history->Violation(
              absl::StrCat("create ", id, ": unexpected ", s.error_code(), " ", s.error_message()));
        }
      }
      continue;
    }
    const size_t pick = rng() % own.size();
    const std::string id = own[pick];
    const Known before = history->Get(id);
    grpc::ClientContext ctx;
    deadline(&ctx);
    if (dice < 75) {
      virmgrpc::RemovePartitionRequest request;
      request.set_partition_id(id);
      request.set_force(rng() % 4 == 0);
      history->Set(id, Known::kUnknown);
      virmgrpc::RemovePartitionReply reply;
      grpc::Status s = stub->RemovePartition(&ctx, request, &reply);
      if (s.ok() || s.error_code() == grpc::StatusCode::NOT_FOUND) {
        if (!s.ok() && before == Known::kPresent) {
          history->Violation(
              absl::StrCat("remove ", id, ": acknowledged partition is gone: ", s.error_message()));
        }
        history->Set(id, Known::kAbsent);
        own.erase(own.begin() + static_cast<long>(pick));
        history->removes += s.ok();
      } else if (OutcomeUnknown(s)) {
        ++history->unknown;
        return;
      } else if (s.error_code() != grpc::StatusCode::FAILED_PRECONDITION) {
        history->Violation(
            absl::StrCat("remove ", id, ": unexpected ", s.error_code(), " ", s.error_message()));
      }
    } else {
      virmgrpc::ResetPartitionRequest request;
      request.set_partition_id(id);
      virmgrpc::ResetPartitionReply reply;
      grpc::Status s = stub->ResetPartition(&ctx, request, &reply);
      history->resets += s.ok();
      if (s.error_code() == grpc::StatusCode::NOT_FOUND) {
        if (before == Known::kPresent) {
          history->Violation(
              absl::StrCat("reset ", id, ": acknowledged partition is gone: ", s.error_message()));
        }
        history->Set(id, Known::kAbsent);
        own.erase(own.begin() + static_cast<long>(pick));
      } else if (OutcomeUnknown(s)) {
        ++history->unknown;
        return;
      } else if (!s.ok() && s.error_code() != grpc::StatusCode::FAILED_PRECONDITION) {
        history->Violation(
            absl::StrCat("reset ", id, ": unexpected ", s.error_code(), " ", s.error_message()));
      }
    }
  }
}

// The server's view against the clients' history; settles unknown outcomes.
// The partitions are listed before the database is read, and nothing but
// recovery (which only finishes removals) runs in between: the database
// read is the later word.
std::vector<std::string> CheckHistory(const StateSnapshot& snapshot, History* history) {
  std::vector<std::string> problems;
  for (const auto& [id, known] : history->ids()) {
    const bool listed = snapshot.listed.count(id) > 0;
    auto stored = snapshot.stored.find(id);
    const bool is_stored = stored != snapshot.stored.end();
    if (known == Known::kPresent && !(listed && is_stored)) {
      problems.push_back(absl::StrCat("acknowledged ", id, " is missing (listed ", listed,
                                      ", stored ", is_stored, ")"));
    } else if (known == Known::kAbsent && (listed || is_stored)) {
      problems.push_back(absl::StrCat(id,
                                      " is there after its removal was acknowledged (or its "
                                      "creation refused)"));
    } else if (known == Known::kUnknown) {
      // A removal the crash interrupted is finished by recovery: still unknown.
      if (is_stored && stored->second.operation_state == virmgrpc::POS_REMOVING) continue;
      history->Set(id, is_stored ? Known::kPresent : Known::kAbsent);
    }
  }
  auto ids = history->ids();
  for (const auto& [id, p] : snapshot.stored) {
    if (!ids.count(id)) problems.push_back(absl::StrCat(id, " was never requested"));
  }
  return problems;
}

// The end of the server's log (warnings and errors of every run so far).
std::string LogTail(const ServerProcess& server) {
  std::string log = ReadFile(server.dir() + "/server.log");
  if (log.size() > 6000) log = log.substr(log.size() - 6000);
  return "\nserver.log (tail):\n" + log;
}

bool Quiet(const StateSnapshot& s) {
  for (const auto& [id, p] : s.stored) {
    if (p.ready_state == virmgrpc::PS_PENDING || p.operation_state == virmgrpc::POS_REMOVING) {
      return false;
    }
  }
  return CheckAgentsAgree(s, /*no_orphans=*/true).empty();
}

TEST(CrashTest, AcknowledgedStateSurvivesRepeatedKill9UnderLoad) {
  const int iterations = EnvInt("VIPU_CRASH_ITERATIONS", 50);
  // Longer under sanitizers, so that the load gets going before the kill.
  const int kill_window_ms = std::max(1, EnvInt("VIPU_CRASH_KILL_WINDOW_MS", 400));
  const uint32_t seed =
      static_cast<uint32_t>(EnvInt("VIPU_CRASH_SEED", static_cast<int>(std::random_device{}())));
  SCOPED_TRACE(absl::StrCat("VIPU_CRASH_SEED=", seed));
  std::mt19937 rng(seed);
  auto server = ServerProcess::Start("pod16");
  History history;
  const absl::Time start = absl::Now();
  int active_checked = 0;  // ACTIVE partitions found on their agents after a restart

  for (int iteration = 0; iteration < iterations; ++iteration) {
    SCOPED_TRACE(absl::StrCat("iteration ", iteration));
    // Right after ready: the history holds, placement is sane, and every
    // ACTIVE partition is already back on its (restarted) agents.
    auto snapshot = TakeSnapshot(*server);
    ASSERT_TRUE(snapshot.ok()) << snapshot.status();
    std::vector<std::string> problems = CheckHistory(*snapshot, &history);
    for (std::string& p : CheckPlacementInvariants(*snapshot, kPod16Ipus)) problems.push_back(p);
    for (const auto& [id, p] : snapshot->stored) {
      active_checked +=
          p.ready_state == virmgrpc::PS_ACTIVE && p.operation_state == virmgrpc::POS_IDLE;
    }
    for (std::string& p : CheckAgentsAgree(*snapshot, /*no_orphans=*/false)) {
      problems.push_back(absl::StrCat("right after ready: ", p));
    }
    ASSERT_TRUE(problems.empty()) << absl::StrJoin(problems, "\n") << LogTail(*server);

    // Some rounds start from a quiet server, so orphans on agents show.
    if (iteration % 10 == 9) {
      std::string last;
      bool quiet = WaitFor(
          [&] {
            auto s = TakeSnapshot(*server);
            if (!s.ok()) return false;
            last = absl::StrJoin(CheckAgentsAgree(*s, true), "\n");
            return Quiet(*s);
          },
          absl::Seconds(30));
      ASSERT_TRUE(quiet) << last;
    }

    // Load: each client gets the live ids of some earlier clients.
    std::vector<std::vector<std::string>> own(kClientThreads);
    int n = 0;
    for (const auto& [id, known] : history.ids()) {
      if (known != Known::kAbsent) own[n++ % kClientThreads].push_back(id);
    }
    std::atomic<bool> stop{false};
    std::vector<std::thread> clients;
    for (int t = 0; t < kClientThreads; ++t) {
      clients.emplace_back(RunClient, server->address(), absl::StrCat("i", iteration, "t", t),
                           static_cast<uint32_t>(rng()), own[t], &history, &stop);
    }
    // The kill moment (not a synchronisation): anywhere in the first 400 ms
    // (VIPU_CRASH_KILL_WINDOW_MS) of load, which includes the recovery work
    // queued at start.
    std::this_thread::sleep_for(std::chrono::milliseconds(rng() % kill_window_ms));
    server->Kill();
    stop = true;
    for (std::thread& t : clients) t.join();
    std::vector<std::string> violations = history.TakeViolations();
    ASSERT_TRUE(violations.empty()) << absl::StrJoin(violations, "\n") << LogTail(*server);
    server->Restart();
  }

  // The end: everything quiet and agreed, then all removed and the whole pod
  // fits in one partition (no IPU was lost on the way).
  auto final_snapshot = TakeSnapshot(*server);
  ASSERT_TRUE(final_snapshot.ok()) << final_snapshot.status();
  std::vector<std::string> problems = CheckHistory(*final_snapshot, &history);
  ASSERT_TRUE(problems.empty()) << absl::StrJoin(problems, "\n");
  std::string last;
  ASSERT_TRUE(WaitFor(
      [&] {
        auto s = TakeSnapshot(*server);
        if (!s.ok()) return false;
        last = absl::StrJoin(CheckAgentsAgree(*s, true), "\n");
        return Quiet(*s);
      },
      absl::Seconds(30)))
      << last;
  auto stub = virmgrpc::UserService::NewStub(
      grpc::CreateChannel(server->address(), grpc::InsecureChannelCredentials()));
  for (const auto& [id, p] : final_snapshot->listed) {
    grpc::ClientContext ctx;
    virmgrpc::RemovePartitionRequest request;
    request.set_partition_id(id);
    virmgrpc::RemovePartitionReply reply;
    grpc::Status s = stub->RemovePartition(&ctx, request, &reply);
    EXPECT_TRUE(s.ok() || s.error_code() == grpc::StatusCode::NOT_FOUND)
        << id << ": " << s.error_message();
  }
  grpc::ClientContext ctx;
  virmgrpc::CreatePartitionRequest whole;
  whole.mutable_requirements()->set_id("whole-pod");
  whole.mutable_requirements()->set_size(kPod16Ipus);
  virmgrpc::CreatePartitionReply reply;
  grpc::Status s = stub->CreatePartition(&ctx, whole, &reply);
  ASSERT_TRUE(s.ok()) << s.error_message();
  ASSERT_TRUE(WaitFor(
      [&] {
        auto snap = TakeSnapshot(*server);
        return snap.ok() && snap->stored.count("whole-pod") &&
               snap->stored.at("whole-pod").ready_state == virmgrpc::PS_ACTIVE && Quiet(*snap);
      },
      absl::Seconds(30)));
  std::cout << "[ crash    ] " << iterations << " kills in "
            << absl::FormatDuration(absl::Now() - start) << "; acknowledged " << history.creates
            << " creates, " << history.removes << " removes, " << history.resets << " resets; "
            << history.unknown << " replies lost to a kill; " << active_checked
            << " ACTIVE partitions found on their agents right after a restart\n";
  EXPECT_GT(active_checked, 0) << "the agent check never had anything to check";
}

}  // namespace
}  // namespace vipu::testing
