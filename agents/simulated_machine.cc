#include "agents/simulated_machine.h"

#include <algorithm>
#include <set>
#include <utility>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "absl/strings/str_join.h"
#include "spdlog/spdlog.h"

namespace vipu::agents {
namespace {

// Debian's abseil has its own string_view, distinct from std::string_view.
absl::string_view A(std::string_view s) { return absl::string_view(s.data(), s.size()); }

// Versions reported by a machine; values seen on IPU-M2000s in the field
// (vipu-spec.md 3.1). Virm version is ours.
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

}  // namespace

bool operator==(const PartitionConfig& a, const PartitionConfig& b) {
  return a.partition_id == b.partition_id && a.generation == b.generation &&
         Sorted(a.ipus) == Sorted(b.ipus) && a.routing == b.routing &&
         a.gw_routing == b.gw_routing && a.sync_type == b.sync_type &&
         a.partition_size == b.partition_size;
}

absl::StatusOr<fabric::MachineType> ParseMachineType(std::string_view name) {
  if (name == "m2000") return fabric::MachineType::kM2000;
  if (name == "bow") return fabric::MachineType::kBow;
  return absl::InvalidArgumentError(
      absl::StrCat("machine type: must be m2000 or bow, got '", A(name), "'"));
}

std::string MachineTypeName(fabric::MachineType type) {
  return type == fabric::MachineType::kBow ? "bow" : "m2000";
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
      {"Platform", bow ? "bow-p2" : "ipum-p2"},
      {"Manufacturer", "Graphcore"},
      {"Discovery Mode", "DM_GCDA"},
      {"Virm version", VIPU_VERSION},
      {"Runtime version", kRuntimeVersion},
      {"Board serial number", board_serial_},
      {"Part number", bow ? "GC-BOW2-00 Rev. A" : "GC-ADA2-00-ES1 Rev. C"},
      {"GWSW Version", kGwswVersion},
      {"IPUoF server version", kIpuofServerVersion},
      {"HDF Version", kHdfVersion},
      {"HDF Hash", kHdfHash},
      {"Num of IPUs", absl::StrCat(fabric::kIpusPerMachine)},
  };

  for (uint32_t i = 0; i < fabric::kIpusPerMachine; ++i) {
    IpuInfo ipu;
    ipu.index = i;
    // Two IPUs per board; the field shows IPU 0 as board ipu index 1.
    const uint32_t board = i / 2 + 1;
    const uint32_t board_ipu_index = 1 - i % 2;
    // Sorted by name, as `vipu list ipu-attrs` lists them.
    ipu.attributes = {
        {"board ipu index", absl::StrCat(board_ipu_index)},
        {"board serial number", absl::StrFormat("%04d.%04d.%d", lot, board, machine_number)},
        {"board type", board_type},
        {"board variant", board_type},
        {"clock", clock},
        {"driver version", kDriverVersion},
        {"firmware major version", kFirmwareMajor},
        {"firmware minor version", kFirmwareMinor},
        {"firmware patch version", kFirmwarePatch},
        {"firmware version", firmware},
        {"hexopt active size (bytes)", "0"},
        {"id", absl::StrCat(i)},
        {"ipu architecture", "ipu2"},
        {"ipu error state", "no errors"},
        {"link speed", "16 GT/s"},
        {"link width", "8"},
        {"numa node", "0"},
        {"pci id", absl::StrFormat("0000:%02x:00.0", 0x10 * (i + 1))},
        {"remote buffers supported", "1"},
        {"target", "Fabric"},
    };
    ipus_.push_back(std::move(ipu));
  }
}

