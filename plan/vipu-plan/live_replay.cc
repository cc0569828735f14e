// ReplayLive: a virtual replay's creates and removes against a real vipu-server, placements
// compared.
#include "plan/vipu-plan/live_replay.h"

#include <grpcpp/grpcpp.h>

#include <algorithm>
#include <chrono>
#include <memory>
#include <set>
#include <thread>
#include <tuple>
#include <utility>

#include "absl/strings/str_cat.h"
#include "base/status_macros.h"
#include "vipuuser.grpc.pb.h"

namespace vipu::plan {
namespace {

using Clock = std::chrono::steady_clock;

enum class Kind { kRemove = 0, kCreate = 1 };

struct Action {
  double t = 0;
  Kind kind = Kind::kCreate;
  uint64_t seq = 0;
  uint32_t job = 0;
  bool operator<(const Action& o) const {
    return std::tie(t, kind, seq, job) < std::tie(o.t, o.kind, o.seq, o.job);
  }
};

absl::Status FromGrpc(const grpc::Status& s, const std::string& what) {
  return absl::Status(static_cast<absl::StatusCode>(s.error_code()),
                      absl::StrCat("live: ", what, ": ", s.error_message()));
}

class LiveClient {
 public:
  explicit LiveClient(const std::string& address)
      : stub_(virmgrpc::UserService::NewStub(
            grpc::CreateChannel(address, grpc::InsecureChannelCredentials()))) {}

  grpc::Status List(virmgrpc::ListPartitionsReply* reply) {
    grpc::ClientContext ctx;
    Deadline(&ctx);
    return stub_->ListPartitions(&ctx, virmgrpc::ListPartitionsRequest(), reply);
  }
  grpc::Status Create(const std::string& id, uint32_t size) {
    grpc::ClientContext ctx;
    Deadline(&ctx);
    virmgrpc::CreatePartitionRequest req;
    req.mutable_requirements()->set_id(id);
    req.mutable_requirements()->set_size(size);
    virmgrpc::CreatePartitionReply reply;
    return stub_->CreatePartition(&ctx, req, &reply);
  }
  grpc::Status Status(const std::string& id, virmgrpc::PartitionStatus* status) {
    grpc::ClientContext ctx;
    Deadline(&ctx);
    virmgrpc::GetPartitionStatusRequest req;
    req.set_partition_id(id);
    virmgrpc::GetPartitionStatusReply reply;
    grpc::Status s = stub_->GetPartitionStatus(&ctx, req, &reply);
    *status = reply.status();
    return s;
  }
  grpc::Status Remove(const std::string& id) {
    grpc::ClientContext ctx;
    Deadline(&ctx);
    virmgrpc::RemovePartitionRequest req;
    req.set_partition_id(id);
    req.set_force(true);
    virmgrpc::RemovePartitionReply reply;
    return stub_->RemovePartition(&ctx, req, &reply);
  }

