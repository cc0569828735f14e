// The pod a replay runs on: a preset the server's --simulate accepts
// (pod4 .. pod256, bow-), or a bigger one of ILDs x machines, built as the
// server builds a preset's cluster (fabric::PodCluster).
#ifndef VIPU_PLAN_POD_H_
#define VIPU_PLAN_POD_H_

#include "absl/status/statusor.h"
#include "absl/strings/string_view.h"
#include "fabric/pods.h"
#include "fabric/types.h"

namespace vipu::plan {

struct PlanPod {
  fabric::PodSpec spec;
  fabric::Cluster cluster;  // agents ag1 .. agN, as --simulate names them
};

// `text` is a preset name ("pod64", "bow-pod256") or "[bow-]ILDSxMACHINES"
// ("64x16": 64 ILDs of 16 machines, 4,096 IPUs; torus ILDs when an ILD is
// a whole rack of 16 machines, else mesh; GW-Links switched beyond 4 ILDs,
// as the scale bench builds them). INVALID_ARGUMENT ("pod: ...") otherwise,
// also when an ILD would hold more than 64 IPUs.
absl::StatusOr<PlanPod> ParsePod(absl::string_view text);

}  // namespace vipu::plan

#endif  // VIPU_PLAN_POD_H_
