// Table, wire and CLI names of the object model's enums, and their lenient parsing.
#include "fabric/enum_names.h"

#include <cctype>
#include <utility>
#include <vector>

#include "absl/status/status.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"

namespace vipu::fabric {
namespace {

// Lower case without '-' and '_', so "RING_SWNC", "ring-swnc" and "ringswnc"
// compare equal.
std::string Normalize(std::string_view s) {
  std::string out;
  out.reserve(s.size());
  for (char c : s) {
    if (c == '-' || c == '_') continue;
    out.push_back(static_cast<char>(std::tolower(static_cast<unsigned char>(c))));
  }
  return out;
}

template <typename E>
struct Spelling {
  const char* normalized;
  E value;
};

// Looks `s` up in `table`; the error names the field and the canonical
// spellings users should type.
template <typename E>
absl::StatusOr<E> Lookup(std::string_view field, std::string_view s,
                         const std::vector<Spelling<E>>& table,
                         const std::vector<std::string>& accepted) {
  const std::string key = Normalize(s);
  for (const auto& entry : table) {
    if (key == entry.normalized) return entry.value;
  }
  return absl::InvalidArgumentError(absl::StrCat(std::string(field), ": unknown value \"",
                                                 std::string(s),
                                                 "\"; accepted: ", absl::StrJoin(accepted, ", ")));
}

std::string Unknown(int value) { return absl::StrCat("UNKNOWN(", value, ")"); }

}  // namespace

std::string TableName(ReadyState s) {
  switch (s) {
    case ReadyState::kUndefined:
      return "UNDEFINED";
    case ReadyState::kPending:
      return "PENDING";
    case ReadyState::kActive:
      return "ACTIVE";
    case ReadyState::kRemoved:
      return "REMOVED";
    case ReadyState::kError:
      return "ERROR";
  }
  return Unknown(static_cast<int>(s));
}

std::string WireName(ReadyState s) {
  switch (s) {
    case ReadyState::kUndefined:
    case ReadyState::kPending:
    case ReadyState::kActive:
    case ReadyState::kRemoved:
    case ReadyState::kError:
      return "PS_" + TableName(s);
  }
  return Unknown(static_cast<int>(s));
}

std::string WireName(OperationState s) {
  switch (s) {
    case OperationState::kUndefined:
      return "POS_UNDEFINED";
    case OperationState::kIdle:
      return "POS_IDLE";
    case OperationState::kCreating:
      return "POS_CREATING";
    case OperationState::kRemoving:
      return "POS_REMOVING";
    case OperationState::kResetting:
      return "POS_RESETTING";
    case OperationState::kFailed:
      return "POS_FAILED";
  }
  return Unknown(static_cast<int>(s));
}

std::string TableName(RoutingType r) {
  switch (r) {
    case RoutingType::kUndefined:
      return "DEFAULT";
    case RoutingType::kDnc:
      return "DNC";
    case RoutingType::kSwnc:
      return "SWNC";
    case RoutingType::kBtnc:
      return "BTNC";
    case RoutingType::kRingSwnc:
      return "RINGSWNC";
  }
  return Unknown(static_cast<int>(r));
}

std::string TableName(GwRoutingType r) {
  switch (r) {
    case GwRoutingType::kUndefined:
      return "DEFAULT";
    case GwRoutingType::kRing:
      return "RING";
    case GwRoutingType::kSwRing:
      return "SWRING";
  }
  return Unknown(static_cast<int>(r));
}

std::string CliName(SyncType s) {
  switch (s) {
    case SyncType::kUndefined:
      return "undefined";
    case SyncType::kGs2Default:
      return "c2-compatible";
    case SyncType::kGs2IndependentRails:
      return "independent-rails";
    case SyncType::kPodNativeDefault:
      return "pod-native-default";
    case SyncType::kPodNativeReplicatedPipeline:
      return "pod-native-replicated-pipeline";
  }
  return Unknown(static_cast<int>(s));
}

std::string CliName(IldTopology t) {
  switch (t) {
    case IldTopology::kUndefined:
      return "undefined";
    case IldTopology::kMesh:
      return "mesh";
    case IldTopology::kTorus:
      return "torus";
  }
  return Unknown(static_cast<int>(t));
}

std::string CliName(ClusterTopology t) {
  switch (t) {
    case ClusterTopology::kUndefined:
      return "undefined";
    case ClusterTopology::kLooped:
      return "looped";
    case ClusterTopology::kSwitched:
      return "switched";
  }
  return Unknown(static_cast<int>(t));
}

std::string CliName(MachineType t) {
  switch (t) {
    case MachineType::kM2000:
      return "m2000";
    case MachineType::kBow:
      return "bow";
  }
  return Unknown(static_cast<int>(t));
}

absl::StatusOr<RoutingType> ParseRoutingType(std::string_view s) {
  static const auto* table = new std::vector<Spelling<RoutingType>>{
      {"dnc", RoutingType::kDnc},           {"irtdnc", RoutingType::kDnc},
      {"swnc", RoutingType::kSwnc},         {"irtswnc", RoutingType::kSwnc},
      {"btnc", RoutingType::kBtnc},         {"irtbtnc", RoutingType::kBtnc},
      {"ringswnc", RoutingType::kRingSwnc}, {"irtringswnc", RoutingType::kRingSwnc},
  };
  return Lookup<RoutingType>("routing", s, *table, {"dnc", "swnc", "btnc", "ringswnc"});
}

absl::StatusOr<GwRoutingType> ParseGwRoutingType(std::string_view s) {
  static const auto* table = new std::vector<Spelling<GwRoutingType>>{
      {"ring", GwRoutingType::kRing},
      {"grtring", GwRoutingType::kRing},
      {"swring", GwRoutingType::kSwRing},
      {"grtswring", GwRoutingType::kSwRing},
  };
  return Lookup<GwRoutingType>("gw routing", s, *table, {"ring", "swring"});
}

absl::StatusOr<SyncType> ParseSyncType(std::string_view s) {
  const std::string key = Normalize(s);
  if (key == "independentrails" || key == "gs2independentrails" || key == "stgs2independentrails") {
    return absl::InvalidArgumentError(
        absl::StrCat("sync type: \"", std::string(s), "\" (independent rails) is not supported"));
  }
  static const auto* table = new std::vector<Spelling<SyncType>>{
      {"c2compatible", SyncType::kGs2Default},
      {"gs2default", SyncType::kGs2Default},
      {"stgs2default", SyncType::kGs2Default},
      {"podnativedefault", SyncType::kPodNativeDefault},
      {"stpodnativedefault", SyncType::kPodNativeDefault},
      {"podnativereplicatedpipeline", SyncType::kPodNativeReplicatedPipeline},
      {"stpodnativereplicatedpipeline", SyncType::kPodNativeReplicatedPipeline},
  };
  return Lookup<SyncType>(
      "sync type", s, *table,
      {"c2-compatible", "pod-native-default", "pod-native-replicated-pipeline"});
}

absl::StatusOr<IldTopology> ParseIldTopology(std::string_view s) {
  static const auto* table = new std::vector<Spelling<IldTopology>>{
      {"torus", IldTopology::kTorus},
      {"mesh", IldTopology::kMesh},
  };
  return Lookup<IldTopology>("topology", s, *table, {"torus", "mesh"});
}

absl::StatusOr<ClusterTopology> ParseClusterTopology(std::string_view s) {
  static const auto* table = new std::vector<Spelling<ClusterTopology>>{
      {"looped", ClusterTopology::kLooped},
      {"switched", ClusterTopology::kSwitched},
  };
  return Lookup<ClusterTopology>("cluster topology", s, *table, {"looped", "switched"});
}

absl::StatusOr<MachineType> ParseMachineType(std::string_view s) {
  static const auto* table = new std::vector<Spelling<MachineType>>{
      {"m2000", MachineType::kM2000},
      {"ipum2000", MachineType::kM2000},
      {"bow", MachineType::kBow},
      {"bow2000", MachineType::kBow},
  };
  return Lookup<MachineType>("machine type", s, *table, {"m2000", "bow"});
}

}  // namespace vipu::fabric
