// SimulatedMachine: one IPU-Machine's attributes, generation-fenced partitions, links and faults.
#include "agents/simulated_machine.h"

#include <algorithm>
#include <set>
#include <utility>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "absl/strings/str_join.h"
#include "absl/time/time.h"
#include "base/absl_view.h"
#include "base/status_macros.h"
#include "spdlog/spdlog.h"
#include "wire/attribute_names.h"

namespace vipu::agents {
namespace {

// Versions reported by a machine; values seen on IPU-M2000s in the field.
// Virm version is ours.
constexpr char kDriverVersion[] = "1.0.58";
constexpr char kFirmwareMajor[] = "2";
constexpr char kFirmwareMinor[] = "4";
constexpr char kFirmwarePatch[] = "4";
constexpr char kRuntimeVersion[] = "1.0.48";
constexpr char kGwswVersion[] = "2.0.5";
constexpr char kIpuofServerVersion[] = "v1.3.3";
constexpr char kHdfVersion[] = "1.0.1";
constexpr char kHdfHash[] = "1275acb46311f7a46e05f721d73d180c44975e7e";

#ifndef VIPU_VERSION
#define VIPU_VERSION "dev"
#endif

std::string IpuList(const std::vector<uint32_t>& ipus) { return absl::StrJoin(ipus, ","); }

std::vector<uint32_t> Sorted(std::vector<uint32_t> ipus) {
  std::sort(ipus.begin(), ipus.end());
  return ipus;
}

// The checks of a configuration that need no state: ids, IPU and port
// ranges and repeats, sizes, members.
absl::Status ValidateConfig(const PartitionConfig& config) {
  if (config.partition_id.empty()) {
    return absl::InvalidArgumentError("partition id: must not be empty");
  }
  if (config.ipus.empty()) {
    return absl::InvalidArgumentError("ipus: must name at least one IPU");
  }
  std::set<uint32_t> seen;
  for (uint32_t ipu : config.ipus) {
    if (ipu >= fabric::kIpusPerMachine) {
      return absl::InvalidArgumentError(
          absl::StrCat("ipus: IPU index must be 0..", fabric::kIpusPerMachine - 1, ", got ", ipu));
    }
    if (!seen.insert(ipu).second) {
      return absl::InvalidArgumentError(absl::StrCat("ipus: IPU ", ipu, " is listed twice"));
    }
  }
  if (config.partition_size != 0 && config.partition_size < config.ipus.size()) {
    return absl::InvalidArgumentError(
        absl::StrCat("partition size: must be at least the ", config.ipus.size(),
                     " IPUs configured here, got ", config.partition_size));
  }
  if (config.num_ilds != 0 &&
      ((config.num_ilds & (config.num_ilds - 1)) != 0 ||
       (config.partition_size != 0 && config.partition_size % config.num_ilds != 0))) {
    return absl::InvalidArgumentError(
        absl::StrCat("num_ilds: must be a power of two dividing the partition size ",
                     config.partition_size, ", got ", config.num_ilds));
  }
  std::set<uint32_t> ports;
  for (uint32_t port : config.link_ports) {
    if (port >= fabric::kPortsPerMachine) {
      return absl::InvalidArgumentError(absl::StrCat("link_ports: port must be 0..",
                                                     fabric::kPortsPerMachine - 1, ", got ", port));
    }
    if (!ports.insert(port).second) {
      return absl::InvalidArgumentError(
          absl::StrCat("link_ports: port ", port, " is listed twice"));
    }
  }
  for (const PartitionMember& m : config.members) {
    if (m.agent_id.empty() || m.host.empty() || m.port == 0 || m.port > 65535) {
      return absl::InvalidArgumentError(
          absl::StrCat("members: each needs an agent id, a host and a port 1..65535, got '",
                       m.agent_id, "' at '", m.host, ":", m.port, "'"));
    }
  }

  return absl::OkStatus();
}

}  // namespace

bool operator==(const PartitionConfig& a, const PartitionConfig& b) {
  return a.partition_id == b.partition_id && a.generation == b.generation &&
         Sorted(a.ipus) == Sorted(b.ipus) && a.routing == b.routing &&
         a.gw_routing == b.gw_routing && a.sync_type == b.sync_type &&
         a.partition_size == b.partition_size && a.num_ilds == b.num_ilds &&
         Sorted(a.link_ports) == Sorted(b.link_ports);
}

absl::Status ValidateTopology(const MachineTopology& t) {
  if (t.num_ilds == 0) return absl::InvalidArgumentError("num_ilds: must be at least 1, got 0");
  if (t.ild >= t.num_ilds) {
    return absl::InvalidArgumentError(
        absl::StrCat("ild: must be below num_ilds ", t.num_ilds, ", got ", t.ild));
  }
  if (t.machines_per_ild == 0) {
    return absl::InvalidArgumentError("machines_per_ild: must be at least 1, got 0");
  }
  if (t.machine_index >= t.machines_per_ild) {
    return absl::InvalidArgumentError(absl::StrCat("machine_index: must be below machines_per_ild ",
                                                   t.machines_per_ild, ", got ", t.machine_index));
  }
  std::set<uint32_t> seen;
  for (const PortInfo& p : t.ports) {
    if (p.port >= fabric::kPortsPerMachine) {
      return absl::InvalidArgumentError(
          absl::StrCat("ports.port: must be 0..", fabric::kPortsPerMachine - 1, ", got ", p.port));
    }
    if (!seen.insert(p.port).second) {
      return absl::InvalidArgumentError(absl::StrCat("ports.port: port ", p.port, " listed twice"));
    }
    if (p.kind != fabric::LinkKind::kIpuLink && p.kind != fabric::LinkKind::kSyncLink &&
        p.kind != fabric::LinkKind::kGwLink) {
      return absl::InvalidArgumentError(
          absl::StrCat("ports.kind: port ", p.port, " has an undefined link kind"));
    }
    if (p.name.empty()) {
      return absl::InvalidArgumentError(absl::StrCat("ports.name: port ", p.port, " has no name"));
    }
    if (p.local_ipu >= fabric::kIpusPerMachine) {
      return absl::InvalidArgumentError(absl::StrCat("ports.local_ipu: must be 0..",
                                                     fabric::kIpusPerMachine - 1, ", got ",
                                                     p.local_ipu, " on port ", p.port));
    }
    if (!p.internal && p.peer_agent_id.empty()) {
      return absl::InvalidArgumentError(
          absl::StrCat("ports.peer_agent_id: port ", p.port, " is external and names no peer"));
    }
    if (p.peer_port >= fabric::kPortsPerMachine) {
      return absl::InvalidArgumentError(absl::StrCat("ports.peer_port: must be 0..",
                                                     fabric::kPortsPerMachine - 1, ", got ",
                                                     p.peer_port, " on port ", p.port));
    }
  }
  return absl::OkStatus();
}

uint64_t StableHash(std::string_view text) {
  // FNV-1a, 64 bit.
  uint64_t hash = 14695981039346656037ull;
  for (unsigned char c : text) {
    hash ^= c;
    hash *= 1099511628211ull;
  }
  return hash;
}

SimulatedMachine::SimulatedMachine(std::string agent_id, fabric::MachineType type)
    : agent_id_(std::move(agent_id)), type_(type) {
  const bool bow = type_ == fabric::MachineType::kBow;
  const uint64_t hash = StableHash(agent_id_);
  // Serial numbers shaped like the field's: machine "8203921-0007", IPU
  // boards "0024.0002.8203921".
  const uint64_t machine_number = 8200000 + hash % 100000;
  const uint64_t batch = (hash / 100000) % 10000;
  const uint64_t lot = (hash >> 40) % 10000;
  board_serial_ = absl::StrFormat("%d-%04d", machine_number, batch);

  const std::string board_type = bow ? "Bow-2000" : "M2000";
  const std::string clock = bow ? "1850MHz" : "1330MHz";
  const std::string firmware =
      absl::StrCat(kFirmwareMajor, ".", kFirmwareMinor, ".", kFirmwarePatch);

  details_ = {
      {wire::kMachinePlatform, bow ? "bow-p2" : "ipum-p2"},
      {wire::kMachineManufacturer, "Graphcore"},
      {wire::kMachineDiscoveryMode, "DM_GCDA"},
      {wire::kMachineVirmVersion, VIPU_VERSION},
      {wire::kMachineRuntimeVersion, kRuntimeVersion},
      {wire::kMachineBoardSerialNumber, board_serial_},
      {wire::kMachinePartNumber, bow ? "GC-BOW2-00 Rev. A" : "GC-ADA2-00-ES1 Rev. C"},
      {wire::kMachineGwswVersion, kGwswVersion},
      {wire::kMachineIpuofServerVersion, kIpuofServerVersion},
      {wire::kMachineHdfVersion, kHdfVersion},
      {wire::kMachineHdfHash, kHdfHash},
      {wire::kMachineNumIpus, absl::StrCat(fabric::kIpusPerMachine)},
  };

  for (uint32_t i = 0; i < fabric::kIpusPerMachine; ++i) {
    IpuInfo ipu;
    ipu.index = i;
    // Two IPUs per board; the field shows IPU 0 as board ipu index 1.
    const uint32_t board = i / 2 + 1;
    const uint32_t board_ipu_index = 1 - i % 2;
    // Sorted by name, as `vipu list ipu-attrs` lists them.
    ipu.attributes = {
        {wire::kIpuBoardIpuIndex, absl::StrCat(board_ipu_index)},
        {wire::kIpuBoardSerialNumber, absl::StrFormat("%04d.%04d.%d", lot, board, machine_number)},
        {wire::kIpuBoardType, board_type},
        {wire::kIpuBoardVariant, board_type},
        {wire::kIpuClock, clock},
        {wire::kIpuDriverVersion, kDriverVersion},
        {wire::kIpuFirmwareMajorVersion, kFirmwareMajor},
        {wire::kIpuFirmwareMinorVersion, kFirmwareMinor},
        {wire::kIpuFirmwarePatchVersion, kFirmwarePatch},
        {wire::kIpuFirmwareVersion, firmware},
        {wire::kIpuHexoptActiveSize, "0"},
        {wire::kIpuId, absl::StrCat(i)},
        {wire::kIpuArchitecture, "ipu2"},
        {wire::kIpuErrorState, "no errors"},
        {wire::kIpuLinkSpeed, "16 GT/s"},
        {wire::kIpuLinkWidth, "8"},
        {wire::kIpuNumaNode, "0"},
        {wire::kIpuPciId, absl::StrFormat("0000:%02x:00.0", 0x10 * (i + 1))},
        {wire::kIpuRemoteBuffersSupported, "1"},
        {wire::kIpuTarget, "Fabric"},
    };
    ipus_.push_back(std::move(ipu));
  }
}

absl::Status SimulatedMachine::Configure(const PartitionConfig& config) {
  RETURN_IF_ERROR(ValidateConfig(config));
  const std::set<uint32_t> seen(config.ipus.begin(), config.ipus.end());
  const std::set<uint32_t> ports(config.link_ports.begin(), config.link_ports.end());

  vipu::MutexLock lock(&mu_);
  auto it = held_.find(config.partition_id);
  if (it != held_.end()) {
    const uint64_t held_generation = it->second.config.generation;
    if (config.generation < held_generation) {
      return absl::FailedPreconditionError(
          absl::StrCat("partition ", config.partition_id, ": stale generation ", config.generation,
                       " < ", held_generation, " held by agent ", agent_id_));
    }
    if (config.generation == held_generation) {
      if (config == it->second.config) {
        it->second.config.members = config.members;  // addresses may have moved
        return absl::OkStatus();
      }
      // One generation names one configuration; two different ones mean the
      // caller lost track of the partition.
      return absl::FailedPreconditionError(
          absl::StrCat("partition ", config.partition_id, ": generation ", config.generation,
                       " is already configured differently on agent ", agent_id_));
    }
  }
  RETURN_IF_ERROR(CheckNotHeldByOthers(config.partition_id, seen, ports));
  PartitionConfig stored = config;
  stored.ipus = Sorted(stored.ipus);
  stored.link_ports = Sorted(stored.link_ports);
  if (std::string fault = FaultOf(stored); !fault.empty()) {
    return absl::FailedPreconditionError(fault);
  }
  spdlog::info("agent {}: configured partition {} generation {} on IPUs [{}]{}", agent_id_,
               config.partition_id, config.generation, IpuList(stored.ipus),
               it == held_.end() ? "" : " (replacing older generation)");
  held_[config.partition_id] = Holding{std::move(stored), 0};
  return absl::OkStatus();
}

absl::Status SimulatedMachine::CheckNotHeldByOthers(const std::string& partition_id,
                                                    const std::set<uint32_t>& seen,
                                                    const std::set<uint32_t>& ports) const {
  for (const auto& [other_id, other] : held_) {
    if (other_id == partition_id) continue;
    for (uint32_t ipu : other.config.ipus) {
      if (seen.count(ipu)) {
        return absl::FailedPreconditionError(absl::StrCat(
            "ipus: IPU ", ipu, " of agent ", agent_id_, " is held by partition ", other_id));
      }
    }
    // A partition's traffic never crosses another's links.
    for (uint32_t port : other.config.link_ports) {
      if (ports.count(port)) {
        return absl::FailedPreconditionError(
            absl::StrCat("link_ports: port ", port, " (", fabric::PortName(port), ") of agent ",
                         agent_id_, " is owned by partition ", other_id));
      }
    }
  }
  return absl::OkStatus();
}

absl::Status SimulatedMachine::Reset(std::string_view partition_id, uint64_t generation) {
  if (partition_id.empty()) return absl::InvalidArgumentError("partition id: must not be empty");
  vipu::MutexLock lock(&mu_);
  auto it = held_.find(partition_id);
  if (it == held_.end()) {
    return absl::NotFoundError(
        absl::StrCat("partition ", AbslView(partition_id), " is not held by agent ", agent_id_));
  }
  Holding& holding = it->second;
  if (generation < holding.config.generation) {
    return absl::FailedPreconditionError(
        absl::StrCat("partition ", AbslView(partition_id), ": stale generation ", generation, " < ",
                     holding.config.generation, " held by agent ", agent_id_));
  }
  if (std::string fault = FaultOf(holding.config); !fault.empty()) {
    return absl::FailedPreconditionError(fault);
  }
  holding.config.generation = generation;
  ++holding.resets;
  spdlog::info("agent {}: reset partition {} generation {} on IPUs [{}]", agent_id_, partition_id,
               generation, IpuList(holding.config.ipus));
  return absl::OkStatus();
}

absl::Status SimulatedMachine::Release(std::string_view partition_id, uint64_t generation) {
  if (partition_id.empty()) return absl::InvalidArgumentError("partition id: must not be empty");
  vipu::MutexLock lock(&mu_);
  auto it = held_.find(partition_id);
  if (it == held_.end()) return absl::OkStatus();
  if (generation < it->second.config.generation) {
    return absl::FailedPreconditionError(
        absl::StrCat("partition ", AbslView(partition_id), ": stale generation ", generation, " < ",
                     it->second.config.generation, " held by agent ", agent_id_));
  }
  spdlog::info("agent {}: released partition {} generation {} from IPUs [{}]", agent_id_,
               partition_id, generation, IpuList(it->second.config.ipus));
  held_.erase(it);
  return absl::OkStatus();
}

std::vector<fabric::HeldPartition> SimulatedMachine::Held() const {
  vipu::MutexLock lock(&mu_);
  std::vector<fabric::HeldPartition> out;
  out.reserve(held_.size());
  for (const auto& [id, holding] : held_) {
    out.push_back({id, holding.config.generation, holding.config.ipus});
  }
  return out;
}

absl::StatusOr<PartitionConfig> SimulatedMachine::Config(std::string_view partition_id) const {
  vipu::MutexLock lock(&mu_);
  auto it = held_.find(partition_id);
  if (it == held_.end()) {
    return absl::NotFoundError(
        absl::StrCat("partition ", AbslView(partition_id), " is not held by agent ", agent_id_));
  }
  return it->second.config;
}

uint32_t SimulatedMachine::ResetCountForTesting(std::string_view partition_id) const {
  vipu::MutexLock lock(&mu_);
  auto it = held_.find(partition_id);
  return it == held_.end() ? 0 : it->second.resets;
}

// ---- Topology and health ----

absl::Status SimulatedMachine::SetTopology(MachineTopology topology) {
  RETURN_IF_ERROR(ValidateTopology(topology));
  std::sort(topology.ports.begin(), topology.ports.end(),
            [](const PortInfo& a, const PortInfo& b) { return a.port < b.port; });
  vipu::MutexLock lock(&mu_);
  spdlog::info("agent {}: cluster {} ILD {} machine {} of {}, {} ports", agent_id_,
               topology.cluster_id, topology.ild, topology.machine_index, topology.machines_per_ild,
               topology.ports.size());
  topology_ = std::move(topology);
  return absl::OkStatus();
}

std::optional<MachineTopology> SimulatedMachine::topology() const {
  vipu::MutexLock lock(&mu_);
  return topology_;
}

absl::StatusOr<std::string> SimulatedMachine::InjectIpuError(uint32_t ipu) {
  if (ipu >= fabric::kIpusPerMachine) {
    return absl::InvalidArgumentError(
        absl::StrCat("ipu: must be 0..", fabric::kIpusPerMachine - 1, ", got ", ipu));
  }
  vipu::MutexLock lock(&mu_);
  ipu_errors_[ipu] = "injected fault";
  std::string description = absl::StrCat("agent ", agent_id_, ": IPU ", ipu, " error");
  spdlog::warn("{}", description);
  return description;
}

absl::StatusOr<std::string> SimulatedMachine::InjectLinkDown(uint32_t port) {
  vipu::MutexLock lock(&mu_);
  if (!topology_) {
    return absl::FailedPreconditionError(
        absl::StrCat("link: agent ", agent_id_, " has no topology yet (it is not in a cluster)"));
  }
  const PortInfo* info = nullptr;
  for (const PortInfo& p : topology_->ports) {
    if (p.port == port) info = &p;
  }
  if (info == nullptr) {
    return absl::InvalidArgumentError(absl::StrCat("link: agent ", agent_id_,
                                                   " has no link on port ", port, " (",
                                                   fabric::PortName(port), ")"));
  }
  ports_down_[port] = true;
  ++port_errors_[port];
  std::string description = absl::StrCat(
      "agent ", agent_id_, ": ", fabric::LinkKindName(info->kind), " ", info->name, " down");
  spdlog::warn("{}", description);
  return description;
}

std::string SimulatedMachine::Hang(std::chrono::milliseconds duration) {
  vipu::MutexLock lock(&mu_);
  hang_ = true;
  hang_until_ = duration.count() == 0 ? std::chrono::steady_clock::time_point::max()
                                      : std::chrono::steady_clock::now() + duration;
  std::string description =
      duration.count() == 0
          ? absl::StrCat("agent ", agent_id_, ": hangs until cleared")
          : absl::StrCat("agent ", agent_id_, ": hangs for ", duration.count(), " ms");
  spdlog::warn("{}", description);
  return description;
}

std::string SimulatedMachine::MarkCrashed() {
  crashed_.store(true);
  std::string description = absl::StrCat("agent ", agent_id_, ": crashed");
  spdlog::error("{}", description);
  return description;
}

std::string SimulatedMachine::ClearFaults() {
  {
    vipu::MutexLock lock(&mu_);
    ipu_errors_.clear();
    ports_down_.clear();
    hang_ = false;
  }
  std::string description = absl::StrCat("agent ", agent_id_, ": faults cleared");
  spdlog::info("{}", description);
  return description;
}

std::string SimulatedMachine::LosePartitions() {
  std::vector<std::string> lost;
  {
    vipu::MutexLock lock(&mu_);
    for (const auto& [id, holding] : held_) lost.push_back(id);
    held_.clear();
  }
  std::string description =
      lost.empty() ? absl::StrCat("agent ", agent_id_, ": held no partition to lose")
                   : absl::StrCat("agent ", agent_id_, ": lost partitions ",
                                  absl::StrJoin(lost, ", "), " without telling the server");
  spdlog::warn("{}", description);
  return description;
}

bool SimulatedMachine::HungLocked(std::chrono::steady_clock::time_point now) const {
  return hang_ && now < hang_until_;
}

bool SimulatedMachine::hung() const {
  vipu::MutexLock lock(&mu_);
  return HungLocked(std::chrono::steady_clock::now());
}

bool SimulatedMachine::crashed() const { return crashed_.load(); }

bool SimulatedMachine::AwaitNotHung(std::chrono::steady_clock::time_point deadline) const {
  vipu::MutexLock lock(&mu_);
  for (;;) {
    const auto now = std::chrono::steady_clock::now();
    if (!HungLocked(now)) return true;
    if (now >= deadline) return false;
    mu_.AwaitWithTimeout(absl::Condition(this, &SimulatedMachine::HangCleared),
                         absl::FromChrono(std::min(deadline, hang_until_) - now));
  }
}

std::vector<IpuHealth> SimulatedMachine::IpuHealthReport() const {
  vipu::MutexLock lock(&mu_);
  std::vector<IpuHealth> out;
  for (uint32_t i = 0; i < fabric::kIpusPerMachine; ++i) {
    auto it = ipu_errors_.find(i);
    out.push_back(it == ipu_errors_.end() ? IpuHealth{i, true, ""}
                                          : IpuHealth{i, false, it->second});
  }
  return out;
}

std::vector<PortHealth> SimulatedMachine::PortHealthReport() const {
  vipu::MutexLock lock(&mu_);
  std::vector<PortHealth> out;
  if (!topology_) return out;
  for (const PortInfo& p : topology_->ports) {
    PortHealth h;
    h.info = p;
    h.trained = !ports_down_.count(p.port);
    auto e = port_errors_.find(p.port);
    h.error_count = e == port_errors_.end() ? 0 : e->second;
    out.push_back(std::move(h));
  }
  return out;
}

std::string SimulatedMachine::FaultOf(const PartitionConfig& config) const {
  for (uint32_t ipu : config.ipus) {
    auto it = ipu_errors_.find(ipu);
    if (it != ipu_errors_.end()) {
      return absl::StrCat("agent ", agent_id_, ": IPU ", ipu, " error (", it->second, ")");
    }
  }
  for (uint32_t port : config.link_ports) {
    if (!ports_down_.count(port)) continue;
    std::string name = fabric::PortName(port);
    fabric::LinkKind kind = fabric::LinkKind::kUndefined;
    if (topology_) {
      for (const PortInfo& p : topology_->ports) {
        if (p.port == port) {
          name = p.name;
          kind = p.kind;
        }
      }
    }
    return absl::StrCat("agent ", agent_id_, ": ", fabric::LinkKindName(kind), " ", name, " down");
  }
  return "";
}

absl::Status SimulatedMachine::CheckPartition(std::string_view partition_id,
                                              uint64_t generation) const {
  if (partition_id.empty()) return absl::InvalidArgumentError("partition_id: must not be empty");
  if (crashed()) {
    return absl::UnavailableError(absl::StrCat("agent ", agent_id_, ": crashed"));
  }
  vipu::MutexLock lock(&mu_);
  auto it = held_.find(partition_id);
  if (it == held_.end()) {
    return absl::NotFoundError(
        absl::StrCat("partition ", AbslView(partition_id), " is not held by agent ", agent_id_));
  }
  const PartitionConfig& config = it->second.config;
  if (generation != 0 && generation != config.generation) {
    return absl::FailedPreconditionError(
        absl::StrCat("generation: agent ", agent_id_, " holds partition ", AbslView(partition_id),
                     " at generation ", config.generation, ", got ", generation));
  }
  if (std::string fault = FaultOf(config); !fault.empty()) {
    return absl::FailedPreconditionError(fault);
  }
  return absl::OkStatus();
}

}  // namespace vipu::agents
