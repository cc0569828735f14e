// poprun's hand-written option parser, with setters shared by the exported config files.
#include "poprun/poprun_options.h"

#include <sys/stat.h>

#include <ctime>
#include <fstream>
#include <functional>
#include <set>
#include <sstream>

#include "absl/strings/ascii.h"
#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "absl/strings/str_split.h"
#include "absl/strings/strip.h"
#include "fabric/enum_names.h"
#include "wire/server_members.h"

namespace vipu::poprun {
namespace {

using Setter = std::function<absl::Status(PoprunOptions&, const std::string& value)>;

absl::Status Invalid(const std::string& option, const std::string& rule, const std::string& got) {
  return absl::InvalidArgumentError(
      absl::StrCat(option, ": ", rule, ", got ", got.empty() ? "an empty value" : got));
}

Setter Uint(const std::string& option, uint32_t min, uint32_t PoprunOptions::*field) {
  return [option, min, field](PoprunOptions& o, const std::string& v) {
    uint32_t n = 0;
    if (!absl::SimpleAtoi(v, &n) || n < min || v.front() == '+') {
      return Invalid(option,
                     min == 0 ? "must be a non-negative integer" : "must be a positive integer", v);
    }
    o.*field = n;
    return absl::OkStatus();
  };
}

absl::StatusOr<uint32_t> ParseUint(const std::string& option, const std::string& v, uint64_t min,
                                   uint64_t max, const char* rule) {
  uint64_t n = 0;
  if (!absl::SimpleAtoi(v, &n) || n < min || n > max || v.front() == '+') {
    return Invalid(option, rule, v);
  }
  return static_cast<uint32_t>(n);
}

absl::StatusOr<bool> Bool(const std::string& option, const std::string& v) {
  std::optional<bool> b = ParseBool(v);
  if (!b.has_value()) return Invalid(option, "must be one of yes/no, on/off, 1/0, true/false", v);
  return *b;
}

Setter BoolField(const std::string& option, bool PoprunOptions::*field) {
  return [option, field](PoprunOptions& o, const std::string& v) {
    auto b = Bool(option, v);
    if (!b.ok()) return b.status();
    o.*field = *b;
    return absl::OkStatus();
  };
}

Setter NonEmptyString(const std::string& option, std::string PoprunOptions::*field) {
  return [option, field](PoprunOptions& o, const std::string& v) {
    if (v.empty()) return Invalid(option, "must not be empty", v);
    o.*field = v;
    return absl::OkStatus();
  };
}

std::vector<std::string> SplitWords(const std::string& v) {
  return absl::StrSplit(v, absl::ByAnyChar(" \t\r\n"), absl::SkipEmpty());
}

bool ValidCidr(const std::string& v) {
  std::vector<std::string> parts = absl::StrSplit(v, '/');
  if (parts.size() != 2) return false;
  uint32_t bits = 0;
  if (!absl::SimpleAtoi(parts[1], &bits) || bits > 32) return false;
  std::vector<std::string> octets = absl::StrSplit(parts[0], '.');
  if (octets.size() != 4) return false;
  for (const std::string& o : octets) {
    uint32_t n = 0;
    if (o.empty() || o.size() > 3 || !absl::SimpleAtoi(o, &n) || n > 255) return false;
  }
  return true;
}

// One option of the table, declared as a chain of named settings:
// Option("num-replicas").Positive(&PoprunOptions::num_replicas).Help("...").
class Option {
 public:
  // `name` is without dashes; it is the canonical spelling and the config file's.
  explicit Option(std::string name) : names_{std::move(name)} {}

  // Another spelling, e.g. the single-letter "H" of "host".
  Option& Alias(std::string name) {
    names_.push_back(std::move(name));
    return *this;
  }
  // A switch: it takes no value.
  Option& Flag(Setter set) {
    takes_value_ = false;
    arg_ = "";
    set_ = std::move(set);
    return *this;
  }
  // Takes a value, shown as `arg` in the help.
  Option& Value(const char* arg, Setter set) {
    takes_value_ = true;
    arg_ = arg;
    set_ = std::move(set);
    return *this;
  }
  // The common values; their errors name the option.
  Option& Positive(uint32_t PoprunOptions::*field) { return Value("int", Uint(Shown(), 1, field)); }
  Option& YesNo(bool PoprunOptions::*field) { return Value("bool", BoolField(Shown(), field)); }
  Option& Text(const char* arg, std::string PoprunOptions::*field) {
    return Value(arg, NonEmptyString(Shown(), field));
  }
  Option& Help(const char* help) {
    help_ = help;
    return *this;
  }

