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

std::string TableName(ReadyState s);         // PENDING ACTIVE REMOVED ERROR
std::string WireName(ReadyState s);          // PS_ACTIVE ...
std::string WireName(OperationState s);      // POS_IDLE ...
std::string TableName(RoutingType r);        // DNC SWNC BTNC RINGSWNC, DEFAULT when undefined
std::string TableName(GwRoutingType r);      // RING SWRING, DEFAULT when undefined
std::string CliName(SyncType s);             // c2-compatible pod-native-default pod-native-replicated-pipeline
std::string CliName(IldTopology t);          // torus mesh
std::string CliName(ClusterTopology t);      // looped switched
std::string CliName(MachineType t);          // m2000 bow

// INVALID_ARGUMENT naming the accepted values.
absl::StatusOr<RoutingType> ParseRoutingType(std::string_view s);      // dnc swnc btnc ringswnc ring-swnc
absl::StatusOr<GwRoutingType> ParseGwRoutingType(std::string_view s);  // ring swring
absl::StatusOr<SyncType> ParseSyncType(std::string_view s);  // independent-rails is refused
absl::StatusOr<IldTopology> ParseIldTopology(std::string_view s);
absl::StatusOr<ClusterTopology> ParseClusterTopology(std::string_view s);
absl::StatusOr<MachineType> ParseMachineType(std::string_view s);

}  // namespace vipu::fabric

#endif  // VIPU_FABRIC_ENUM_NAMES_H_
