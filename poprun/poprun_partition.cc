// PartitionManager: poprun's server choice, partition create/update/reset/wait and clean-up.
#include "poprun/poprun_partition.h"

#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <vector>

#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "cli/common/partition_commands.h"
#include "cli/common/partition_request.h"
#include "fabric/enum_names.h"
#include "fabric/types.h"
#include "poprun/poprun_validation.h"
#include "vipu_admin.grpc.pb.h"
#include "wire/server_members.h"

namespace vipu::poprun {
namespace {

std::string StateName(virmgrpc::PartitionReadyState s) {
  return virmgrpc::PartitionReadyState_Name(s);
}

// Values from IPUOF_VIPU_API_* are checked here so errors name the variable.
absl::Status CheckEnvNumber(const cli::Environment& env, const char* name, uint64_t max) {
  const std::string v = env.Get(name);
  uint64_t n = 0;
  if (!v.empty() && (!absl::SimpleAtoi(v, &n) || n < 1 || n > max)) {
    return absl::InvalidArgumentError(
        absl::StrCat(name, ": must be an integer in 1..", max, ", got ", v));
  }
  return absl::OkStatus();
}

absl::StatusOr<virmgrpc::ListPartitionsReply> ListPartitions(cli::Connection& conn) {
  virmgrpc::ListPartitionsRequest request;
  virmgrpc::ListPartitionsReply reply;
  absl::Status s =
      conn.Call(cli::CallKind::kReadOnly, [&](cli::Stubs& stubs, grpc::ClientContext* c) {
        return stubs.user().ListPartitions(c, request, &reply);
      });
  if (!s.ok()) return s;
  return reply;
}

// The first call's failure, naming the server and, when it cannot be
// reached, the options that chose it.
absl::Status ServerError(const absl::Status& s, const cli::ClientConfig& config) {
  const std::string target = config.Target();
  if (absl::IsUnavailable(s) || absl::IsDeadlineExceeded(s)) {
    return absl::UnavailableError(
        absl::StrCat("V-IPU server unreachable at ", target, " (--vipu-server-host ", config.host,
                     ", --vipu-server-port ", config.port, "): ", std::string(s.message())));
  }
  return absl::Status(s.code(),
                      absl::StrCat("V-IPU server at ", target, ": ", std::string(s.message())));
}

// The partition the launch runs on: --vipu-partition, else
// IPUOF_VIPU_API_PARTITION_ID, else the only one, else a new one; several
// and none named is an error.
absl::StatusOr<std::string> ChoosePartition(const PoprunOptions& options,
                                            const cli::Environment& env, const Logger& log,
                                            const virmgrpc::ListPartitionsReply& list) {
  if (!options.vipu_partition.empty()) return options.vipu_partition;
  if (std::string env_id = env.Get("IPUOF_VIPU_API_PARTITION_ID"); !env_id.empty()) {
    log.Info(absl::StrCat("Using V-IPU partition ", env_id, " from IPUOF_VIPU_API_PARTITION_ID"));
    return env_id;
  }
  if (list.partitions_size() == 1) {
    const std::string& id = list.partitions(0).id();
    log.Info(absl::StrCat("Using V-IPU partition ", id, " as it is the only one available"));
    return id;
  }
  if (list.partitions_size() == 0) {
    std::string id = absl::StrCat("poprun-", ::getpid());
    log.Info(absl::StrCat("No V-IPU partition available; using new partition ", id));
    return id;
  }
  std::vector<std::string> ids;
  for (const auto& p : list.partitions()) ids.push_back(p.id());
  return absl::InvalidArgumentError(absl::StrCat("--vipu-partition: required when ", ids.size(),
                                                 " partitions are available (",
                                                 absl::StrJoin(ids, ", "), ")"));
}

// Debug output only: the server's view of an existing partition.
void LogPartitionStatus(cli::Connection& conn, const Logger& log, const std::string& id) {
  virmgrpc::GetPartitionStatusRequest request;
  request.set_partition_id(id);
  virmgrpc::GetPartitionStatusReply reply;
  absl::Status st =
      conn.Call(cli::CallKind::kReadOnly, [&](cli::Stubs& stubs, grpc::ClientContext* c) {
        return stubs.user().GetPartitionStatus(c, request, &reply);
      });
  log.Debug(absl::StrCat("Status for partition ", id, ": ",
                         st.ok() ? "OK" : std::string(st.message()), " (error ",
                         static_cast<int>(st.code()), ")"));
}

// How an existing partition differs from what the launch needs (none: it fits).
std::vector<std::string> Mismatches(const virmgrpc::PartitionSpec& spec, uint32_t size,
                                    const PoprunOptions& options) {
  const uint32_t have = static_cast<uint32_t>(spec.ipus_size());
  const uint32_t gcds = std::max<uint32_t>(spec.num_gcds(), 1);
  std::vector<std::string> mismatch;
  if (spec.reconfigurable() ? have < size : have != size) {
    mismatch.push_back(absl::StrCat("size is ", have, ", need ", size));
  }
  if (options.num_ilds > 0 &&
      std::max<uint32_t>(spec.num_ipulink_segments(), 1) != options.num_ilds) {
    mismatch.push_back(absl::StrCat("ILDs is ", std::max<uint32_t>(spec.num_ipulink_segments(), 1),
                                    ", need ", options.num_ilds));
  }
  if (options.num_instances % gcds != 0) {
    mismatch.push_back(absl::StrCat("GCDs is ", gcds, ", need a divisor of ", options.num_instances,
                                    " instances"));
  }
  return mismatch;
}

// Fills the plan from the partition as it now is (created or found).
absl::Status ReadBack(cli::Connection& conn, PartitionPlan& plan) {
  absl::StatusOr<virmgrpc::ListPartitionsReply> now = ListPartitions(conn);
  if (!now.ok()) return now.status();
  for (const auto& p : now->partitions()) {
    if (p.id() != plan.id) continue;
    plan.reconfigurable = p.spec().reconfigurable();
    plan.num_gcds = std::max<uint32_t>(p.spec().num_gcds(), 1);
    plan.num_ilds = std::max<uint32_t>(p.spec().num_ipulink_segments(), 1);
  }
  return absl::OkStatus();
}

}  // namespace

absl::StatusOr<ServerChoice> ResolveServer(const PoprunOptions& o, const cli::Environment& env) {
  if (absl::Status s = CheckEnvNumber(env, "IPUOF_VIPU_API_PORT", 65535); !s.ok()) return s;
  if (std::string v = env.Get("IPUOF_VIPU_API_HOST"); !v.empty() && !o.vipu_server_host) {
    if (auto members = wire::ParseServerMembers(v, 1); !members.ok()) {
      return absl::InvalidArgumentError(
          absl::StrCat("IPUOF_VIPU_API_HOST: ", members.status().message()));
    }
  }
  if (absl::Status s = CheckEnvNumber(env, "IPUOF_VIPU_API_TIMEOUT", 86400); !s.ok()) return s;
  cli::ConnectionFlags flags;
  auto pick = [&](const std::optional<std::string>& flag, const char* var) {
    if (flag.has_value()) return flag;
    std::string v = env.Get(var);
    return v.empty() ? std::optional<std::string>() : std::optional<std::string>(v);
  };
  flags.api_host = pick(o.vipu_server_host, "IPUOF_VIPU_API_HOST");
  flags.api_port =
      pick(o.vipu_server_port ? std::optional<std::string>(absl::StrCat(*o.vipu_server_port))
                              : std::nullopt,
           "IPUOF_VIPU_API_PORT");
  flags.api_timeout =
      pick(o.vipu_server_timeout ? std::optional<std::string>(absl::StrCat(*o.vipu_server_timeout))
                                 : std::nullopt,
           "IPUOF_VIPU_API_TIMEOUT");
  auto config = cli::ResolveClientConfig(flags, env);
  if (!config.ok()) {
    return absl::InvalidArgumentError(
        absl::StrCat("vipu configuration: ", std::string(config.status().message())));
  }
  // The same resolution without vipu's own sources tells whether they
  // decided the address.
  cli::Environment bare;
  bare.system_config_path.clear();
  auto plain = cli::ResolveClientConfig(flags, bare);
  ServerChoice choice{*config, false};
  choice.from_vipu_config = !plain.ok() || plain->Target() != config->Target();
  return choice;
}

bool ShouldReset(const std::optional<bool>& flag, bool reconfigurable, bool created) {
  if (flag.has_value()) return *flag;
  return !reconfigurable && !created;
}

uint32_t GcdOfInstance(uint32_t instance, uint32_t num_instances, uint32_t num_gcds) {
  if (num_gcds <= 1 || num_instances == 0) return 0;
  return static_cast<uint32_t>(static_cast<uint64_t>(instance) * num_gcds / num_instances);
}

absl::StatusOr<fabric::PartitionRequest> CreateRequest(const PoprunOptions& options,
                                                       const std::string& id) {
  fabric::PartitionRequest request;
  request.id = id;
  request.size = PartitionSize(options);
  request.allocation_id = options.vipu_allocation;
  request.cluster_id = options.vipu_cluster;
  request.num_ilds = options.num_ilds;
  request.num_gcds = options.num_instances;
  if (!options.sync_type.empty()) {
    absl::StatusOr<fabric::SyncType> sync_type = fabric::ParseSyncType(options.sync_type);
    if (!sync_type.ok()) {
      return absl::InvalidArgumentError(
          absl::StrCat("--sync-type: ", std::string(sync_type.status().message())));
    }
    request.sync_type = *sync_type;
  }
  return request;
}

absl::Status PartitionManager::Remove(const std::string& id) {
  virmgrpc::RemovePartitionRequest request;
  request.set_partition_id(id);
  virmgrpc::RemovePartitionReply reply;
  return conn_.Call(cli::CallKind::kMutating, [&](cli::Stubs& stubs, grpc::ClientContext* c) {
    return stubs.user().RemovePartition(c, request, &reply);
  });
}

absl::Status PartitionManager::CheckFitsAllocation(uint32_t size) {
  vipuadmin::ListAllocationsRequest request;
  vipuadmin::ListAllocationsReply reply;
  absl::Status s =
      conn_.Call(cli::CallKind::kReadOnly, [&](cli::Stubs& stubs, grpc::ClientContext* c) {
        return stubs.allocations().ListAllocations(c, request, &reply);
      });
  if (absl::IsUnimplemented(s)) return absl::OkStatus();  // an older server: it decides
  if (!s.ok()) return s;
  const std::string& allocation = options_.vipu_allocation;
  const std::string& cluster = options_.vipu_cluster;
  // The allocations the server may place the partition in: the named one,
  // else those of the named cluster, else all.
  std::vector<const virmgrpc::Allocation*> candidates;
  for (const auto& a : reply.allocations()) {
    if (!allocation.empty() ? a.id() == allocation
                            : cluster.empty() || a.spec().cluster_id() == cluster) {
      candidates.push_back(&a);
    }
  }
  if (!allocation.empty()) {
    if (candidates.empty()) {
      return absl::NotFoundError(absl::StrCat("--vipu-allocation: no allocation named ", allocation,
                                              " on the V-IPU server"));
    }
    if (!cluster.empty() && candidates[0]->spec().cluster_id() != cluster) {
      return absl::InvalidArgumentError(
          absl::StrCat("--vipu-cluster: allocation ", allocation, " is in cluster ",
                       candidates[0]->spec().cluster_id(), ", not ", cluster));
    }
  } else if (!cluster.empty() && candidates.empty()) {
    std::vector<std::string> clusters;
    for (const auto& a : reply.allocations()) clusters.push_back(a.spec().cluster_id());
    std::sort(clusters.begin(), clusters.end());
    clusters.erase(std::unique(clusters.begin(), clusters.end()), clusters.end());
    return absl::NotFoundError(absl::StrCat(
        "--vipu-cluster: no allocation in a cluster named ", cluster, " on the V-IPU server",
        clusters.empty()
            ? std::string()
            : absl::StrCat(" (clusters with allocations: ", absl::StrJoin(clusters, ", "), ")")));
  }
  if (candidates.size() != 1) return absl::OkStatus();  // the server picks one that fits
  return ValidateFitsAllocation(
      size, candidates[0]->id(),
      static_cast<uint32_t>(candidates[0]->spec().agent_ids_size()) * fabric::kIpusPerMachine);
}

absl::Status PartitionManager::Create(const std::string& id) {
  absl::StatusOr<fabric::PartitionRequest> wanted = CreateRequest(options_, id);
  if (!wanted.ok()) return wanted.status();
  const virmgrpc::CreatePartitionRequest request = cli::ToWire(*wanted);
  log_.Info(absl::StrCat("Creating partition ", id, " with ", wanted->size, " IPUs and ",
                         options_.num_instances, " GCDs"));
  virmgrpc::CreatePartitionReply reply;
  absl::Status s =
      conn_.Call(cli::CallKind::kMutating, [&](cli::Stubs& stubs, grpc::ClientContext* c) {
        return stubs.user().CreatePartition(c, request, &reply);
      });
  if (!s.ok()) {
    return absl::Status(s.code(),
                        absl::StrCat("create partition ", id, ": ", std::string(s.message())));
  }
  created_ = id;
  return absl::OkStatus();
}

absl::Status PartitionManager::WaitActive(const std::string& id) {
  const uint32_t attempts = options_.vipu_partition_attempts;
  absl::Status last;
  for (uint32_t attempt = 1; attempt <= attempts; ++attempt) {
    const auto deadline =
        std::chrono::steady_clock::now() + std::chrono::seconds(conn_.config().timeout_seconds);
    auto status = cli::WaitForPartition(conn_, id, deadline);
    if (status.ok()) {
      log_.Debug(absl::StrCat("Done polling, final state of ", id, ": ",
                              StateName(status->ready_state())));
      return absl::OkStatus();
    }
    last = status.status();
    if (attempt < attempts) {
      log_.Warn(absl::StrCat("Partition ", id, " is not active (attempt ", attempt, " of ",
                             attempts, "): ", std::string(last.message()), "; resetting it"));
      virmgrpc::ResetPartitionRequest request;
      request.set_partition_id(id);
      virmgrpc::ResetPartitionReply reply;
      absl::Status s =
          conn_.Call(cli::CallKind::kMutating, [&](cli::Stubs& stubs, grpc::ClientContext* c) {
            return stubs.user().ResetPartition(c, request, &reply);
          });
      if (!s.ok()) last = s;
    }
  }
  return absl::FailedPreconditionError(absl::StrCat("partition ", id,
                                                    " did not become PS_ACTIVE after ", attempts,
                                                    " attempt(s): ", std::string(last.message())));
}

absl::Status PartitionManager::Reset(const std::string& id) {
  log_.Info(absl::StrCat("Resetting partition ", id));
  virmgrpc::ResetPartitionRequest request;
  request.set_partition_id(id);
  virmgrpc::ResetPartitionReply reply;
  absl::Status s =
      conn_.Call(cli::CallKind::kMutating, [&](cli::Stubs& stubs, grpc::ClientContext* c) {
        return stubs.user().ResetPartition(c, request, &reply);
      });
  if (!s.ok()) {
    return absl::Status(s.code(),
                        absl::StrCat("reset partition ", id, ": ", std::string(s.message())));
  }
  return WaitActive(id);
}

absl::StatusOr<PartitionPlan> PartitionManager::Prepare() {
  log_.Debug("Connecting to " + conn_.config().Target());
  absl::StatusOr<virmgrpc::ListPartitionsReply> list = ListPartitions(conn_);
  if (!list.ok()) return ServerError(list.status(), conn_.config());

  PartitionPlan plan;
  absl::StatusOr<std::string> id = ChoosePartition(options_, env_, log_, *list);
  if (!id.ok()) return id.status();
  plan.id = *std::move(id);

  const uint32_t size = PartitionSize(options_);
  const virmgrpc::Partition* existing = nullptr;
  for (const auto& p : list->partitions()) {
    if (p.id() == plan.id) existing = &p;
  }
  if (existing == nullptr) {
    if (absl::Status f = CheckFitsAllocation(size); !f.ok()) return f;
    if (absl::Status c = Create(plan.id); !c.ok()) return c;
    plan.created = true;
  } else {
    LogPartitionStatus(conn_, log_, plan.id);
    const std::string why = absl::StrJoin(Mismatches(existing->spec(), size, options_), "; ");
    if (why.empty()) {
      log_.Info(absl::StrCat("Partition ", plan.id, " already exists and is in state: ",
                             StateName(existing->ready_state())));
      if (existing->spec().reconfigurable()) {
        log_.Debug(absl::StrCat("The reconfigurable partition ", plan.id, " is OK"));
      }
    } else {
      if (!options_.update_partition) {
        return absl::FailedPreconditionError(
            absl::StrCat("partition ", plan.id, " does not match the launch: ", why,
                         " (pass --update-partition=yes to re-create it)"));
      }
      if (absl::Status f = CheckFitsAllocation(size); !f.ok()) return f;
      log_.Info(absl::StrCat("Updating partition ", plan.id, ": ", why));
      if (absl::Status r = Remove(plan.id); !r.ok()) {
        return absl::Status(
            r.code(), absl::StrCat("remove partition ", plan.id, ": ", std::string(r.message())));
      }
      if (absl::Status c = Create(plan.id); !c.ok()) return c;
      plan.created = true;
    }
  }
  if (absl::Status w = WaitActive(plan.id); !w.ok()) return w;

  if (absl::Status r = ReadBack(conn_, plan); !r.ok()) return r;
  if (ShouldReset(options_.reset_partition, plan.reconfigurable, plan.created)) {
    if (absl::Status r = Reset(plan.id); !r.ok()) return r;
  }
  auto gcd = cli::FetchGcdConfig(conn_, plan.id, 0);
  if (!gcd.ok()) return gcd.status();
  std::map<std::string, std::string> attributes(gcd->attributes().begin(), gcd->attributes().end());
  plan.target_options = TargetOptionsFromGcd(attributes, gcd->devices_size());
  return plan;
}

}  // namespace vipu::poprun
