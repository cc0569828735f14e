// The checks a poprun launch passes before anything is created: its options and the allocation.
#include "cli/poprun_validation.h"

#include "absl/strings/str_cat.h"

namespace vipu::cli::poprun {

absl::Status ValidateOptions(const PoprunOptions& o) {
  const uint64_t size = static_cast<uint64_t>(o.num_replicas) * o.ipus_per_replica;
  if (o.num_replicas % o.num_instances != 0) {
    return absl::InvalidArgumentError(absl::StrCat("--num-replicas (", o.num_replicas,
                                                   ") must be divisible by --num-instances (",
                                                   o.num_instances, ")"));
  }
  if (!o.hosts.empty() && o.num_instances % o.hosts.size() != 0) {
    return absl::InvalidArgumentError(absl::StrCat("--num-instances (", o.num_instances,
                                                   ") must be divisible by the number of hosts (",
                                                   o.hosts.size(), ")"));
  }
  if (o.num_ilds > 0) {
    if (o.num_instances < o.num_ilds) {
      return absl::InvalidArgumentError(
          absl::StrCat("--num-instances (", o.num_instances, ") must be at least --num-ilds (",
                       o.num_ilds, "): at least one instance per IPU-Link domain"));
    }
    if (o.num_instances % o.num_ilds != 0) {
      return absl::InvalidArgumentError(absl::StrCat("--num-instances (", o.num_instances,
                                                     ") must be divisible by --num-ilds (",
                                                     o.num_ilds, ")"));
    }
  }
  if (size > (1u << 31) || (size & (size - 1)) != 0) {
    return absl::InvalidArgumentError(absl::StrCat(
        "partition size: --num-replicas x --ipus-per-replica must be a power of two, got ", size,
        " (", o.num_replicas, " x ", o.ipus_per_replica, ")"));
  }
  if (o.only_output_from_instance && *o.only_output_from_instance >= o.num_instances) {
    return absl::InvalidArgumentError(absl::StrCat("--only-output-from-instance: must be below ",
                                                   "--num-instances (", o.num_instances, "), got ",
                                                   *o.only_output_from_instance));
  }
  return absl::OkStatus();
}

absl::Status ValidateFitsAllocation(uint32_t size, const std::string& allocation,
                                    uint32_t allocation_ipus) {
  if (size > allocation_ipus) {
    return absl::InvalidArgumentError(absl::StrCat("partition size (", size,
                                                   " IPUs) is too large for allocation ",
                                                   allocation, " (", allocation_ipus, " IPUs)"));
  }
  return absl::OkStatus();
}

}  // namespace vipu::cli::poprun