  const std::string& name() const { return names_[0]; }
  const std::vector<std::string>& names() const { return names_; }
  bool takes_value() const { return takes_value_; }
  const char* arg() const { return arg_; }
  const char* help() const { return help_; }
  absl::Status Set(PoprunOptions& o, const std::string& value) const { return set_(o, value); }

 private:
  std::string Shown() const { return "--" + names_[0]; }

  std::vector<std::string> names_;
  bool takes_value_ = true;
  Setter set_;
  const char* help_ = "";
  const char* arg_ = "arg";
};

// The setters that are more than a field of a common kind, in table order.

absl::Status SetHelp(PoprunOptions& o, const std::string&) {
  o.help = true;
  return absl::OkStatus();
}

absl::Status SetVersion(PoprunOptions& o, const std::string&) {
  if (!o.version_format.has_value()) o.version_format = "text";
  return absl::OkStatus();
}

absl::Status SetVersionFormat(PoprunOptions& o, const std::string& v) {
  if (v != "text" && v != "full-json" && v != "full-text") {
    return Invalid("--version-format", "must be one of text, full-json, full-text", v);
  }
  o.version_format = v;
  return absl::OkStatus();
}

absl::Status SetHosts(PoprunOptions& o, const std::string& v) {
  auto hosts = ExpandHosts(v);
  if (!hosts.ok()) return hosts.status();
  o.hosts = *std::move(hosts);
  return absl::OkStatus();
}

absl::Status SetServerHost(PoprunOptions& o, const std::string& v) {
  if (v.empty()) return Invalid("--vipu-server-host", "must not be empty", v);
  // Each member on its own; the port entries without one take is not known
  // yet and does not matter here.
  if (auto members = wire::ParseServerMembers(v, 1); !members.ok()) {
    return absl::InvalidArgumentError(
        absl::StrCat("--vipu-server-host: ", members.status().message()));
  }
  o.vipu_server_host = v;
  return absl::OkStatus();
}

absl::Status SetServerPort(PoprunOptions& o, const std::string& v) {
  auto n = ParseUint("--vipu-server-port", v, 1, 65535, "must be an integer in 1..65535");
  if (!n.ok()) return n.status();
  o.vipu_server_port = *n;
  return absl::OkStatus();
}

absl::Status SetServerTimeout(PoprunOptions& o, const std::string& v) {
  auto n = ParseUint("--vipu-server-timeout", v, 1, 86400,
                     "must be a whole number of seconds in 1..86400");
  if (!n.ok()) return n.status();
  o.vipu_server_timeout = *n;
  return absl::OkStatus();
}

absl::Status SetResetPartition(PoprunOptions& o, const std::string& v) {
  auto b = Bool("--reset-partition", v);
  if (!b.ok()) return b.status();
  o.reset_partition = *b;
  return absl::OkStatus();
}

absl::Status SetSyncType(PoprunOptions& o, const std::string& v) {
  auto t = fabric::ParseSyncType(v);
  if (!t.ok()) {
    return absl::InvalidArgumentError(
        absl::StrCat("--sync-type: ", std::string(t.status().message())));
  }
  o.sync_type = v;
  return absl::OkStatus();
}

// May be empty: that disables caching.
absl::Status SetExecutableCachePath(PoprunOptions& o, const std::string& v) {
  o.executable_cache_path = v;
  return absl::OkStatus();
}

absl::Status AddMpiGlobalArgs(PoprunOptions& o, const std::string& v) {
  for (std::string& w : SplitWords(v)) o.mpi_global_args.push_back(std::move(w));
  return absl::OkStatus();
}

absl::Status AddMpiLocalArgs(PoprunOptions& o, const std::string& v) {
  for (std::string& w : SplitWords(v)) o.mpi_local_args.push_back(std::move(w));
  return absl::OkStatus();
}

absl::Status AddInstanceMpiLocalArgs(PoprunOptions& o, const std::string& v) {
  const char* rule = "must be INSTANCE:ARGS, like 0:-x FOO=1";
  const size_t colon = v.find(':');
  if (colon == std::string::npos || colon == 0) {
    return Invalid("--instance-mpi-local-args", rule, v);
  }
  auto index = ParseUint("--instance-mpi-local-args", v.substr(0, colon), 0, UINT32_MAX, rule);
  if (!index.ok()) return Invalid("--instance-mpi-local-args", rule, v);
  std::vector<std::string> words = SplitWords(v.substr(colon + 1));
  if (words.empty()) return Invalid("--instance-mpi-local-args", rule, v);
  auto& args = o.instance_mpi_local_args[*index];
  args.insert(args.end(), words.begin(), words.end());
  return absl::OkStatus();
}

absl::Status SetProcessPlacement(PoprunOptions& o, const std::string& v) {
  for (ProcessPlacement p :
       {ProcessPlacement::kSpreadNuma, ProcessPlacement::kScatterSocket,
        ProcessPlacement::kScatterNuma, ProcessPlacement::kClose, ProcessPlacement::kDisabled}) {
    if (v == ProcessPlacementName(p)) {
      o.process_placement = p;
      return absl::OkStatus();
    }
  }
  return Invalid("--process-placement",
                 "must be one of spreadnuma, scattersocket, scatternuma, close, disabled", v);
}

// The older spelling of --process-placement: spreadnuma or disabled.
absl::Status SetNumaAware(PoprunOptions& o, const std::string& v) {
  auto b = Bool("--numa-aware", v);
  if (!b.ok()) return b.status();
  o.process_placement = *b ? ProcessPlacement::kSpreadNuma : ProcessPlacement::kDisabled;
  return absl::OkStatus();
}

absl::Status SetOnlyOutputFromInstance(PoprunOptions& o, const std::string& v) {
  auto n =
      ParseUint("--only-output-from-instance", v, 0, UINT32_MAX, "must be a non-negative integer");
  if (!n.ok()) return n.status();
  o.only_output_from_instance = *n;
  return absl::OkStatus();
}

absl::Status SetHostSubnet(PoprunOptions& o, const std::string& v) {
  if (!ValidCidr(v)) return Invalid("--host-subnet", "must be an IPv4 subnet like 10.1.0.0/16", v);
  o.host_subnet = v;
  return absl::OkStatus();
}

absl::Status SetVerbose(PoprunOptions& o, const std::string&) {
  if (o.verbosity == Verbosity::kDefault) o.verbosity = Verbosity::kInfo;
  return absl::OkStatus();
}

absl::Status SetVeryVerbose(PoprunOptions& o, const std::string&) {
  o.verbosity = Verbosity::kDebug;
  return absl::OkStatus();
}

// The table, in --help order, in groups that each fit on a screen.

void AddGeneralOptions(std::vector<Option>& table) {
  table.push_back(Option("help").Flag(SetHelp).Help("Produce help message."));
  table.push_back(Option("version")
                      .Flag(SetVersion)
                      .Help("Print version information. See --version-format for options."));
  table.push_back(Option("version-format")
                      .Value("format", SetVersionFormat)
                      .Help("Print version information (text, full-json or full-text)."));
  table.push_back(Option("import-config")
                      .Text("file", &PoprunOptions::import_config)
                      .Help("File to read configuration from. Arguments specified on the command "
                            "line override values stored in this file."));
  table.push_back(Option("export-config")
                      .Text("file", &PoprunOptions::export_config)
                      .Help("File to write the current configuration to."));
  table.push_back(
      Option("overwrite-config")
          .YesNo(&PoprunOptions::overwrite_config)
          .Help("Allow or disallow overwriting exported configuration file (default 0)."));
}

void AddLaunchSizeOptions(std::vector<Option>& table) {
  table.push_back(Option("host")
                      .Alias("H")
                      .Value("list", SetHosts)
                      .Help("A list of hosts on which to launch instances. Example: host0,host1 or "
                            "host[0-2,4]. The instances are divided evenly among the hosts."));
  table.push_back(Option("host-file")
                      .Text("file", &PoprunOptions::host_file)
                      .Help("The name of a file containing a newline separated list of hosts. "
                            "Mutually exclusive with --host/-H."));
  table.push_back(Option("num-replicas")
                      .Positive(&PoprunOptions::num_replicas)
                      .Help("The total number of replicas (default 1)."));
  table.push_back(Option("ipus-per-replica")
                      .Positive(&PoprunOptions::ipus_per_replica)
                      .Help("The number of IPUs per replica (default 1)."));
  table.push_back(Option("num-instances")
                      .Positive(&PoprunOptions::num_instances)
                      .Help("The number of instances. The replicas are divided evenly among the "
                            "instances (default 1)."));
  table.push_back(Option("num-ilds")
                      .Positive(&PoprunOptions::num_ilds)
                      .Help("The number of IPU-Link domains. If not set, determined by the V-IPU "
                            "server by default."));
}

void AddVipuOptions(std::vector<Option>& table) {
  table.push_back(Option("vipu-server-host")
                      .Value("hosts", SetServerHost)
                      .Help("The V-IPU server: a comma-separated list of members, each "
                            "HOST, HOST:PORT, [V6] or [V6]:PORT, tried in order (default "
                            "localhost)."));
  table.push_back(Option("vipu-server-port")
                      .Value("int", SetServerPort)
                      .Help("The port number of the V-IPU server's members given without one "
                            "(default 8090)."));
  table.push_back(
      Option("vipu-server-timeout")
          .Value("int", SetServerTimeout)
          .Help("The timeout for the V-IPU server requests (in seconds, default 120)."));
  table.push_back(Option("vipu-partition")
                      .Text("name", &PoprunOptions::vipu_partition)
                      .Help("Create/use the specified V-IPU partition."));
  table.push_back(Option("vipu-partition-attempts")
                      .Positive(&PoprunOptions::vipu_partition_attempts)
                      .Help("The number of times PopRun will attempt to bind to the specified "
                            "partition (default 1)."));
  table.push_back(Option("vipu-allocation")
                      .Text("name", &PoprunOptions::vipu_allocation)
                      .Help("Use the specified V-IPU allocation when creating a partition."));
  table.push_back(Option("vipu-cluster")
                      .Text("name", &PoprunOptions::vipu_cluster)
                      .Help("Use the specified V-IPU cluster when creating a partition "
                            "(deprecated, use --vipu-allocation instead)."));
  table.push_back(Option("update-partition")
                      .YesNo(&PoprunOptions::update_partition)
                      .Help("Update the V-IPU partition if needed (default 0)."));
  table.push_back(Option("reset-partition")
                      .Value("bool", SetResetPartition)
                      .Help("Reset the V-IPU partition before execution. If not set, "
                            "non-reconfigurable partitions are reset by default, while "
                            "reconfigurable partitions are not."));
  table.push_back(Option("remove-partition")
                      .YesNo(&PoprunOptions::remove_partition)
                      .Help("Remove PopRun created V-IPU partition after execution (default 1)."));
  table.push_back(
      Option("sync-type")
          .Value("type", SetSyncType)
          .Help("The sync type of a partition PopRun creates (c2-compatible, pod-native-default, "
                "pod-native-replicated-pipeline)."));
  table.push_back(Option("executable-cache-path")
                      .Value("dir", SetExecutableCachePath)
                      .Help("Use the specified directory as an executable cache path (empty: "
                            "disable caching)."));
}

void AddMpiOptions(std::vector<Option>& table) {
  table.push_back(Option("mpi-global-args")
                      .Value("args", AddMpiGlobalArgs)
                      .Help("Global options to be passed to mpirun (repeatable)."));
  table.push_back(Option("mpi-local-args")
                      .Value("args", AddMpiLocalArgs)
                      .Help("Local (per-instance) options to be passed to mpirun."));
  table.push_back(Option("instance-mpi-local-args")
                      .Value("args", AddInstanceMpiLocalArgs)
                      .Help("Local options passed to mpirun for one instance only, as "
                            "INSTANCE:ARGS (repeatable)."));
  table.push_back(Option("autoreport-dir")
                      .Text("dir", &PoprunOptions::autoreport_dir)
                      .Help("Profile into this directory, one subdirectory per instance "
                            "(POPDIST_AUTOREPORT_DIRECTORY). Refused when POPLAR_ENGINE_OPTIONS "
                            "sets autoReport.directory."));
  table.push_back(Option("process-placement")
                      .Value("strategy", SetProcessPlacement)
                      .Help("Process placement strategy: spreadnuma (default: the host's NUMA "
                            "nodes divided among its instances), scattersocket or scatternuma "
                            "(one core per instance, spread over sockets or NUMA nodes), close "
                            "(one core per instance, consecutive cores) or disabled (mpirun's own "
                            "--map-by/--bind-to from --mpi-global-args)."));
  table.push_back(
      Option("numa-aware")
          .Value("bool", SetNumaAware)
          .Help("Bind instances to NUMA nodes (older spelling of --process-placement)."));
}

void AddRunOptions(std::vector<Option>& table) {
  table.push_back(
      Option("print-topology").YesNo(&PoprunOptions::print_topology).Help("Print topology table."));
  table.push_back(Option("only-output-from-instance")
                      .Value("int", SetOnlyOutputFromInstance)
                      .Help("Suppress the output from all other instances."));
  table.push_back(Option("offline-mode")
                      .YesNo(&PoprunOptions::offline_mode)
                      .Help("Run without requiring or attaching to any IPUs."));
  table.push_back(Option("allow-run-as-root")
                      .YesNo(&PoprunOptions::allow_run_as_root)
                      .Help("Allow mpirun to run as root."));
  table.push_back(Option("host-subnet")
                      .Value("cidr", SetHostSubnet)
                      .Help("Subnet used for communication between hosts (CIDR)."));
  table.push_back(Option("synchronise-python-venv")
                      .YesNo(&PoprunOptions::synchronise_python_venv)
                      .Help("Make the Python virtual environment available on the other hosts "
                            "(default 0). Nothing to copy when every host is this machine; "
                            "refused for other machines."));
  table.push_back(Option("synchronise-poplar-sdk")
                      .YesNo(&PoprunOptions::synchronise_poplar_sdk)
                      .Help("Make the Poplar SDK available on the other hosts (default 0). Nothing "
                            "to copy when every host is this machine; refused for other "
                            "machines."));
  table.push_back(Option("distribute-ssh-key")
                      .YesNo(&PoprunOptions::distribute_ssh_key)
                      .Help("Distribute this host's ssh key to the other hosts (default 0). "
                            "Nothing to copy when every host is this machine; refused for other "
                            "machines."));
  table.push_back(Option("verbose").Alias("v").Flag(SetVerbose).Help("Verbose output."));
  table.push_back(Option("vv").Flag(SetVeryVerbose).Help("Very verbose output (also -vv)."));
}

const std::vector<Option>& Specs() {
  static const auto* table = [] {
    auto* t = new std::vector<Option>;
    AddGeneralOptions(*t);
    AddLaunchSizeOptions(*t);
    AddVipuOptions(*t);
    AddMpiOptions(*t);
    AddRunOptions(*t);
    return t;
  }();
  return *table;
}

const Option* Find(const std::string& name) {
  for (const Option& s : Specs()) {
    for (const std::string& n : s.names()) {
      if (n == name) return &s;
    }
  }
  return nullptr;
}

bool IsList(const Option& s) {
  return s.name() == "mpi-global-args" || s.name() == "mpi-local-args" ||
         s.name() == "instance-mpi-local-args";
}

// One source of options (the config file or the command line). A list
// option's first occurrence in a source replaces what an earlier source set.
class Applier {
 public:
  explicit Applier(PoprunOptions& o) : o_(o) {}

