// Translation between wire messages and fabric types. Unknown enum numbers
// (proto3 enums are open) are refused here with INVALID_ARGUMENT naming the
// field, before anything else looks at the request.
#ifndef VIPU_SERVER_API_WIRE_H_
#define VIPU_SERVER_API_WIRE_H_

#include "absl/status/statusor.h"
#include "fabric/ipuof_config.h"
#include "fabric/types.h"
#include "vipu_admin.pb.h"
#include "vipuuser.pb.h"

namespace vipu::server {

absl::StatusOr<fabric::PartitionRequest> FromWire(const virmgrpc::CreatePartitionRequest& request);
absl::StatusOr<fabric::Cluster> FromWire(const vipuadmin::Cluster& cluster);

void ToWire(const fabric::Partition& p, virmgrpc::Partition* out);
void ToWire(const fabric::Partition& p, virmgrpc::PartitionStatus* out);
void ToWire(const fabric::Cluster& c, vipuadmin::Cluster* out);
void ToWire(const fabric::Allocation& a, virmgrpc::Allocation* out);
void ToWire(const fabric::GcdConfig& gcd, virmgrpc::PartitionConfig::Gcd* out);

}  // namespace vipu::server

#endif  // VIPU_SERVER_API_WIRE_H_
