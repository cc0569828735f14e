// The checks a poprun launch passes before anything is created: its options and the allocation.
#include "poprun/poprun_validation.h"

#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"

namespace vipu::poprun {

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
  for (const auto& [instance, args] : o.instance_mpi_local_args) {
    if (instance >= o.num_instances) {
      return absl::InvalidArgumentError(
          absl::StrCat("--instance-mpi-local-args: instance ", instance,
                       " does not exist, must be below --num-instances (", o.num_instances, ")"));
    }
  }
  return absl::OkStatus();
}

absl::Status ValidateAutoreport(const PoprunOptions& o, const std::string& engine_options_env) {
  if (o.autoreport_dir.empty()) return absl::OkStatus();
  constexpr absl::string_view kKey = "autoReport.directory";
  auto conflict = [&](const std::string& where) {
    return absl::InvalidArgumentError(
        absl::StrCat("--autoreport-dir: cannot be specified when POPLAR_ENGINE_OPTIONS contains "
                     "the autoReport.directory setting (",
                     where, ")"));
  };
  if (absl::StrContains(engine_options_env, kKey)) return conflict("in poprun's environment");
  auto sets_it = [&](const std::vector<std::string>& args) {
    for (const std::string& a : args) {
      if (absl::StartsWith(a, "POPLAR_ENGINE_OPTIONS=") && absl::StrContains(a, kKey)) return true;
    }
    return false;
  };
  if (sets_it(o.mpi_local_args)) return conflict("in --mpi-local-args");
  for (const auto& [instance, args] : o.instance_mpi_local_args) {
    if (sets_it(args))
      return conflict(absl::StrCat("in --instance-mpi-local-args of instance ", instance));
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

}  // namespace vipu::poprun
