// The console's snapshot of the pod and its JSON views.
#include "server/console/console_state.h"

#include <algorithm>
#include <cmath>

#include "absl/status/status.h"
#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"
#include "base/json_writer.h"
#include "base/status_macros.h"
#include "fabric/enum_names.h"
#include "fabric/link_topology.h"
#include "fabric/pods.h"
#include "model/ipu_memory.h"
#include "model/prediction_format.h"
#include "model/step_predictor.h"
#include "model/system_spec.h"
#include "model/workload.h"

namespace vipu::server {
namespace {

bool PortDown(const std::map<std::string, AgentView>& agents, const fabric::LinkEnd& end) {
  auto it = agents.find(end.agent_id);
  return it != agents.end() && it->second.health.links_down.count(end.port) > 0;
}

// The allocations a caller may use, and which clusters they are on.
struct Visible {
  std::set<std::string> allocations;
  std::set<std::string> clusters;
};

Visible VisibleTo(const PodSnapshot& s, const Caller& caller) {
  Visible v;
  for (const fabric::Allocation& a : s.allocations) {
    if (!caller.MayUseAllocation(a.id)) continue;
    v.allocations.insert(a.id);
    v.clusters.insert(a.cluster_id);
  }
  if (caller.Unrestricted()) {
    for (const ClusterView& c : s.clusters) v.clusters.insert(c.cluster->id);
  }
  return v;
}

bool MaySee(const PodSnapshot& s, const Caller& caller, const fabric::Partition& p) {
  return caller.MaySee(p, s.shared.count(p.id) > 0);
}

void WriteEnd(JsonWriter& j, const fabric::LinkEnd& end) {
  j.BeginObject()
      .Field("agent", end.agent_id)
      .Field("port", end.port)
      .Field("port_name", fabric::PortName(end.port))
      .Field("ipu", end.ipu)
      .EndObject();
}

void WriteCluster(JsonWriter& j, const PodSnapshot& s, const ClusterView& c,
                  const std::map<fabric::IpuRef, const fabric::Partition*>& holder,
                  const std::set<std::string>& seen) {
  const fabric::ClusterLayout& layout = c.links->layout;
  j.BeginObject()
      .Field("id", c.cluster->id)
      .Field("num_ilds", layout.num_ilds())
      .Field("machines_per_ild", layout.machines_per_ild())
      .Field("topology", fabric::CliName(c.cluster->topology))
      .Field("cluster_topology", fabric::CliName(c.cluster->cluster_topology));
  j.Key("machines").BeginArray();
  const std::vector<std::string>& ids = c.cluster->agent_ids;
  for (uint32_t i = 0; i < ids.size(); ++i) {
    const uint32_t ild = i / layout.machines_per_ild();
    const uint32_t m = i % layout.machines_per_ild();
    auto agent = s.agents.find(ids[i]);
    const AgentView* a = agent == s.agents.end() ? nullptr : &agent->second;
    j.BeginObject()
        .Field("agent", ids[i])
        .Field("ild", ild)
        .Field("position", m)
        .Field("host", a ? a->host : std::string())
        .Field("machine_type", fabric::CliName(a ? a->machine_type : fabric::MachineType::kM2000))
        .Field("registered", a != nullptr && a->registered)
        .Field("up", a != nullptr && a->up);
    j.Key("ipus").BeginArray();
    for (uint32_t slot = 0; slot < fabric::kIpusPerMachine; ++slot) {
      const uint32_t topology_id = m * fabric::kIpusPerMachine + slot;
      const fabric::IpuRef ref = layout.IpuAt(ild, topology_id);
      j.BeginObject().Field("slot", slot).Field("ipu", ref.ipu).Field("topology_id", topology_id);
      auto h = holder.find(ref);
      if (h == holder.end()) {
        j.Key("partition").Null().Field("used", false);
      } else if (seen.count(h->second->id)) {
        j.Field("partition", h->second->id).Field("used", true);
      } else {
        j.Key("partition").Null().Field("used", true);
      }
      const std::string* error = nullptr;
      if (a != nullptr) {
        auto e = a->health.ipu_errors.find(ref.ipu);
        if (e != a->health.ipu_errors.end()) error = &e->second;
      }
      if (error != nullptr) {
        j.Field("error", *error);
      } else {
        j.Key("error").Null();
      }
      j.EndObject();
    }
    j.EndArray().EndObject();
  }
  j.EndArray();
  j.Key("links").BeginArray();
  const std::vector<fabric::Link>& links = c.links->topology.links();
  for (size_t i = 0; i < links.size(); ++i) {
    const fabric::Link& l = links[i];
    j.BeginObject()
        .Field("kind", fabric::LinkKindName(l.kind))
        .Field("name", l.name)
        .Field("ild", l.ild)
        .Field("internal", l.internal)
        .Field("wrap", l.wrap)
        .Field("cables", l.cables)
        .Field("down", c.link_down[i]);
    j.Key("a");
    WriteEnd(j, l.a);
    j.Key("b");
    WriteEnd(j, l.b);
    if (!c.link_owner[i].empty() && seen.count(c.link_owner[i])) {
      j.Field("partition", c.link_owner[i]);
    } else {
      j.Key("partition").Null();
    }
    j.EndObject();
  }
  j.EndArray().EndObject();
}

// The operation as `vipu get partition` prints it: IDLE, CREATING, ... The
// console shows states in the CLI's words, not the wire's (POS_IDLE).
std::string OperationWord(fabric::OperationState s) {
  std::string name = fabric::WireName(s);
  return absl::StartsWith(name, "POS_") ? name.substr(4) : name;
}

void WritePartition(JsonWriter& j, const fabric::Partition& p, bool shared) {
  j.BeginObject()
      .Field("id", p.id)
      .Field("allocation", p.allocation_id)
      .Field("cluster", p.cluster_id)
      .Field("owner", p.owner)
      .Field("shared", shared)
      .Field("size", p.size())
      .Field("num_ilds", p.num_ilds)
      .Field("num_gcds", p.num_gcds)
      .Field("num_replicas", p.num_replicas)
      .Field("routing", fabric::TableName(p.routing))
      .Field("gw_routing", fabric::TableName(p.gw_routing))
      .Field("sync_type", fabric::CliName(p.sync_type))
      .Field("reconfigurable", p.reconfigurable)
      .Field("state", fabric::TableName(p.ready_state))
      .Field("operation_state", OperationWord(p.operation_state))
      .Field("generation", p.generation)
      .Field("auto_reset", !p.disable_auto_reset)
      .Field("auto_reset_retry_count", p.auto_reset_retry_count)
      .Field("max_auto_reset_retries", p.max_auto_reset_retries)
      .Field("last_auto_reset_unix_ms", p.last_auto_reset_unix_ms)
      .Field("created_unix_ms", p.created_unix_ms)
      .Field("updated_unix_ms", p.updated_unix_ms);
  j.Key("errors").BeginArray();
  for (const std::string& e : p.errors) j.String(e);
  j.EndArray();
  j.Key("ipus").BeginArray();
  for (const fabric::PartitionIpu& ipu : p.ipus) {
    j.BeginObject()
        .Field("agent", ipu.ipu.agent_id)
        .Field("ipu", ipu.ipu.ipu)
        .Field("ild", ipu.ild)
        .Field("topology_id", ipu.topology_id)
        .Field("ild_routing", ipu.ild_routing)
        .Field("routing_id", ipu.routing_id)
        .EndObject();
  }
  j.EndArray().EndObject();
}

void WriteCapacity(JsonWriter& j, const PartitionController::AllocationCapacity& c) {
  j.BeginObject()
      .Field("allocation", c.allocation_id)
      .Field("cluster", c.cluster_id)
      .Field("ipus", c.ipus)
      .Field("free_ipus", c.free_ipus)
      .Field("largest", c.largest);
  j.Key("down").BeginArray();
  for (const std::string& d : c.down) j.String(d);
  j.EndArray();
  j.Key("sizes").BeginArray();
  for (const PartitionController::SizeFit& f : c.sizes) {
    j.BeginObject()
        .Field("size", f.size)
        .Field("fits", f.fits)
        .Field("num_ilds", f.num_ilds)
        .Field("why", f.why)
        .EndObject();
  }
  j.EndArray().EndObject();
}

void WriteControlPlane(JsonWriter& j, const ControlPlane& c) {
  j.Key("control_plane").BeginObject();
  if (!c.ha) {
    j.Field("mode", "single").EndObject();
    return;
  }
  j.Field("mode", "ha").Field("role", c.role).Key("leader");
  if (c.leader.empty()) {
    j.Null();
  } else {
    j.String(c.leader);
  }
  j.Field("member", c.member).EndObject();
}

}  // namespace

absl::StatusOr<std::shared_ptr<const PodSnapshot>> CollectSnapshot(
    storage::Store* store, ClusterLinksCache* cluster_links, const AgentRegistry& registry,
    const PartitionController& controller, absl::Time now, const ControlPlane& control_plane) {
  auto s = std::make_shared<PodSnapshot>();
  s->unix_ms = absl::ToUnixMillis(now);
  s->control_plane = control_plane;
  std::vector<std::shared_ptr<const fabric::Cluster>> clusters;
  std::vector<fabric::Agent> agents;
  absl::Status read = store->Read([&](storage::ReadTxn& txn) -> absl::Status {
    ASSIGN_OR_RETURN(clusters, txn.ClusterRefs());
    ASSIGN_OR_RETURN(s->allocations, txn.ListAllocations());
    ASSIGN_OR_RETURN(s->partitions, txn.ListPartitions());
    ASSIGN_OR_RETURN(s->shared, txn.SharedPartitions());
    ASSIGN_OR_RETURN(agents, txn.ListAgents());
    return absl::OkStatus();
  });
  RETURN_IF_ERROR(read);
  for (const fabric::Agent& a : agents) {
    AgentView v;
    v.id = a.id;
    v.host = a.host;
    v.machine_type = a.machine_type;
    s->agents[a.id] = std::move(v);
  }
  // Liveness and health only: the agents' reports are not copied.
  for (AgentStatus& live : registry.Statuses()) {
    auto it = s->agents.find(live.id);
    if (it == s->agents.end()) continue;  // registered but not (yet) in the database
    it->second.registered = true;
    it->second.up = now - live.last_heartbeat < registry.timeout();
    it->second.machine_type = live.machine_type;
    it->second.health = std::move(live.health);
  }
  for (std::shared_ptr<const fabric::Cluster>& cluster : clusters) {
    ClusterView view;
    ASSIGN_OR_RETURN(view.links, cluster_links->LinksOf(cluster));
    view.cluster = std::move(cluster);
    const std::vector<fabric::Link>& all = view.links->topology.links();
    view.link_down.resize(all.size());
    view.link_owner.resize(all.size());
    for (size_t i = 0; i < all.size(); ++i) {
      view.link_down[i] = PortDown(s->agents, all[i].a) || PortDown(s->agents, all[i].b);
    }
    for (const fabric::Partition& p : s->partitions) {
      if (p.cluster_id != view.cluster->id) continue;
      for (const fabric::Link* l : fabric::PartitionLinks(view.links->topology, p)) {
        view.link_owner[static_cast<size_t>(l - all.data())] = p.id;
      }
    }
    s->clusters.push_back(std::move(view));
  }
  ASSIGN_OR_RETURN(s->capacity, controller.Capacity());
  return std::shared_ptr<const PodSnapshot>(std::move(s));
}

std::map<std::string, Counts> CountsOf(const PodSnapshot& s) {
  std::map<std::string, Counts> out;
  std::map<std::string, std::string> allocation_of;  // agent -> allocation
  for (const fabric::Allocation& a : s.allocations) {
    out[a.id];
    for (const std::string& agent : a.agent_ids) allocation_of[agent] = a.id;
  }
  for (const fabric::Partition& p : s.partitions) {
    Counts& c = out[p.allocation_id];
    ++c.partitions;
    c.ipus_in_use += p.size();
  }
  auto fault = [&](const std::string& agent) {
    auto it = allocation_of.find(agent);
    if (it != allocation_of.end()) ++out[it->second].faults;
  };
  for (const ClusterView& c : s.clusters) {
    for (const std::string& agent : c.cluster->agent_ids) {
      auto a = s.agents.find(agent);
      if (a == s.agents.end()) continue;
      if (!a->second.up) fault(agent);
      for (size_t i = 0; i < a->second.health.ipu_errors.size(); ++i) fault(agent);
    }
    const std::vector<fabric::Link>& links = c.links->topology.links();
    for (size_t i = 0; i < links.size(); ++i) {
      if (c.link_down[i]) fault(links[i].a.agent_id);
    }
  }
  return out;
}

std::string StateJson(const PodSnapshot& s, const Caller& caller, uint64_t version,
                      bool with_time) {
  const Visible visible = VisibleTo(s, caller);
  std::set<std::string> seen;
  std::map<fabric::IpuRef, const fabric::Partition*> holder;
  for (const fabric::Partition& p : s.partitions) {
    for (const fabric::PartitionIpu& ipu : p.ipus) holder[ipu.ipu] = &p;
    if (MaySee(s, caller, p)) seen.insert(p.id);
  }
  JsonWriter j;
  j.BeginObject().Field("version", version);
  if (with_time) j.Field("unix_ms", s.unix_ms);
  j.Key("clusters").BeginArray();
  for (const ClusterView& c : s.clusters) {
    if (visible.clusters.count(c.cluster->id)) WriteCluster(j, s, c, holder, seen);
  }
  j.EndArray();
  j.Key("allocations").BeginArray();
  for (const fabric::Allocation& a : s.allocations) {
    if (!visible.allocations.count(a.id)) continue;
    j.BeginObject().Field("id", a.id).Field("cluster", a.cluster_id);
    j.Key("agents").BeginArray();
    for (const std::string& agent : a.agent_ids) j.String(agent);
    j.EndArray().EndObject();
  }
  j.EndArray();
  j.Key("partitions").BeginArray();
  for (const fabric::Partition& p : s.partitions) {
    if (seen.count(p.id)) WritePartition(j, p, s.shared.count(p.id) > 0);
  }
  j.EndArray();
  j.Key("capacity").BeginArray();
  for (const PartitionController::AllocationCapacity& c : s.capacity) {
    if (visible.allocations.count(c.allocation_id)) WriteCapacity(j, c);
  }
  j.EndArray();
  WriteControlPlane(j, s.control_plane);
  j.EndObject();
  return j.Take();
}

std::string HistoryJson(const std::vector<Sample>& samples, const Caller& caller) {
  JsonWriter j;
  j.BeginObject().Key("samples").BeginArray();
  for (const Sample& sample : samples) {
    Counts sum;
    for (const auto& [allocation, c] : sample.by_allocation) {
      if (!caller.MayUseAllocation(allocation)) continue;
      sum.ipus_in_use += c.ipus_in_use;
      sum.partitions += c.partitions;
      sum.faults += c.faults;
    }
    j.BeginObject()
        .Field("unix_ms", sample.unix_ms)
        .Field("ipus_in_use", sum.ipus_in_use)
        .Field("partitions", sum.partitions)
        .Field("faults", sum.faults)
        .EndObject();
  }
  j.EndArray().EndObject();
  return j.Take();
}

std::string BertLargePredictionJson(const fabric::Partition& partition,
                                    const fabric::Cluster& cluster,
                                    fabric::MachineType machine_type) {
  JsonWriter j;
  j.BeginObject().Field("model", "bert-large");
  const uint32_t size = partition.size();
  fabric::PodSpec pod;
  pod.name = absl::StrCat("partition ", partition.id);
  pod.machine_type = machine_type;
  pod.num_machines = std::max<uint32_t>(1, size / fabric::kIpusPerMachine);
  pod.num_ilds = std::max<uint32_t>(1, partition.num_ilds);
  pod.topology = cluster.topology;
  pod.cluster_topology = cluster.cluster_topology;
  model::SystemSpec system = model::SystemSpecFromPod(pod);
  // A partition smaller than a machine still has only its own IPUs.
  if (size < fabric::kIpusPerMachine) {
    system.num_ipus = size;
    system.ipus_per_ild = size;
  }
  auto workload = model::WorkloadPreset("bert-large");
  if (!workload.ok()) {
    j.Field("error", std::string(workload.status().message())).EndObject();
    return j.Take();
  }
  workload->micro_batch = 8;
  workload->grad_accum = 512;
  workload->ipus_per_replica = std::min<uint32_t>(4, std::max<uint32_t>(1, size));
  workload->replicas = std::max<uint32_t>(1, size / workload->ipus_per_replica);
  if (workload->ipus_per_replica == 4) workload->layers_per_ipu = {3, 7, 7, 7};
  workload->optimizer = model::Optimizer::kLamb;
  workload->replicated_tensor_sharding = true;
  workload->optimizer_state_offchip = true;
  j.Field("system", fabric::CliName(machine_type))
      .Field("ipus", size)
      .Field("ilds", pod.num_ilds)
      .Field("replicas", workload->replicas)
      .Field("ipus_per_replica", workload->ipus_per_replica)
      .Field("micro_batch", workload->micro_batch)
      .Field("grad_accum", workload->grad_accum);
  auto p = model::PredictStep(*workload, system);
  if (!p.ok()) {
    j.Field("error", std::string(p.status().message())).EndObject();
    return j.Take();
  }
  const model::MemoryEstimate memory = model::EstimateMemory(*workload, system, *p);
  const absl::Status fits = model::CheckMemoryFits(memory);
  if (fits.ok()) {
    j.Field("step_time_s", p->step_time_s)
        .Field("samples_per_sec", p->samples_per_sec)
        .Field("tokens_per_sec", p->tokens_per_sec)
        .Field("samples_per_step", p->samples_per_step)
        .Field("communication_fraction", p->communication_fraction)
        .Field("model_flops_utilization", p->model_flops_utilization)
        .Field("host_bound", p->host_bound);
  }
  // Whole bytes: the writer's doubles keep 6 digits, too few for 900 MB.
  j.Key("memory").BeginObject().Field("fits", fits.ok());
  if (!memory.ipus.empty()) {
    const model::IpuMemory& fullest = memory.ipus[memory.fullest];
    j.Field("fullest_ipu", fullest.ipu).Field("needed_bytes", std::llround(fullest.TotalBytes()));
  }
  j.Field("capacity_bytes", std::llround(memory.capacity_bytes)).EndObject();
  // A throughput for a layout the IPUs could not load would be no answer.
  if (!fits.ok()) j.Field("error", std::string(fits.message()));
  j.EndObject();
  return j.Take();
}

}  // namespace vipu::server