absl::Status SimulatedMachine::Configure(const PartitionConfig& config) {
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

  std::lock_guard<std::mutex> lock(mu_);
  auto it = held_.find(config.partition_id);
  if (it != held_.end()) {
    const uint64_t held_generation = it->second.config.generation;
    if (config.generation < held_generation) {
      return absl::FailedPreconditionError(
          absl::StrCat("partition ", config.partition_id, ": stale generation ", config.generation,
                       " < ", held_generation, " held by agent ", agent_id_));
    }
    if (config.generation == held_generation) {
      if (config == it->second.config) return absl::OkStatus();
      // One generation names one configuration; two different ones mean the
      // caller lost track of the partition.
      return absl::FailedPreconditionError(
          absl::StrCat("partition ", config.partition_id, ": generation ", config.generation,
                       " is already configured differently on agent ", agent_id_));
    }
  }
  for (const auto& [other_id, other] : held_) {
    if (other_id == config.partition_id) continue;
    for (uint32_t ipu : other.config.ipus) {
      if (seen.count(ipu)) {
        return absl::FailedPreconditionError(absl::StrCat(
            "ipus: IPU ", ipu, " of agent ", agent_id_, " is held by partition ", other_id));
      }
    }
  }
  PartitionConfig stored = config;
  stored.ipus = Sorted(stored.ipus);
  spdlog::info("agent {}: configured partition {} generation {} on IPUs [{}]{}", agent_id_,
               config.partition_id, config.generation, IpuList(stored.ipus),
               it == held_.end() ? "" : " (replacing older generation)");
  held_[config.partition_id] = Holding{std::move(stored), 0};
  return absl::OkStatus();
}

absl::Status SimulatedMachine::Reset(std::string_view partition_id, uint64_t generation) {
  if (partition_id.empty()) return absl::InvalidArgumentError("partition id: must not be empty");
  std::lock_guard<std::mutex> lock(mu_);
  auto it = held_.find(partition_id);
  if (it == held_.end()) {
    return absl::NotFoundError(
        absl::StrCat("partition ", A(partition_id), " is not held by agent ", agent_id_));
  }
  Holding& holding = it->second;
  if (generation < holding.config.generation) {
    return absl::FailedPreconditionError(
        absl::StrCat("partition ", A(partition_id), ": stale generation ", generation, " < ",
                     holding.config.generation, " held by agent ", agent_id_));
  }
  holding.config.generation = generation;
  ++holding.resets;
  spdlog::info("agent {}: reset partition {} generation {} on IPUs [{}]", agent_id_, partition_id,
               generation, IpuList(holding.config.ipus));
  return absl::OkStatus();
}

absl::Status SimulatedMachine::Release(std::string_view partition_id, uint64_t generation) {
  if (partition_id.empty()) return absl::InvalidArgumentError("partition id: must not be empty");
  std::lock_guard<std::mutex> lock(mu_);
  auto it = held_.find(partition_id);
  if (it == held_.end()) return absl::OkStatus();
  if (generation < it->second.config.generation) {
    return absl::FailedPreconditionError(
        absl::StrCat("partition ", A(partition_id), ": stale generation ", generation, " < ",
                     it->second.config.generation, " held by agent ", agent_id_));
  }
  spdlog::info("agent {}: released partition {} generation {} from IPUs [{}]", agent_id_,
               partition_id, generation, IpuList(it->second.config.ipus));
  held_.erase(it);
  return absl::OkStatus();
}

std::vector<HeldPartition> SimulatedMachine::Held() const {
  std::lock_guard<std::mutex> lock(mu_);
  std::vector<HeldPartition> out;
  out.reserve(held_.size());
  for (const auto& [id, holding] : held_) {
    out.push_back({id, holding.config.generation, holding.config.ipus});
  }
  return out;
}

absl::StatusOr<PartitionConfig> SimulatedMachine::Config(std::string_view partition_id) const {
  std::lock_guard<std::mutex> lock(mu_);
  auto it = held_.find(partition_id);
  if (it == held_.end()) {
    return absl::NotFoundError(
        absl::StrCat("partition ", A(partition_id), " is not held by agent ", agent_id_));
  }
  return it->second.config;
}

uint32_t SimulatedMachine::ResetCount(std::string_view partition_id) const {
  std::lock_guard<std::mutex> lock(mu_);
  auto it = held_.find(partition_id);
  return it == held_.end() ? 0 : it->second.resets;
}

}  // namespace vipu::agents