 private:
  static void Deadline(grpc::ClientContext* ctx) {
    ctx->set_deadline(std::chrono::system_clock::now() + std::chrono::seconds(30));
  }
  std::unique_ptr<virmgrpc::UserService::Stub> stub_;
};

std::string PartitionId(uint32_t job) { return absl::StrCat("plan-", job); }

std::string Positions(const std::set<std::pair<uint32_t, uint32_t>>& ipus) {
  std::string out;
  for (const auto& [ild, topology_id] : ipus) {
    absl::StrAppend(&out, out.empty() ? "" : " ", ild, "/", topology_id);
  }
  return out;
}

// Waits for PS_ACTIVE (the agents configured) and reads the partition's
// (ILD, topology id) pairs back.
absl::StatusOr<std::set<std::pair<uint32_t, uint32_t>>> Placed(LiveClient& client,
                                                               const std::string& id) {
  const Clock::time_point until = Clock::now() + std::chrono::seconds(60);
  while (true) {
    virmgrpc::PartitionStatus status;
    grpc::Status s = client.Status(id, &status);
    if (!s.ok()) return FromGrpc(s, absl::StrCat("status of ", id));
    if (status.ready_state() == virmgrpc::PS_ACTIVE) break;
    if (status.ready_state() == virmgrpc::PS_ERROR || Clock::now() > until) {
      return absl::InternalError(absl::StrCat("live: partition ", id, " did not become active"));
    }
    std::this_thread::sleep_for(std::chrono::milliseconds(2));
  }
  virmgrpc::ListPartitionsReply list;
  grpc::Status s = client.List(&list);
  if (!s.ok()) return FromGrpc(s, "list partitions");
  for (const virmgrpc::Partition& p : list.partitions()) {
    if (p.id() != id) continue;
    std::set<std::pair<uint32_t, uint32_t>> ipus;
    for (const virmgrpc::PartitionIpu& ipu : p.spec().ipus()) {
      ipus.emplace(ipu.ipulink_domain_topology_id(), ipu.topology_id());
    }
    return ipus;
  }
  return absl::InternalError(absl::StrCat("live: partition ", id, " is not listed"));
}

// OK when the server at `address` holds no partition: the replay's pod
// starts empty.
absl::Status CheckEmpty(LiveClient& client, const std::string& address) {
  virmgrpc::ListPartitionsReply existing;
  if (grpc::Status s = client.List(&existing); !s.ok()) {
    return FromGrpc(s, absl::StrCat("cannot list the partitions of ", address));
  }
  if (existing.partitions_size() > 0) {
    return absl::FailedPreconditionError(absl::StrCat("live: ", address, " already holds ",
                                                      existing.partitions_size(),
                                                      " partition(s); replay on an empty pod"));
  }
  return absl::OkStatus();
}

// The replay's creates and removes, in its order: a create for each job it
// started or refused, a remove when a started job's run ended.
std::vector<Action> Actions(const Trace& trace, const ReplayResult& result) {
  std::vector<Action> actions;
  for (uint32_t j = 0; j < result.jobs.size(); ++j) {
    const JobOutcome& o = result.jobs[j];
    if (o.create_seq == 0) continue;
    if (Ran(o.status)) {
      actions.push_back({o.start, Kind::kCreate, o.create_seq, j});
      actions.push_back({o.end, Kind::kRemove, 0, j});
    } else if (o.status == JobStatus::kRefused) {
      actions.push_back({trace.jobs[j].submit, Kind::kCreate, o.create_seq, j});
    }
  }
  std::sort(actions.begin(), actions.end());
  return actions;
}

// The (ILD, topology id) pairs of the block the replay placed a job on.
std::set<std::pair<uint32_t, uint32_t>> Replayed(const Block& block) {
  std::set<std::pair<uint32_t, uint32_t>> ipus;
  for (uint32_t k = 0; k < block.num_ilds; ++k) {
    for (uint32_t r = 0; r < block.segment; ++r) {
      ipus.emplace(block.first_ild + k, block.start + r);
    }
  }
  return ipus;
}

// Asks the server to create `job`'s partition as the replay did, `o` its
// outcome there, and adds where the server's answer differs to
// outcome->divergences (`who` names the job). True when the partition was
// created, and is then in `held`; an error when the server failed otherwise
// than by refusing.
absl::StatusOr<bool> PlayCreate(LiveClient& client, uint32_t job, const JobOutcome& o,
                                const std::string& who, std::set<uint32_t>* held,
                                LiveOutcome* outcome) {
  const std::string id = PartitionId(job);
  grpc::Status s = client.Create(id, o.size);
  if (o.status == JobStatus::kRefused) {
    if (s.error_code() == grpc::StatusCode::RESOURCE_EXHAUSTED) {
      ++outcome->refusals;
      return false;
    }
    if (s.ok()) {
      client.Remove(id);
      outcome->divergences.push_back(
          absl::StrCat(who, ": the server created it where the replay refused it"));
      return false;
    }
    return FromGrpc(s, absl::StrCat("create ", id));
  }
  if (!s.ok()) {
    if (s.error_code() != grpc::StatusCode::RESOURCE_EXHAUSTED) {
      return FromGrpc(s, absl::StrCat("create ", id));
    }
    outcome->divergences.push_back(absl::StrCat(who, ": the server refused it (", s.error_message(),
                                                ") where the replay placed it"));
    return false;
  }
  held->insert(job);
  ++outcome->creates;
  ASSIGN_OR_RETURN(const auto placed, Placed(client, id));
  const std::set<std::pair<uint32_t, uint32_t>> replayed = Replayed(o.block);
  if (placed != replayed) {
    outcome->divergences.push_back(absl::StrCat(who, ": the server placed it on (ILD/topology id) ",
                                                Positions(placed), ", the replay on ",
                                                Positions(replayed)));
  }
  return true;
}

}  // namespace

absl::StatusOr<LiveOutcome> ReplayLive(const Trace& trace, const ReplayResult& result,
                                       const LiveOptions& options) {
  LiveClient client(options.address);
  RETURN_IF_ERROR(CheckEmpty(client, options.address));
  const std::vector<Action> actions = Actions(trace, result);
  LiveOutcome outcome;
  std::set<uint32_t> held;
  auto clean_up = [&] {
    for (uint32_t job : held) client.Remove(PartitionId(job));
  };
  const Clock::time_point wall0 = Clock::now();
  Clock::time_point last_report = wall0;
  const double t0 = actions.empty() ? 0 : actions.front().t;
  for (size_t i = 0; i < actions.size(); ++i) {
    const Action& a = actions[i];
    // Compressed real time: the server sees the replay's pace, scaled.
    std::this_thread::sleep_until(
        wall0 + std::chrono::duration_cast<Clock::duration>(
                    std::chrono::duration<double>((a.t - t0) / options.time_scale)));
    const std::string id = PartitionId(a.job);
    if (a.kind == Kind::kRemove) {
      if (!held.count(a.job)) continue;
      if (grpc::Status s = client.Remove(id); !s.ok()) {
        clean_up();
        return FromGrpc(s, absl::StrCat("remove ", id));
      }
      held.erase(a.job);
      continue;
    }
    const std::string who = absl::StrCat("job ", trace.jobs[a.job].id, " (create ", a.seq, ")");
    absl::StatusOr<bool> created =
        PlayCreate(client, a.job, result.jobs[a.job], who, &held, &outcome);
    if (!created.ok()) {
      clean_up();
      return created.status();
    }
    if (!*created) continue;
    if (options.progress && Clock::now() - last_report > std::chrono::seconds(1)) {
      last_report = Clock::now();
      options.progress(i + 1, actions.size());
    }
  }
  clean_up();
  outcome.wall_s = std::chrono::duration<double>(Clock::now() - wall0).count();
  return outcome;
}

}  // namespace vipu::plan
