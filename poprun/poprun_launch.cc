// Builds poprun's mpirun argv: global options, per-instance environment, hosts and NUMA binding.
#include "poprun/poprun_launch.h"

#include <filesystem>
#include <system_error>

#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "poprun/poprun_partition.h"

namespace vipu::poprun {
namespace {

uint32_t InstancesPerHost(const PoprunOptions& o) {
  return o.hosts.empty() ? o.num_instances
                         : o.num_instances / static_cast<uint32_t>(o.hosts.size());
}

}  // namespace

EnvList InstanceEnvironment(const PoprunOptions& o, const LaunchContext& c, uint32_t instance) {
  const uint32_t local_replicas = o.num_replicas / o.num_instances;
  EnvList env = {
      {"POPDIST_NUM_TOTAL_REPLICAS", absl::StrCat(o.num_replicas)},
      {"POPDIST_NUM_IPUS_PER_REPLICA", absl::StrCat(o.ipus_per_replica)},
      {"POPDIST_NUM_LOCAL_REPLICAS", absl::StrCat(local_replicas)},
      {"POPDIST_UNIFORM_REPLICAS_PER_INSTANCE", "1"},
      {"POPDIST_REPLICA_INDEX_OFFSET", absl::StrCat(instance * local_replicas)},
      {"POPDIST_LOCAL_INSTANCE_INDEX", absl::StrCat(instance % InstancesPerHost(o))},
  };
  if (!c.vipu_host.empty()) {
    const size_t host = instance / InstancesPerHost(o);
    const std::string& vipu_host =
        host < c.vipu_host_per_host.size() ? c.vipu_host_per_host[host] : c.vipu_host;
    env.insert(env.end(), {{"IPUOF_VIPU_API_HOST", vipu_host},
                           {"IPUOF_VIPU_API_PORT", absl::StrCat(c.vipu_port)},
                           {"IPUOF_VIPU_API_PARTITION_ID", c.partition_id},
                           {"IPUOF_VIPU_API_TIMEOUT", absl::StrCat(c.vipu_timeout)},
                           {"IPUOF_VIPU_API_GCD_ID",
                            absl::StrCat(GcdOfInstance(instance, o.num_instances, c.num_gcds))}});
  }
  env.emplace_back("IPUOF_LOG_LEVEL", c.ipuof_log_level);
  if (!o.autoreport_dir.empty()) env.emplace_back("POPDIST_AUTOREPORT_DIRECTORY", o.autoreport_dir);
  if (!c.cache_dir.empty()) {
    env.insert(env.end(), {{"POPTORCH_CACHE_DIR", c.cache_dir},
                           {"POPART_CACHE_DIR", c.cache_dir},
                           {"POPXL_CACHE_DIR", c.cache_dir},
                           {"TF_POPLAR_FLAGS",
                            absl::StrCat(c.tf_poplar_flags, c.tf_poplar_flags.empty() ? "" : " ",
                                         "--executable_cache_path=", c.cache_dir)}});
  }
  return env;
}

EnvList CredentialEnvironment(const cli::ClientConfig& config) {
  EnvList env;
  auto add = [&env](const char* name, const std::string& value) {
    if (!value.empty()) env.emplace_back(name, value);
  };
  auto absolute = [](const std::string& path) {
    if (path.empty()) return path;
    std::error_code ec;
    std::filesystem::path p = std::filesystem::absolute(path, ec);
    return ec ? path : p.lexically_normal().string();
  };
  add("VIPU_CLI_API_USER_ID", config.user_id);
  add("VIPU_CLI_API_ACCESS_KEY", config.access_key);
  add("VIPU_CLI_API_TLS_CA", absolute(config.tls_ca));
  add("VIPU_CLI_API_TLS_CERT", absolute(config.tls_cert));
  add("VIPU_CLI_API_TLS_KEY", absolute(config.tls_key));
  return env;
}

std::vector<uint32_t> SpreadNuma(uint32_t nodes, uint32_t local_instances, uint32_t local_index) {
  if (nodes == 0 || local_instances == 0) return {};
  if (local_instances > nodes) return {local_index % nodes};
  std::vector<uint32_t> out;
  for (uint32_t n = local_index * nodes / local_instances;
       n < (local_index + 1) * nodes / local_instances; ++n) {
    out.push_back(n);
  }
  return out;
}

const std::vector<std::string>& PlacementArgs(ProcessPlacement placement) {
  // spreadnuma binds with numactl per instance, so mpirun must not bind too.
  static const auto* spread = new std::vector<std::string>{"--bind-to", "none"};
  static const auto* socket =
      new std::vector<std::string>{"--map-by", "socket", "--bind-to", "core"};
  static const auto* numa = new std::vector<std::string>{"--map-by", "numa", "--bind-to", "core"};
  static const auto* close = new std::vector<std::string>{"--map-by", "core", "--bind-to", "core"};
  static const auto* none = new std::vector<std::string>{};
  switch (placement) {
    case ProcessPlacement::kSpreadNuma:
      return *spread;
    case ProcessPlacement::kScatterSocket:
      return *socket;
    case ProcessPlacement::kScatterNuma:
      return *numa;
    case ProcessPlacement::kClose:
      return *close;
    case ProcessPlacement::kDisabled:
      break;
  }
  return *none;
}

std::vector<std::string> BuildMpirunCommand(const PoprunOptions& o, const LaunchContext& c) {
  std::vector<std::string> argv = {c.mpirun, "--tag-output"};
  argv.insert(argv.end(), PlacementArgs(o.process_placement).begin(),
              PlacementArgs(o.process_placement).end());
  argv.insert(argv.end(), o.mpi_global_args.begin(), o.mpi_global_args.end());
  if (o.allow_run_as_root) argv.push_back("--allow-run-as-root");
  if (!o.host_subnet.empty() && !o.hosts.empty()) {
    argv.insert(argv.end(), {"--mca", "btl_tcp_if_include", o.host_subnet, "--mca",
                             "oob_tcp_if_include", o.host_subnet});
  }
  const uint32_t per_host = InstancesPerHost(o);
  for (uint32_t i = 0; i < o.num_instances; ++i) {
    if (i > 0) argv.push_back(":");
    argv.insert(argv.end(), {"-np", "1"});
    // Slots for every instance of the host: mpirun would otherwise refuse
    // more instances than cores.
    if (!o.hosts.empty()) {
      argv.insert(argv.end(), {"--host", absl::StrCat(o.hosts[i / per_host], ":", per_host)});
    } else if (o.num_instances > 1) {
      argv.insert(argv.end(), {"--host", absl::StrCat("localhost:", per_host)});
    }
    for (const auto& [name, value] : InstanceEnvironment(o, c, i)) {
      argv.insert(argv.end(), {"-x", absl::StrCat(name, "=", value)});
    }
    for (const std::string& name : c.forwarded) argv.insert(argv.end(), {"-x", name});
    for (const auto& credential : c.credentials) argv.insert(argv.end(), {"-x", credential.first});
    if (!c.target_options.empty()) {
      argv.insert(argv.end(), {"-x", absl::StrCat("POPLAR_TARGET_OPTIONS=", c.target_options)});
    }
    argv.insert(argv.end(), o.mpi_local_args.begin(), o.mpi_local_args.end());
    if (auto it = o.instance_mpi_local_args.find(i); it != o.instance_mpi_local_args.end()) {
      argv.insert(argv.end(), it->second.begin(), it->second.end());
    }
    if (o.only_output_from_instance && *o.only_output_from_instance != i) {
      argv.insert(argv.end(), {"sh", "-c", "exec \"$@\" >/dev/null 2>&1", "poprun-quiet"});
    }
    if (o.process_placement == ProcessPlacement::kSpreadNuma && c.numa_nodes > 1) {
      const std::string nodes =
          absl::StrJoin(SpreadNuma(c.numa_nodes, per_host, i % per_host), ",");
      argv.insert(argv.end(), {c.numactl, absl::StrCat("--cpunodebind=", nodes),
                               absl::StrCat("--membind=", nodes)});
    }
    argv.insert(argv.end(), o.command.begin(), o.command.end());
  }
  return argv;
}

std::optional<std::string> ExplainMpirunFailure(const std::string& stderr_head) {
  // The refusal's first line as Open MPI prints it ("mpirun has detected an
  // attempt to run as root."), without the program's name.
  if (!absl::StrContains(stderr_head, "has detected an attempt to run as root")) {
    return std::nullopt;
  }
  return std::string(
      "mpirun refused to run as root (Open MPI's guard): add --allow-run-as-root=yes "
      "(or --mpi-global-args=--allow-run-as-root), or set OMPI_ALLOW_RUN_AS_ROOT=1 and "
      "OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1");
}

std::string QuoteCommand(const std::vector<std::string>& argv) {
  std::vector<std::string> quoted;
  for (size_t i = 0; i < argv.size(); ++i) {
    if (i == 0) {
      quoted.push_back(argv[0]);
      continue;
    }
    std::string q = "'";
    for (char ch : argv[i]) q += ch == '\'' ? std::string("'\\''") : std::string(1, ch);
    quoted.push_back(q + "'");
  }
  return absl::StrJoin(quoted, " ");
}

}  // namespace vipu::poprun
