// The key layout of the etcd store and the protobuf form of its values.
#include "storage/etcd/etcd_layout.h"

#include <array>
#include <utility>

#include "absl/container/flat_hash_map.h"
#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_split.h"
#include "base/absl_view.h"
#include "storage/etcd/records.pb.h"

namespace vipu::storage::etcd {
namespace {

constexpr std::array<std::pair<Table, std::string_view>, 5> kTables = {{
    {Table::kAgents, "agents/"},
    {Table::kClusters, "clusters/"},
    {Table::kAllocations, "allocations/"},
    {Table::kPartitions, "partitions/"},
    {Table::kUsers, "users/"},
}};

template <typename Message>
absl::StatusOr<Message> Parse(std::string_view kind, std::string_view id, std::string_view bytes) {
  Message message;
  if (!message.ParseFromArray(bytes.data(), static_cast<int>(bytes.size()))) {
    return absl::DataLossError(absl::StrCat("the etcd value of ", AbslView(kind), " ", AbslView(id),
                                            " is not a record this server can read"));
  }
  return message;
}

}  // namespace

absl::Status EtcdLayout::ValidatePrefix(std::string_view prefix) {
  if (prefix.size() < 2 || prefix.size() > 256 || prefix.front() != '/' || prefix.back() != '/') {
    return absl::InvalidArgumentError(
        absl::StrCat("--etcd-prefix '", AbslView(prefix),
                     "': must start and end with '/' (for example /vipu/)"));
  }
  for (char c : prefix) {
    if (c < 0x21 || c > 0x7e) {
      return absl::InvalidArgumentError(absl::StrCat("--etcd-prefix '", AbslView(prefix),
                                                     "': only printable characters, no spaces"));
    }
  }
  return absl::OkStatus();
}

std::string EtcdLayout::FormatValue() const {
  return absl::StrCat(AbslView(kFormatWord), " ", kFormatVersion);
}

std::string EtcdLayout::Key(Table table, std::string_view id) const {
  for (const auto& [t, name] : kTables) {
    if (t == table) return absl::StrCat(prefix_, "state/", AbslView(name), AbslView(id));
  }
  return "";
}

bool EtcdLayout::ParseKey(std::string_view key, Table* table, std::string* id) const {
  const std::string state = StatePrefix();
  if (key.substr(0, state.size()) != state) return false;
  key.remove_prefix(state.size());
  for (const auto& [t, name] : kTables) {
    if (key.substr(0, name.size()) == name && key.size() > name.size()) {
      *table = t;
      *id = std::string(key.substr(name.size()));
      return true;
    }
  }
  return false;
}

absl::Status EtcdLayout::CheckFormat(std::string_view value) const {
  std::vector<absl::string_view> words = absl::StrSplit(AbslView(value), ' ');
  int version = 0;
  if (words.size() != 2 || words[0] != AbslView(kFormatWord) ||
      !absl::SimpleAtoi(words[1], &version)) {
    return absl::FailedPreconditionError(
        absl::StrCat("etcd prefix ", prefix_, " holds data of another format ('", AbslView(value),
                     "'); choose another --etcd-prefix"));
  }
  if (version > kFormatVersion) {
    return absl::FailedPreconditionError(
        absl::StrCat("etcd prefix ", prefix_, " holds state of format version ", version,
                     ", newer than this server's ", kFormatVersion, "; upgrade vipu-server"));
  }
  return absl::OkStatus();
}

std::string EncodeAgent(const fabric::Agent& agent) {
  AgentValue v;
  v.set_host(agent.host);
  v.set_port(agent.port);
  v.set_machine_type(static_cast<int>(agent.machine_type));
  return v.SerializeAsString();
}

absl::StatusOr<fabric::Agent> DecodeAgent(std::string_view id, std::string_view bytes) {
  absl::StatusOr<AgentValue> v = Parse<AgentValue>("agent", id, bytes);
  if (!v.ok()) return v.status();
  fabric::Agent agent;
  agent.id = std::string(id);
  agent.host = v->host();
  agent.port = v->port();
  agent.machine_type = static_cast<fabric::MachineType>(v->machine_type());
  return agent;
}

std::string EncodeCluster(const fabric::Cluster& cluster) {
  ClusterValue v;
  for (const std::string& a : cluster.agent_ids) v.add_agent_ids(a);
  v.set_num_ilds(cluster.num_ilds);
  v.set_topology(static_cast<int>(cluster.topology));
  v.set_cluster_topology(static_cast<int>(cluster.cluster_topology));
  return v.SerializeAsString();
}

absl::StatusOr<fabric::Cluster> DecodeCluster(std::string_view id, std::string_view bytes) {
  absl::StatusOr<ClusterValue> v = Parse<ClusterValue>("cluster", id, bytes);
  if (!v.ok()) return v.status();
  fabric::Cluster cluster;
  cluster.id = std::string(id);
  cluster.agent_ids.assign(v->agent_ids().begin(), v->agent_ids().end());
  cluster.num_ilds = v->num_ilds();
  cluster.topology = static_cast<fabric::IldTopology>(v->topology());
  cluster.cluster_topology = static_cast<fabric::ClusterTopology>(v->cluster_topology());
  return cluster;
}

std::string EncodeAllocation(const fabric::Allocation& allocation) {
  AllocationValue v;
  v.set_cluster_id(allocation.cluster_id);
  for (const std::string& a : allocation.agent_ids) v.add_agent_ids(a);
  return v.SerializeAsString();
}

absl::StatusOr<fabric::Allocation> DecodeAllocation(std::string_view id, std::string_view bytes) {
  absl::StatusOr<AllocationValue> v = Parse<AllocationValue>("allocation", id, bytes);
  if (!v.ok()) return v.status();
  fabric::Allocation allocation;
  allocation.id = std::string(id);
  allocation.cluster_id = v->cluster_id();
  allocation.agent_ids.assign(v->agent_ids().begin(), v->agent_ids().end());
  return allocation;
}

std::string EncodePartition(const PartitionEntry& entry) {
  const fabric::Partition& p = entry.partition;
  PartitionValue v;
  v.set_cluster_id(p.cluster_id);
  v.set_allocation_id(p.allocation_id);
  v.set_owner(p.owner);
  v.set_routing(static_cast<int>(p.routing));
  v.set_gw_routing(static_cast<int>(p.gw_routing));
  v.set_sync_type(static_cast<int>(p.sync_type));
  v.set_num_gcds(p.num_gcds);
  v.set_num_ilds(p.num_ilds);
  v.set_num_replicas(p.num_replicas);
  v.set_reconfigurable(p.reconfigurable);
  v.set_disable_auto_reset(p.disable_auto_reset);
  v.set_relocatable(p.relocatable);
  absl::flat_hash_map<std::string_view, uint32_t> agent_index;
  for (const fabric::PartitionIpu& ipu : p.ipus) {
    auto [it, added] = agent_index.try_emplace(ipu.ipu.agent_id, v.agents_size());
    if (added) v.add_agents(ipu.ipu.agent_id);
    PartitionIpuValue* out = v.add_ipus();
    out->set_agent(it->second);
    out->set_ipu(ipu.ipu.ipu);
    out->set_ild(ipu.ild);
    out->set_ild_routing(ipu.ild_routing);
    out->set_topology_id(ipu.topology_id);
    out->set_routing_id(ipu.routing_id);
  }
  v.set_ready_state(static_cast<int>(p.ready_state));
  v.set_operation_state(static_cast<int>(p.operation_state));
  for (const std::string& e : p.errors) v.add_errors(e);
  v.set_generation(p.generation);
  v.set_max_auto_reset_retries(p.max_auto_reset_retries);
  v.set_auto_reset_retry_count(p.auto_reset_retry_count);
  v.set_last_auto_reset_unix_ms(p.last_auto_reset_unix_ms);
  v.set_created_unix_ms(p.created_unix_ms);
  v.set_updated_unix_ms(p.updated_unix_ms);
  v.set_shared(entry.shared);
  return v.SerializeAsString();
}

absl::StatusOr<PartitionEntry> DecodePartition(std::string_view id, std::string_view bytes) {
  absl::StatusOr<PartitionValue> v = Parse<PartitionValue>("partition", id, bytes);
  if (!v.ok()) return v.status();
  PartitionEntry entry;
  fabric::Partition& p = entry.partition;
  p.id = std::string(id);
  p.cluster_id = v->cluster_id();
  p.allocation_id = v->allocation_id();
  p.owner = v->owner();
  p.routing = static_cast<fabric::RoutingType>(v->routing());
  p.gw_routing = static_cast<fabric::GwRoutingType>(v->gw_routing());
  p.sync_type = static_cast<fabric::SyncType>(v->sync_type());
  p.num_gcds = v->num_gcds();
  p.num_ilds = v->num_ilds();
  p.num_replicas = v->num_replicas();
  p.reconfigurable = v->reconfigurable();
  p.disable_auto_reset = v->disable_auto_reset();
  p.relocatable = v->relocatable();
  p.ipus.reserve(v->ipus_size());
  for (const PartitionIpuValue& in : v->ipus()) {
    if (in.agent() >= static_cast<uint32_t>(v->agents_size())) {
      return absl::DataLossError(absl::StrCat("the etcd value of partition ", AbslView(id),
                                              " names a machine it does not list"));
    }
    fabric::PartitionIpu ipu;
    ipu.ipu.agent_id = v->agents(static_cast<int>(in.agent()));
    ipu.ipu.ipu = in.ipu();
    ipu.ild = in.ild();
    ipu.ild_routing = in.ild_routing();
    ipu.topology_id = in.topology_id();
    ipu.routing_id = in.routing_id();
    p.ipus.push_back(std::move(ipu));
  }
  p.ready_state = static_cast<fabric::ReadyState>(v->ready_state());
  p.operation_state = static_cast<fabric::OperationState>(v->operation_state());
  p.errors.assign(v->errors().begin(), v->errors().end());
  p.generation = v->generation();
  p.max_auto_reset_retries = v->max_auto_reset_retries();
  p.auto_reset_retry_count = v->auto_reset_retry_count();
  p.last_auto_reset_unix_ms = v->last_auto_reset_unix_ms();
  p.created_unix_ms = v->created_unix_ms();
  p.updated_unix_ms = v->updated_unix_ms();
  entry.shared = v->shared();
  return entry;
}

std::string EncodeUser(const UserRecord& user) {
  UserValue v;
  v.set_key_hash(user.key_hash);
  v.set_is_admin(user.is_admin);
  for (const std::string& a : user.allocations) v.add_allocations(a);
  v.set_created_unix_ms(user.created_unix_ms);
  return v.SerializeAsString();
}

absl::StatusOr<UserRecord> DecodeUser(std::string_view id, std::string_view bytes) {
  absl::StatusOr<UserValue> v = Parse<UserValue>("user", id, bytes);
  if (!v.ok()) return v.status();
  UserRecord user;
  user.id = std::string(id);
  user.key_hash = v->key_hash();
  user.is_admin = v->is_admin();
  user.allocations.assign(v->allocations().begin(), v->allocations().end());
  user.created_unix_ms = v->created_unix_ms();
  return user;
}

}  // namespace vipu::storage::etcd
