// The wire form (vipuagent.WorkloadSpec) of a model workload an application
// runs through the IPUoF client. Every field is sent explicitly, so the
// machine models exactly the workload the application describes rather than
// a preset's defaults.
#ifndef VIPU_POPDIST_WORKLOAD_SPEC_H_
#define VIPU_POPDIST_WORKLOAD_SPEC_H_

#include "absl/status/statusor.h"
#include "model/workload.h"
#include "vipu_agent.pb.h"

namespace vipu::popdist::ipuof {

// INVALID_ARGUMENT when `workload.name` is not a preset or the network shape
// differs from the preset's: the wire names the network by preset only.
absl::StatusOr<vipuagent::WorkloadSpec> ToWorkloadSpec(const model::Workload& workload);

}  // namespace vipu::popdist::ipuof

#endif  // VIPU_POPDIST_WORKLOAD_SPEC_H_
