// The poprun command line: `poprun [options] program [args]`. The parser is
// hand-written rather than CLI11 because poprun follows Boost.Program_options
// conventions CLI11 does not offer without fighting it: values that begin with
// `--` are taken verbatim from the next token
// (`--mpi-global-args --tag-output`), parsing stops at the first non-option
// token (the program), booleans take an explicit yes/no, on/off, 1/0 or
// true/false value, and the same setters read the exported config files.
#ifndef VIPU_POPRUN_POPRUN_OPTIONS_H_
#define VIPU_POPRUN_POPRUN_OPTIONS_H_

#include <cstdint>
#include <map>
#include <optional>
#include <string>
#include <vector>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "absl/strings/string_view.h"

namespace vipu::poprun {

enum class ProcessPlacement { kSpreadNuma, kScatterSocket, kScatterNuma, kClose, kDisabled };
enum class Verbosity { kDefault, kInfo, kDebug };  // none, -v, -vv

struct PoprunOptions {
  uint32_t num_replicas = 1;
  uint32_t ipus_per_replica = 1;
  uint32_t num_instances = 1;
  uint32_t num_ilds = 0;           // 0: decided by the partition / server
  std::vector<std::string> hosts;  // expanded, from --host or the host file
  std::string host_file;
  std::optional<std::string> vipu_server_host;
  std::optional<uint32_t> vipu_server_port;
  std::optional<uint32_t> vipu_server_timeout;
  std::string vipu_partition;
  uint32_t vipu_partition_attempts = 1;
  std::string vipu_allocation;
  std::string vipu_cluster;  // the partition is created in an allocation of this cluster
  bool update_partition = false;
  std::optional<bool> reset_partition;  // unset: reset iff not reconfigurable
  bool remove_partition = true;
  std::string sync_type;                             // CLI spelling, validated
  std::optional<std::string> executable_cache_path;  // "" disables caching
  std::vector<std::string> mpi_global_args;          // split on whitespace
  std::vector<std::string> mpi_local_args;
  // --instance-mpi-local-args INSTANCE:ARGS, by instance index.
  std::map<uint32_t, std::vector<std::string>> instance_mpi_local_args;
  std::string autoreport_dir;  // POPDIST_AUTOREPORT_DIRECTORY of every instance
  // Copying to remote hosts is not done here: with remote hosts these are
  // refused, with local ones there is nothing to copy.
  bool synchronise_python_venv = false;
  bool synchronise_poplar_sdk = false;
  bool distribute_ssh_key = false;
  ProcessPlacement process_placement = ProcessPlacement::kSpreadNuma;
  bool print_topology = false;
  std::optional<uint32_t> only_output_from_instance;
  bool offline_mode = false;
  bool allow_run_as_root = false;
  std::string host_subnet;  // CIDR
  std::string import_config;
  std::string export_config;
  bool overwrite_config = false;
  Verbosity verbosity = Verbosity::kDefault;
  bool help = false;
  std::optional<std::string> version_format;  // set by --version
  std::vector<std::string> command;           // program and its arguments
};

// Parses argv (without argv[0]). With --import-config the file is read
// first and the command line overrides it (a repeatable option given on the
// command line replaces the file's values). Errors are INVALID_ARGUMENT
// naming the option and the rule, e.g.
// "--num-replicas: must be a positive integer, got x".
absl::StatusOr<PoprunOptions> ParseCommandLine(const std::vector<std::string>& args);

// The --process-placement spelling: spreadnuma, scattersocket, ...
const char* ProcessPlacementName(ProcessPlacement placement);

// yes/no, on/off, 1/0, true/false, case-insensitive.
std::optional<bool> ParseBool(absl::string_view value);

// "host0,host1" and "host[0-2,4]" -> host0 host1 host2 host4.
absl::StatusOr<std::vector<std::string>> ExpandHosts(absl::string_view list);

// The options as a config file that ParseCommandLine reads back:
// `name = value` per line, repeatable options and the command repeated.
std::string SerializeConfig(const PoprunOptions& options);

// Writes the config to `path`. An existing file is overwritten only with
// --overwrite-config; otherwise the current time stamp is appended to the
// name. Returns the path written.
absl::StatusOr<std::string> ExportConfig(const PoprunOptions& options, const std::string& path);

std::string HelpText();

}  // namespace vipu::poprun

#endif  // VIPU_POPRUN_POPRUN_OPTIONS_H_
