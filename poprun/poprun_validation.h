// The rules a poprun launch must satisfy before anything is created. Each
// failure is one INVALID_ARGUMENT line naming the options and the rule.
#ifndef VIPU_POPRUN_POPRUN_VALIDATION_H_
#define VIPU_POPRUN_POPRUN_VALIDATION_H_

#include <cstdint>
#include <string>

#include "absl/status/status.h"
#include "poprun/poprun_options.h"

namespace vipu::poprun {

// Replicas divisible by instances, instances by hosts, at least one instance
// per ILD (and an equal number in each), a power-of-two partition size, an
// instance index for --only-output-from-instance and
// --instance-mpi-local-args that exists.
absl::Status ValidateOptions(const PoprunOptions& options);

// --autoreport-dir gives every instance its own report directory, which a
// fixed autoReport.directory in POPLAR_ENGINE_OPTIONS (poprun's
// `engine_options_env`, or passed with -x in --mpi-local-args or
// --instance-mpi-local-args) would override for all of them alike.
absl::Status ValidateAutoreport(const PoprunOptions& options,
                                const std::string& engine_options_env);

// A partition of `size` IPUs must fit the allocation's `allocation_ipus`.
absl::Status ValidateFitsAllocation(uint32_t size, const std::string& allocation,
                                    uint32_t allocation_ipus);

inline uint32_t PartitionSize(const PoprunOptions& o) {
  return o.num_replicas * o.ipus_per_replica;
}

}  // namespace vipu::poprun

#endif  // VIPU_POPRUN_POPRUN_VALIDATION_H_
