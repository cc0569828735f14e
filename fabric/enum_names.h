// Names of the object model's enums as users see them: table cells
// ("ACTIVE", "RINGSWNC", "DEFAULT"), wire names ("PS_ACTIVE") and CLI
// spellings ("ring-swnc", "c2-compatible"), parsed case- and
// hyphen-insensitively.
#ifndef VIPU_FABRIC_ENUM_NAMES_H_
#define VIPU_FABRIC_ENUM_NAMES_H_

#include <string>
#include <string_view>

#include "absl/status/statusor.h"
#include "fabric/types.h"

namespace vipu::fabric {

// PENDING ACTIVE REMOVED ERROR (UNDEFINED); out-of-range values give
// "UNKNOWN(<n>)" for every function here.
std::string TableName(ReadyState s);
std::string WireName(ReadyState s);      // PS_ACTIVE ...
std::string WireName(OperationState s);  // POS_IDLE ...
std::string TableName(RoutingType r);    // DNC SWNC BTNC RINGSWNC, DEFAULT when undefined
std::string TableName(GwRoutingType r);  // RING SWRING, DEFAULT when undefined
// c2-compatible pod-native-default pod-native-replicated-pipeline
// (independent-rails, undefined).
std::string CliName(SyncType s);
std::string CliName(IldTopology t);      // torus mesh (undefined)
std::string CliName(ClusterTopology t);  // looped switched (undefined)
std::string CliName(MachineType t);      // m2000 bow

// INVALID_ARGUMENT naming the accepted values. Wire names (IRT_DNC,
// ST_POD_NATIVE_DEFAULT, ...) are accepted too.
// dnc swnc btnc ringswnc (ring-swnc)
absl::StatusOr<RoutingType> ParseRoutingType(std::string_view s);
absl::StatusOr<GwRoutingType> ParseGwRoutingType(std::string_view s);  // ring swring
// c2-compatible pod-native-default pod-native-replicated-pipeline;
// independent-rails is refused as not supported.
absl::StatusOr<SyncType> ParseSyncType(std::string_view s);
absl::StatusOr<IldTopology> ParseIldTopology(std::string_view s);
absl::StatusOr<ClusterTopology> ParseClusterTopology(std::string_view s);
absl::StatusOr<MachineType> ParseMachineType(std::string_view s);  // also ipu-m2000, bow-2000

}  // namespace vipu::fabric

#endif  // VIPU_FABRIC_ENUM_NAMES_H_