  absl::Status Apply(const Option& spec, const std::string& value) {
    const std::string& name = spec.name();
    if (IsList(spec) && seen_.insert(name).second) {
      if (name == "mpi-global-args") o_.mpi_global_args.clear();
      if (name == "mpi-local-args") o_.mpi_local_args.clear();
      if (name == "instance-mpi-local-args") o_.instance_mpi_local_args.clear();
    }
    if (name == "host") o_.host_file.clear();
    if (name == "host-file") o_.hosts.clear();
    seen_.insert(name);
    return spec.Set(o_, value);
  }
  bool Seen(const std::string& name) const { return seen_.count(name) > 0; }

 private:
  PoprunOptions& o_;
  std::set<std::string> seen_;
};

// Splits the command line into (option, value) pairs and the command.
struct Token {
  const Option* spec;
  std::string value;
};

absl::Status Tokenize(const std::vector<std::string>& args, std::vector<Token>& tokens,
                      std::vector<std::string>& command) {
  size_t i = 0;
  while (i < args.size()) {
    const std::string& a = args[i];
    if (a == "--") {
      ++i;
      break;
    }
    if (a.size() < 2 || a[0] != '-') break;  // the program
    std::string name;
    std::optional<std::string> value;
    if (a[1] == '-') {
      std::string body = a.substr(2);
      size_t eq = body.find('=');
      name = body.substr(0, eq);
      if (eq != std::string::npos) value = body.substr(eq + 1);
    } else if (a == "-vv") {
      name = "vv";
    } else {
      name = a.substr(1, 1);
      if (a.size() > 2) value = a[2] == '=' ? a.substr(3) : a.substr(2);
    }
    const Option* spec = Find(name);
    if (spec == nullptr || (a[1] != '-' && name.size() != 1 && name != "vv")) {
      return absl::InvalidArgumentError(absl::StrCat("unrecognised option '", a, "'"));
    }
    if (a[1] == '-' && name.size() == 1) {
      return absl::InvalidArgumentError(absl::StrCat("unrecognised option '", a, "'"));
    }
    const std::string shown = name.size() == 1 ? absl::StrCat("-", name) : absl::StrCat("--", name);
    if (!spec->takes_value()) {
      if (value.has_value()) {
        return absl::InvalidArgumentError(absl::StrCat(shown, ": takes no value, got ", *value));
      }
      tokens.push_back({spec, ""});
      ++i;
      continue;
    }
    if (!value.has_value()) {
      // Verbatim, even when it starts with "--" (`--mpi-global-args --tag-output`).
      if (i + 1 >= args.size()) {
        return absl::InvalidArgumentError(absl::StrCat(shown, ": requires a value"));
      }
      value = args[i + 1];
      i += 2;
    } else {
      ++i;
    }
    tokens.push_back({spec, *value});
  }
  command.assign(args.begin() + i, args.end());
  return absl::OkStatus();
}

absl::Status ApplyConfigFile(const std::string& path, PoprunOptions& o) {
  std::ifstream in(path);
  if (!in) {
    return absl::InvalidArgumentError(
        absl::StrCat("--import-config: cannot read file, got ", path));
  }
  Applier applier(o);
  std::string line;
  int line_no = 0;
  bool command_seen = false;
  while (std::getline(in, line)) {
    ++line_no;
    absl::string_view l = absl::StripAsciiWhitespace(line);
    if (l.empty() || l.front() == '#') continue;
    size_t eq = l.find('=');
    if (eq == absl::string_view::npos) {
      return absl::InvalidArgumentError(
          absl::StrCat(path, ":", line_no, ": expected `name = value`, got ", l));
    }
    std::string name(absl::StripAsciiWhitespace(l.substr(0, eq)));
    std::string value(absl::StripAsciiWhitespace(l.substr(eq + 1)));
    if (name == "command") {
      if (!command_seen) o.command.clear();
      command_seen = true;
      o.command.push_back(value);
      continue;
    }
    const Option* spec = Find(name);
    if (spec == nullptr || name.size() == 1 || name == "import-config" || name == "export-config" ||
        !spec->takes_value()) {
      return absl::InvalidArgumentError(
          absl::StrCat(path, ":", line_no, ": unknown option, got ", name));
    }
    if (absl::Status s = applier.Apply(*spec, value); !s.ok()) {
      return absl::InvalidArgumentError(
          absl::StrCat(path, ":", line_no, ": ", std::string(s.message())));
    }
  }
  return absl::OkStatus();
}

absl::Status ReadHostFile(PoprunOptions& o) {
  std::ifstream in(o.host_file);
  if (!in) {
    return absl::InvalidArgumentError(
        absl::StrCat("--host-file: cannot read file, got ", o.host_file));
  }
  std::string line;
  std::vector<std::string> hosts;
  while (std::getline(in, line)) {
    absl::string_view l = absl::StripAsciiWhitespace(line);
    if (l.empty() || l.front() == '#') continue;
    auto expanded = ExpandHosts(l);
    if (!expanded.ok()) {
      return absl::InvalidArgumentError(
          absl::StrCat("--host-file: ", std::string(expanded.status().message())));
    }
    hosts.insert(hosts.end(), expanded->begin(), expanded->end());
  }
  if (hosts.empty()) return Invalid("--host-file", "must list at least one host", o.host_file);
  o.hosts = std::move(hosts);
  return absl::OkStatus();
}

}  // namespace

const char* ProcessPlacementName(ProcessPlacement placement) {
  switch (placement) {
    case ProcessPlacement::kSpreadNuma:
      return "spreadnuma";
    case ProcessPlacement::kScatterSocket:
      return "scattersocket";
    case ProcessPlacement::kScatterNuma:
      return "scatternuma";
    case ProcessPlacement::kClose:
      return "close";
    case ProcessPlacement::kDisabled:
      break;
  }
  return "disabled";
}

std::optional<bool> ParseBool(absl::string_view value) {
  const std::string v = absl::AsciiStrToLower(value);
  if (v == "yes" || v == "on" || v == "1" || v == "true") return true;
  if (v == "no" || v == "off" || v == "0" || v == "false") return false;
  return std::nullopt;
}

absl::StatusOr<std::vector<std::string>> ExpandHosts(absl::string_view list) {
  std::vector<std::string> hosts;
  // Split on commas outside brackets.
  std::vector<std::string> items;
  std::string current;
  int depth = 0;
  for (char c : list) {
    if (c == '[') ++depth;
    if (c == ']') --depth;
    if (depth < 0 || depth > 1)
      return Invalid("--host", "has unbalanced brackets", std::string(list));
    if (c == ',' && depth == 0) {
      items.push_back(current);
      current.clear();
    } else {
      current.push_back(c);
    }
  }
  if (depth != 0) return Invalid("--host", "has unbalanced brackets", std::string(list));
  items.push_back(current);
  for (const std::string& item : items) {
    if (item.empty())
      return Invalid("--host", "must not contain an empty host name", std::string(list));
    size_t open = item.find('[');
    if (open == std::string::npos) {
      hosts.push_back(item);
      continue;
    }
    size_t close = item.find(']', open);
    const std::string prefix = item.substr(0, open);
    const std::string suffix = item.substr(close + 1);
    if (suffix.find('[') != std::string::npos) {
      return Invalid("--host", "may hold one [range] per host", item);
    }
    for (absl::string_view part : absl::StrSplit(item.substr(open + 1, close - open - 1), ',')) {
      std::vector<std::string> bounds = absl::StrSplit(part, absl::MaxSplits('-', 1));
      uint32_t lo = 0, hi = 0;
      if (bounds[0].empty() || !absl::SimpleAtoi(bounds[0], &lo) ||
          (bounds.size() == 2 && (bounds[1].empty() || !absl::SimpleAtoi(bounds[1], &hi)))) {
        return Invalid("--host", "ranges must be numbers like [0-2,4]", item);
      }
      if (bounds.size() == 1) hi = lo;
      if (hi < lo) return Invalid("--host", "range end must not be below its start", item);
      if (hi - lo > 4096) return Invalid("--host", "range must expand to at most 4096 hosts", item);
      const size_t width = bounds[0].size();  // host[00-03] keeps the zero padding
      for (uint64_t n = lo; n <= hi; ++n) {
        std::string num = absl::StrCat(n);
        if (bounds[0].size() > 1 && bounds[0][0] == '0' && num.size() < width) {
          num = std::string(width - num.size(), '0') + num;
        }
        hosts.push_back(absl::StrCat(prefix, num, suffix));
      }
    }
  }
  return hosts;
}

absl::StatusOr<PoprunOptions> ParseCommandLine(const std::vector<std::string>& args) {
  std::vector<Token> tokens;
  std::vector<std::string> command;
  if (absl::Status s = Tokenize(args, tokens, command); !s.ok()) return s;
  PoprunOptions o;
  std::string import_path, export_path;
  for (const Token& t : tokens) {
    if (t.spec->name() == "import-config") import_path = t.value;
    if (t.spec->name() == "export-config") export_path = t.value;
  }
  if (!import_path.empty() && !export_path.empty()) {
    return absl::InvalidArgumentError(
        "--export-config: cannot be used together with --import-config");
  }
  if (!import_path.empty()) {
    if (absl::Status s = ApplyConfigFile(import_path, o); !s.ok()) return s;
  }
  Applier applier(o);
  bool host_given = false, host_file_given = false;
  for (const Token& t : tokens) {
    if (t.spec->name() == "host") host_given = true;
    if (t.spec->name() == "host-file") host_file_given = true;
    if (absl::Status s = applier.Apply(*t.spec, t.value); !s.ok()) return s;
  }
  if (host_given && host_file_given) {
    return absl::InvalidArgumentError("--host-file: mutually exclusive with --host/-H");
  }
  if (!command.empty()) o.command = command;
  if (!o.host_file.empty()) {
    if (absl::Status s = ReadHostFile(o); !s.ok()) return s;
  }
  if (o.command.empty() && !o.help && !o.version_format.has_value()) {
    return absl::InvalidArgumentError("program: missing; usage: poprun [options] program [args]");
  }
  return o;
}

std::string SerializeConfig(const PoprunOptions& o) {
  std::ostringstream out;
  out << "# poprun configuration (poprun --import-config FILE)\n";
  auto line = [&](const std::string& name, const std::string& value) {
    out << name << " = " << value << "\n";
  };
  auto yes_no = [](bool b) { return std::string(b ? "yes" : "no"); };
  line("num-replicas", absl::StrCat(o.num_replicas));
  line("ipus-per-replica", absl::StrCat(o.ipus_per_replica));
  line("num-instances", absl::StrCat(o.num_instances));
  if (o.num_ilds > 0) line("num-ilds", absl::StrCat(o.num_ilds));
  if (!o.host_file.empty()) {
    line("host-file", o.host_file);
  } else if (!o.hosts.empty()) {
    line("host", absl::StrJoin(o.hosts, ","));
  }
  if (o.vipu_server_host) line("vipu-server-host", *o.vipu_server_host);
  if (o.vipu_server_port) line("vipu-server-port", absl::StrCat(*o.vipu_server_port));
  if (o.vipu_server_timeout) line("vipu-server-timeout", absl::StrCat(*o.vipu_server_timeout));
  if (!o.vipu_partition.empty()) line("vipu-partition", o.vipu_partition);
  line("vipu-partition-attempts", absl::StrCat(o.vipu_partition_attempts));
  if (!o.vipu_allocation.empty()) line("vipu-allocation", o.vipu_allocation);
  if (!o.vipu_cluster.empty()) line("vipu-cluster", o.vipu_cluster);
  line("update-partition", yes_no(o.update_partition));
  if (o.reset_partition) line("reset-partition", yes_no(*o.reset_partition));
  line("remove-partition", yes_no(o.remove_partition));
  if (!o.sync_type.empty()) line("sync-type", o.sync_type);
  if (o.executable_cache_path) line("executable-cache-path", *o.executable_cache_path);
  // One word per line: the value round-trips whatever it contains.
  for (const std::string& a : o.mpi_global_args) line("mpi-global-args", a);
  for (const std::string& a : o.mpi_local_args) line("mpi-local-args", a);
  for (const auto& [instance, args] : o.instance_mpi_local_args) {
    for (const std::string& a : args)
      line("instance-mpi-local-args", absl::StrCat(instance, ":", a));
  }
  if (!o.autoreport_dir.empty()) line("autoreport-dir", o.autoreport_dir);
  line("process-placement", ProcessPlacementName(o.process_placement));
  line("print-topology", yes_no(o.print_topology));
  if (o.only_output_from_instance) {
    line("only-output-from-instance", absl::StrCat(*o.only_output_from_instance));
  }
  line("offline-mode", yes_no(o.offline_mode));
  line("allow-run-as-root", yes_no(o.allow_run_as_root));
  if (!o.host_subnet.empty()) line("host-subnet", o.host_subnet);
  line("synchronise-python-venv", yes_no(o.synchronise_python_venv));
  line("synchronise-poplar-sdk", yes_no(o.synchronise_poplar_sdk));
  line("distribute-ssh-key", yes_no(o.distribute_ssh_key));
  for (const std::string& c : o.command) line("command", c);
  return out.str();
}

absl::StatusOr<std::string> ExportConfig(const PoprunOptions& options, const std::string& path) {
  std::string target = path;
  struct stat st;
  if (!options.overwrite_config && ::stat(path.c_str(), &st) == 0) {
    char stamp[32];
    std::time_t now = std::time(nullptr);
    std::strftime(stamp, sizeof(stamp), "%Y%m%d-%H%M%S", std::localtime(&now));
    target = absl::StrCat(path, ".", stamp);
    for (int n = 1; ::stat(target.c_str(), &st) == 0; ++n) {
      target = absl::StrCat(path, ".", stamp, ".", n);
    }
  }
  std::ofstream out(target, std::ios::trunc);
  out << SerializeConfig(options);
  out.close();
  if (!out) {
    return absl::InvalidArgumentError(
        absl::StrCat("--export-config: cannot write file, got ", target));
  }
  return target;
}

std::string HelpText() {
  std::ostringstream out;
  out << "Usage: poprun [options] program [program args]\n\nOptions:\n";
  for (const Option& s : Specs()) {
    std::string names;
    for (const std::string& n : s.names()) {
      if (!names.empty()) names += ", ";
      names += n.size() == 1 ? "-" + n : "--" + n;
    }
    if (s.takes_value()) names += absl::StrCat(" ", s.arg());
    out << "  " << names;
    if (names.size() < 32) {
      out << std::string(32 - names.size(), ' ');
    } else {
      out << "\n" << std::string(34, ' ');
    }
    out << s.help() << "\n";
  }
  out << "\nBoolean options take yes/no, on/off, 1/0 or true/false.\n"
         "POPRUN_LOG_LEVEL (TRACE DEBUG INFO WARN ERR OFF) sets the log level.\n";
  return out.str();
}

}  // namespace vipu::poprun
