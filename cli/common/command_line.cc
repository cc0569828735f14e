// The `vipu` and `vipu-admin` command lines: verbs, nouns, flags and exit codes, in-process.
#include "cli/common/command_line.h"

#include <CLI/CLI.hpp>
#include <functional>
#include <memory>
#include <optional>
#include <utility>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "absl/strings/match.h"
#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "absl/strings/str_replace.h"
#include "absl/strings/str_split.h"
#include "base/status_macros.h"
#include "cli/common/admin_commands.h"
#include "cli/common/connection.h"
#include "cli/common/health_commands.h"
#include "cli/common/migrate_command.h"
#include "cli/common/partition_commands.h"
#include "cli/common/user_commands.h"
#include "fabric/enum_names.h"
#include "fabric/types.h"
#include "fabric/validation.h"
#include "wire/metadata_keys.h"
#include "wire/server_members.h"

#ifndef VIPU_VERSION
#define VIPU_VERSION "unknown"
#endif

namespace vipu::cli {
namespace {

namespace fabric = ::vipu::fabric;

// A value given on the command line as text; `option` tells whether it was.
struct TextOption {
  std::string value;
  CLI::Option* option = nullptr;
  bool given() const { return option != nullptr && option->count() > 0; }
};

void AddText(CLI::App* app, const std::string& names, TextOption* o, const std::string& help) {
  o->option = app->add_option(names, o->value, help);
}

absl::StatusOr<uint32_t> ParseNumber(const std::string& flag, const std::string& text, uint32_t min,
                                     uint32_t max) {
  uint64_t n = 0;
  if (!absl::SimpleAtoi(text, &n) || n < min || n > max) {
    std::string rule = min == 0 ? absl::StrCat("must be an integer in 0..", max)
                                : absl::StrCat("must be an integer in ", min, "..", max);
    return absl::InvalidArgumentError(
        absl::StrCat(flag, ": ", rule, ", got ", text.empty() ? "an empty value" : text));
  }
  return static_cast<uint32_t>(n);
}

absl::Status ParseNumberInto(const std::string& flag, const TextOption& o, uint32_t min,
                             uint32_t max, uint32_t* out) {
  if (!o.given()) return absl::OkStatus();
  ASSIGN_OR_RETURN(auto n, ParseNumber(flag, o.value, min, max));
  *out = n;
  return absl::OkStatus();
}

absl::Status Prefix(const std::string& flag, const absl::Status& s) {
  if (s.ok()) return s;
  return absl::InvalidArgumentError(absl::StrCat(flag, ": ", s.message()));
}

// For enum spellings the flag names the field already: "--routing: unknown
// value ..." rather than "--routing: routing: unknown value ...".
absl::Status EnumError(const std::string& flag, const absl::Status& s) {
  absl::string_view message = s.message();
  if (size_t colon = message.find(": "); colon != absl::string_view::npos) {
    message.remove_prefix(colon + 2);
  }
  return absl::InvalidArgumentError(absl::StrCat(flag, ": ", message));
}

// "a,b,c" -> ids, each validated; `field` names one element ("agent id").
absl::StatusOr<std::vector<std::string>> ParseIdList(const std::string& flag,
                                                     const std::string& field,
                                                     const std::string& text) {
  std::vector<std::string> ids = absl::StrSplit(text, ',');
  for (const auto& id : ids) {
    if (id.empty()) {
      return absl::InvalidArgumentError(
          absl::StrCat(flag, ": empty ", field, " in '", text, "' (expected a,b,c)"));
    }
    if (absl::Status s = fabric::ValidateId(field, id); !s.ok()) return Prefix(flag, s);
  }
  return ids;
}

std::string OneLine(std::string s) { return absl::StrReplaceAll(s, {{"\n", "; "}}); }

// One command's options and what it does with them: the flags it adds to its
// subcommand, the checks that need no server and the RPC work. CLI11 fills
// the fields while parsing; of all the commands built, only the one the line
// names is validated and then run, each once, on the parser's thread.
class CommandOptions {
 public:
  virtual ~CommandOptions() = default;

  // Adds the command's flags to `app`, in the order --help lists them.
  virtual void AddFlags(CLI::App* app) { (void)app; }

  // Called before any connection is made, with the command's id (already
  // validated; "" for commands without one). INVALID_ARGUMENT whose message
  // starts with the flag at fault; the line is then a usage error.
  virtual absl::Status Validate(const std::string& id) {
    (void)id;
    return absl::OkStatus();
  }

  // The RPCs and their output on io.out, after Validate succeeded; the
  // failure as a status otherwise (printed after the command's label).
  virtual absl::Status Run(Connection& conn, const CommandIo& io, const std::string& id) = 0;
};

using RunFn = std::function<absl::Status(Connection&, const CommandIo&, const std::string& id)>;

// A command without flags of its own: `run` is all it does.
class NoOptions : public CommandOptions {
 public:
  explicit NoOptions(RunFn run) : run_(std::move(run)) {}
  absl::Status Run(Connection& conn, const CommandIo& io, const std::string& id) override {
    return run_(conn, io, id);
  }

 private:
  RunFn run_;
};

std::unique_ptr<CommandOptions> Runs(RunFn run) {
  return std::make_unique<NoOptions>(std::move(run));
}

// One `<verb> <noun>` command: its subcommand, the id positional (for
// commands on one object) and its options.
struct Command {
  CLI::App* app = nullptr;
  std::string verb;
  std::string noun;      // as named in messages: singular with an id, plural for lists
  std::string id_field;  // "partition id"; empty for commands without an id
  std::string id;        // filled by the parser
  std::unique_ptr<CommandOptions> options;

  std::string Label() const {
    return id.empty() ? absl::StrCat(verb, " ", noun)
                      : absl::StrCat(verb, " ", noun, " (", id, ")");
  }
};

// `list partitions [--allocation ID]`.
class ListPartitionsOptions : public CommandOptions {
 public:
  explicit ListPartitionsOptions(PartitionTableKind table) : table_(table) {}
  void AddFlags(CLI::App* app) override {
    AddText(app, "--allocation", &allocation_, "only partitions of this allocation");
  }
  absl::Status Validate(const std::string&) override {
    if (!allocation_.given()) return absl::OkStatus();
    return Prefix("--allocation", fabric::ValidateId("allocation id", allocation_.value));
  }
  absl::Status Run(Connection& conn, const CommandIo& io, const std::string&) override {
    return ListPartitions(conn, io, allocation_.value, table_);
  }

 private:
  PartitionTableKind table_;
  TextOption allocation_;
};

// `list ipu-attrs [--agents a,b,c]`.
class ListIpuAttrsOptions : public CommandOptions {
 public:
  void AddFlags(CLI::App* app) override { AddText(app, "--agents", &agents_text_, "agents a,b,c"); }
  absl::Status Validate(const std::string&) override {
    if (!agents_text_.given()) return absl::OkStatus();
    ASSIGN_OR_RETURN(auto ids, ParseIdList("--agents", "agent id", agents_text_.value));
    agents_ = ids;
    return absl::OkStatus();
  }
  absl::Status Run(Connection& conn, const CommandIo& io, const std::string&) override {
    return ListIpuAttributes(conn, io, agents_);
  }

 private:
  TextOption agents_text_;
  std::vector<std::string> agents_;
};

// `create partition ID --size N ...`: the flags become a fabric::PartitionRequest.
class CreatePartitionOptions : public CommandOptions {
 public:
  void AddFlags(CLI::App* a) override {
    AddText(a, "--size", &size_, "number of IPUs (required)");
    AddText(a, "--allocation", &allocation_, "allocation to take the IPUs from");
    AddText(a, "--cluster", &cluster_, "cluster (deprecated selector)");
    AddText(a, "--num-gcds", &num_gcds_, "graph compile domains (default 1)");
    AddText(a, "--total-num-replicas,--gcd-sync-replicas", &num_replicas_,
            "total replicas (default num-gcds)");
    AddText(a, "--num-ilds", &num_ilds_, "IPU-Link domains to span");
    AddText(a, "--sync-type", &sync_type_,
            "c2-compatible | pod-native-default | pod-native-replicated-pipeline");
    AddText(a, "--routing", &routing_, "dnc | swnc | btnc | ringswnc (ring-swnc)");
    AddText(a, "--gw-routing", &gw_routing_, "ring | swring");
    a->add_flag("--reconfigurable", request_.reconfigurable, "reconfigurable partition");
    a->add_flag("--disable-auto-reset", request_.disable_auto_reset, "no automatic resets");
    a->add_flag("--relocatable", request_.relocatable, "may move to other IPUs on reset");
    a->add_flag("--shared", shared_,
                "visible to every user of the allocation, not only to its creator");
  }
  absl::Status Validate(const std::string& id) override {
    request_.id = id;
    if (!size_.given()) return absl::InvalidArgumentError("--size: is required");
    RETURN_IF_ERROR(ParseNumberInto("--size", size_, 1, 65536, &request_.size));
    RETURN_IF_ERROR(ParseNumberInto("--num-gcds", num_gcds_, 1, 65536, &request_.num_gcds));
    RETURN_IF_ERROR(ParseNumberInto("--total-num-replicas", num_replicas_, 1, 1u << 24,
                                    &request_.num_replicas));
    RETURN_IF_ERROR(ParseNumberInto("--num-ilds", num_ilds_, 1, 1024, &request_.num_ilds));
    if (allocation_.given()) {
      RETURN_IF_ERROR(
          Prefix("--allocation", fabric::ValidateId("allocation id", allocation_.value)));
      request_.allocation_id = allocation_.value;
    }
    if (cluster_.given()) {
      RETURN_IF_ERROR(Prefix("--cluster", fabric::ValidateId("cluster id", cluster_.value)));
      request_.cluster_id = cluster_.value;
    }
    if (sync_type_.given()) {
      auto t = fabric::ParseSyncType(sync_type_.value);
      if (!t.ok()) return EnumError("--sync-type", t.status());
      request_.sync_type = *t;
    }
    if (routing_.given()) {
      auto r = fabric::ParseRoutingType(routing_.value);
      if (!r.ok()) return EnumError("--routing", r.status());
      request_.routing = *r;
    }
    if (gw_routing_.given()) {
      auto r = fabric::ParseGwRoutingType(gw_routing_.value);
      if (!r.ok()) return EnumError("--gw-routing", r.status());
      request_.gw_routing = *r;
    }
    return absl::OkStatus();
  }
  absl::Status Run(Connection& conn, const CommandIo& io, const std::string&) override {
    // Shared partitions: our extension, carried as metadata (docs/security.md).
    if (shared_) conn.AddCallMetadata(wire::kShareMetadata, "true");
    return CreatePartition(conn, io, request_);
  }

 private:
  TextOption size_, allocation_, cluster_, num_gcds_, num_replicas_, num_ilds_, sync_type_,
      routing_, gw_routing_;
  bool shared_ = false;
  fabric::PartitionRequest request_;
};

// `get partition ID [--ipuof-configs [--gcd N]]`.
class GetPartitionOptions : public CommandOptions {
 public:
  void AddFlags(CLI::App* app) override {
    AddText(app, "--gcd", &gcd_text_, "GCD index for --ipuof-configs (default 0)");
    app->add_flag("--ipuof-configs,--ipu-configs", ipuof_, "print the GCD's ipuof config JSON");
  }
  absl::Status Validate(const std::string&) override {
    if (gcd_text_.given() && !ipuof_) {
      return absl::InvalidArgumentError("--gcd: only meaningful with --ipuof-configs");
    }
    return ParseNumberInto("--gcd", gcd_text_, 0, 65535, &gcd_);
  }
  absl::Status Run(Connection& conn, const CommandIo& io, const std::string& id) override {
    if (ipuof_) return GetPartitionIpuofConfig(conn, io, id, gcd_);
    return GetPartition(conn, io, id);
  }

 private:
  TextOption gcd_text_;
  bool ipuof_ = false;
  uint32_t gcd_ = 0;
};

// `remove partition ID [--force]`.
class RemovePartitionOptions : public CommandOptions {
 public:
  void AddFlags(CLI::App* app) override {
    app->add_flag("--force", force_, "remove even when agents report errors");
  }
  absl::Status Run(Connection& conn, const CommandIo& io, const std::string& id) override {
    return RemovePartition(conn, io, id, force_);
  }

 private:
  bool force_ = false;
};

// `reset partition ID [--relocatable]`.
class ResetPartitionOptions : public CommandOptions {
 public:
  void AddFlags(CLI::App* app) override {
    app->add_flag("--relocatable", relocatable_, "allow moving to other IPUs");
  }
  absl::Status Run(Connection& conn, const CommandIo& io, const std::string& id) override {
    return ResetPartition(conn, io, id, relocatable_);
  }

 private:
  bool relocatable_ = false;
};

// `backup FILE`: the server writes the copy, so FILE is a path on the
// server's machine and must be absolute.
class BackupOptions : public CommandOptions {
 public:
  void AddFlags(CLI::App* app) override {
    app->add_option("file", path_, "absolute path on the server's machine");
  }
  absl::Status Validate(const std::string&) override {
    if (path_.empty()) return absl::InvalidArgumentError("backup: missing FILE");
    if (path_.front() != '/') {
      return absl::InvalidArgumentError(absl::StrCat(
          "FILE: must be an absolute path on the server's machine, got '", path_, "'"));
    }
    return absl::OkStatus();
  }
  absl::Status Run(Connection& conn, const CommandIo& io, const std::string&) override {
    return BackupDatabase(conn, io, path_);
  }

 private:
  std::string path_;
};

// `move leadership [--to HOST:PORT]`: a highly available control plane's
// leader hands over to that member, or to the standby next in line.
class MoveLeadershipOptions : public CommandOptions {
 public:
  void AddFlags(CLI::App* app) override {
    to_flag_ =
        app->add_option("--to", to_,
                        "the member to lead: its user or admin address, HOST:PORT (default: the "
                        "standby next in line)");
  }
  absl::Status Validate(const std::string&) override {
    if (to_.empty()) {
      if (to_flag_->count() == 0) return absl::OkStatus();
      return absl::InvalidArgumentError(
          "--to: must not be empty (leave it out for the standby next in line)");
    }
    absl::StatusOr<wire::ServerMember> member = wire::ParseServerMember(to_);
    if (!member.ok()) {
      return absl::InvalidArgumentError(absl::StrCat("--to: ", member.status().message()));
    }
    to_ = member->Target();
    return absl::OkStatus();
  }
  absl::Status Run(Connection& conn, const CommandIo& io, const std::string&) override {
    return MoveLeadership(conn, io, to_, absl::Seconds(conn.config().timeout_seconds));
  }

 private:
  CLI::Option* to_flag_ = nullptr;
  std::string to_;
};

// `migrate --from-db FILE --etcd-endpoints URLS`: no server is involved,
// the file and etcd are opened here (cli/common/migrate_command.h).
class MigrateOptions : public CommandOptions {
 public:
  void AddFlags(CLI::App* app) override {
    app->add_option("--from-db", request_.from_db, "SQLite file of a stopped vipu-server");
    app->add_option("--etcd-endpoints", request_.etcd_endpoints,
                    "etcd members: comma-separated http://HOST:PORT or https://HOST:PORT");
    app->add_option("--etcd-prefix", request_.etcd_prefix, "key prefix of the state in etcd")
        ->capture_default_str();
    app->add_option("--etcd-ca", request_.etcd_ca, "CA certificate of the etcd members (https)");
    app->add_option("--etcd-cert", request_.etcd_cert, "client certificate for etcd (https)");
    app->add_option("--etcd-key", request_.etcd_key, "key of --etcd-cert");
  }
  absl::Status Validate(const std::string&) override { return ValidateMigrate(request_); }
  absl::Status Run(Connection&, const CommandIo& io, const std::string&) override {
    return Migrate(request_, io.out);
  }

 private:
  MigrateRequest request_;
};

// `create agent ID --host H [--port P]`.
class CreateAgentOptions : public CommandOptions {
 public:
  void AddFlags(CLI::App* app) override {
    AddText(app, "--host", &host_, "agent's management address (required)");
    AddText(app, "--port", &port_text_, "agent's API port (default 8080)");
  }
  absl::Status Validate(const std::string&) override {
    if (!host_.given() || host_.value.empty()) {
      return absl::InvalidArgumentError("--host: is required and must not be empty");
    }
    return ParseNumberInto("--port", port_text_, 1, 65535, &port_);
  }
  absl::Status Run(Connection& conn, const CommandIo& io, const std::string& id) override {
    return CreateAgent(conn, io, id, host_.value, port_);
  }

 private:
  TextOption host_, port_text_;
  uint32_t port_ = 8080;
};

// `create cluster ID --agents a,b,c [--num-ipulinkdomains N] [--topology T]
// [--cluster-topology T]`.
class CreateClusterCommandOptions : public CommandOptions {
 public:
  void AddFlags(CLI::App* a) override {
    AddText(a, "--agents", &agents_, "ordered agents a,b,c (required)");
    AddText(a, "--num-ipulinkdomains", &ilds_, "IPU-Link domains (default 1)");
    AddText(a, "--topology", &topology_, "torus | mesh (default torus)");
    AddText(a, "--cluster-topology", &gw_topology_, "looped | switched (default looped)");
  }
  absl::Status Validate(const std::string& id) override {
    cluster_.id = id;
    if (!agents_.given()) return absl::InvalidArgumentError("--agents: is required");
    ASSIGN_OR_RETURN(auto agents, ParseIdList("--agents", "agent id", agents_.value));
    cluster_.agents = agents;
    RETURN_IF_ERROR(
        ParseNumberInto("--num-ipulinkdomains", ilds_, 1, 1024, &cluster_.num_ipulink_domains));
    if (topology_.given()) {
      auto t = fabric::ParseIldTopology(topology_.value);
      if (!t.ok()) return EnumError("--topology", t.status());
      cluster_.topology = static_cast<vipuadmin::IpuLinkTopology>(*t);
    }
    if (gw_topology_.given()) {
      auto t = fabric::ParseClusterTopology(gw_topology_.value);
      if (!t.ok()) return EnumError("--cluster-topology", t.status());
      cluster_.cluster_topology = static_cast<vipuadmin::GwLinkTopology>(*t);
    }
    return absl::OkStatus();
  }
  absl::Status Run(Connection& conn, const CommandIo& io, const std::string&) override {
    return CreateCluster(conn, io, cluster_);
  }

 private:
  TextOption agents_, ilds_, topology_, gw_topology_;
  CreateClusterOptions cluster_;
};

// `create allocation ID --cluster C [--agents a,b]`.
class CreateAllocationOptions : public CommandOptions {
 public:
  void AddFlags(CLI::App* app) override {
    AddText(app, "--cluster", &cluster_, "cluster (required)");
    AddText(app, "--agents", &agents_text_, "agents a,b (default: all of the cluster)");
  }
  absl::Status Validate(const std::string&) override {
    if (!cluster_.given()) return absl::InvalidArgumentError("--cluster: is required");
    RETURN_IF_ERROR(Prefix("--cluster", fabric::ValidateId("cluster id", cluster_.value)));
    if (agents_text_.given()) {
      ASSIGN_OR_RETURN(auto agents, ParseIdList("--agents", "agent id", agents_text_.value));
      agents_ = agents;
    }
    return absl::OkStatus();
  }
  absl::Status Run(Connection& conn, const CommandIo& io, const std::string& id) override {
    return CreateAllocation(conn, io, id, cluster_.value, agents_);
  }

 private:
  TextOption cluster_, agents_text_;
  std::vector<std::string> agents_;
};

// `create user ID [--allocations a,b] [--admin]`.
class CreateUserOptions : public CommandOptions {
 public:
  void AddFlags(CLI::App* app) override {
    AddText(app, "--allocations", &allocations_, "allocations a,b the user may use (default: all)");
    app->add_flag("--admin", admin_, "the user may use vipu-admin");
  }
  absl::Status Validate(const std::string&) override {
    if (!allocations_.given()) return absl::OkStatus();
    ASSIGN_OR_RETURN(auto ids, ParseIdList("--allocations", "allocation id", allocations_.value));
    allocation_ids_ = ids;
    return absl::OkStatus();
  }
  absl::Status Run(Connection& conn, const CommandIo& io, const std::string& id) override {
    return CreateUser(conn, io, id, allocation_ids_, admin_, ".");
  }

 private:
  TextOption allocations_;
  std::vector<std::string> allocation_ids_;
  bool admin_ = false;
};

// `update user ID` with at least one of --allocations, --all-allocations,
// --admin, --no-admin, --rotate-key.
class UpdateUserOptions : public CommandOptions {
 public:
  void AddFlags(CLI::App* app) override {
    AddText(app, "--allocations", &allocations_, "replace the allocations with a,b");
    app->add_flag("--all-allocations", all_allocations_,
                  "grant every allocation (as create user without --allocations)");
    app->add_flag("--admin", admin_, "make the user an admin");
    app->add_flag("--no-admin", no_admin_, "take the admin flag away");
    app->add_flag("--rotate-key", changes_.rotate_key,
                  "issue a new access key, printed once; the old key stops working");
  }
  absl::Status Validate(const std::string&) override {
    if (allocations_.given() && all_allocations_) {
      return absl::InvalidArgumentError(
          "--all-allocations: contradicts --allocations; give one of them");
    }
    if (admin_ && no_admin_) {
      return absl::InvalidArgumentError("--no-admin: contradicts --admin; give one of them");
    }
    if (allocations_.given()) {
      ASSIGN_OR_RETURN(auto ids, ParseIdList("--allocations", "allocation id", allocations_.value));
      changes_.allocations = ids;
    }
    if (all_allocations_) changes_.allocations = std::vector<std::string>();
    if (admin_) changes_.admin = true;
    if (no_admin_) changes_.admin = false;
    if (!changes_.allocations && !changes_.admin && !changes_.rotate_key) {
      return absl::InvalidArgumentError(
          "update user: nothing to change; give --allocations, --all-allocations, --admin, "
          "--no-admin or --rotate-key");
    }
    return absl::OkStatus();
  }
  absl::Status Run(Connection& conn, const CommandIo& io, const std::string& id) override {
    return UpdateUser(conn, io, id, changes_);
  }

 private:
  TextOption allocations_;
  bool all_allocations_ = false;
  bool admin_ = false;
  bool no_admin_ = false;
  UserChanges changes_;
};

// `inject fault AGENT --kind K [--ipu N] [--link N] [--duration-ms N]`.
class InjectFaultOptions : public CommandOptions {
 public:
  void AddFlags(CLI::App* app) override {
    AddText(app, "--kind", &kind_,
            "ipu-error | link-down | agent-crash | agent-hang | clear | partition-lost (required)");
    AddText(app, "--ipu", &ipu_, "IPU# 0..3 (ipu-error)");
    AddText(app, "--link", &link_, "port 0..13 of the machine (link-down)");
    AddText(app, "--duration-ms", &duration_, "hang length in ms, 0 = until cleared (agent-hang)");
  }
  absl::Status Validate(const std::string& id) override {
    FaultFlags flags;
    flags.agent_id = id;
    if (kind_.given()) flags.kind = kind_.value;
    if (ipu_.given()) flags.ipu = ipu_.value;
    if (link_.given()) flags.link = link_.value;
    if (duration_.given()) flags.duration_ms = duration_.value;
    ASSIGN_OR_RETURN(auto parsed, ParseFaultFlags(flags));
    fault_ = parsed;
    return absl::OkStatus();
  }
  absl::Status Run(Connection& conn, const CommandIo& io, const std::string&) override {
    return InjectFault(conn, io, fault_);
  }

 private:
  TextOption kind_, ipu_, link_, duration_;
  fabric::FaultRequest fault_;
};

// `test cluster ID [--force]`.
class TestClusterOptions : public CommandOptions {
 public:
  void AddFlags(CLI::App* app) override {
    app->add_flag("--force", force_, "run even while partitions are on the cluster");
  }
  absl::Status Run(Connection& conn, const CommandIo& io, const std::string& id) override {
    return TestCluster(conn, io, id, force_);
  }

 private:
  bool force_ = false;
};

// Builds and runs one CLI.
class CommandLine {
 public:
  CommandLine(CliKind kind, std::ostream& out, std::ostream& err, const Environment& env)
      : kind_(kind),
        program_(kind == CliKind::kVipu ? "vipu" : "vipu-admin"),
        app_(kind == CliKind::kVipu ? "vipu: the V-IPU user command line"
                                    : "vipu-admin: the V-IPU administration command line",
             program_),
        out_(out),
        err_(err),
        env_(env) {
    AddGlobalFlags();
    AddUserCommands();
    if (kind_ == CliKind::kVipuAdmin) AddAdminCommands();
  }

  int Run(const std::vector<std::string>& args) {
    try {
      // CLI11 wants the arguments reversed and without the program name.
      std::vector<std::string> reversed(args.rbegin(), args.rend());
      if (!reversed.empty()) reversed.pop_back();
      app_.parse(reversed);
    } catch (const CLI::ParseError& e) {
      if (e.get_exit_code() == 0) return app_.exit(e, out_, err_);  // --help
      // `vipu list foo`, `vipu delete partition p1`: name the objects or
      // commands there are rather than CLI11's "arguments were not
      // expected", which lists the words in reverse.
      if (dynamic_cast<const CLI::ExtrasError*>(&e) != nullptr) {
        bool verb_parsed = false;
        for (CLI::App* verb : verbs_) {
          if (!verb->parsed()) continue;
          if (!AnyNounParsed(verb)) return UnknownNoun(verb);
          verb_parsed = true;
        }
        return Unexpected(verb_parsed);
      }
      return Usage(e.what());
    }
    if (version_) {
      out_ << program_ << " version " << VIPU_VERSION << "\n";
      return kExitOk;
    }

    Command* command = nullptr;
    for (auto& c : commands_) {
      if (c->app->parsed()) command = c.get();
    }
    if (command == nullptr && !server_version_) {
      for (CLI::App* verb : verbs_) {
        if (verb->parsed()) return UnknownNoun(verb);
      }
      return Usage(absl::StrCat("missing command; expected one of ",
                                absl::StrJoin(VerbNames(), ", "), " (see --help)"));
    }
    if (command != nullptr) {
      if (command->id_field.size() > 0 && command->id.empty()) {
        return Usage(
            absl::StrCat(command->verb, " ", command->noun, ": missing ", command->id_field));
      }
      if (!command->id.empty()) {
        if (absl::Status s = fabric::ValidateId(command->id_field, command->id); !s.ok()) {
          return Usage(s.message());
        }
      }
      if (absl::Status s = command->options->Validate(command->id); !s.ok()) {
        return Usage(s.message());
      }
    }

    ConnectionFlags flags;
    auto take = [](const TextOption& o, std::optional<std::string>* to) {
      if (o.given()) *to = o.value;
    };
    take(api_host_, &flags.api_host);
    take(api_port_, &flags.api_port);
    take(api_timeout_, &flags.api_timeout);
    take(api_user_id_, &flags.api_user_id);
    take(api_access_key_, &flags.api_access_key);
    take(config_, &flags.config_file);
    take(api_tls_ca_, &flags.api_tls_ca);
    take(api_tls_cert_, &flags.api_tls_cert);
    take(api_tls_key_, &flags.api_tls_key);
    auto config = ResolveClientConfig(flags, env_);
    if (!config.ok()) return Usage(config.status().message());

    Connection conn(*config);
    CommandIo io{out_, showjson_, env_.Home()};
    if (server_version_) {
      return Report("server-version", ServerVersion(conn, io));
    }
    return Report(command->Label(), command->options->Run(conn, io, command->id));
  }

 private:
  int Usage(absl::string_view message) {
    err_ << program_ << ": " << OneLine(std::string(message)) << "\n";
    return kExitUsage;
  }

  int Report(const std::string& label, const absl::Status& s) {
    if (s.ok()) return kExitOk;
    err_ << label << ": failure: " << OneLine(std::string(s.message())) << "\n";
    return kExitFailure;
  }

  int UnknownNoun(CLI::App* verb) {
    // Unmatched words fall through to the top level.
    std::vector<std::string> extras = app_.remaining(true);
    std::string what = extras.empty() ? std::string("missing object")
                                      : absl::StrCat("unknown object '", extras.front(), "'");
    return Usage(absl::StrCat(verb->get_name(), ": ", what, "; expected one of ",
                              absl::StrJoin(NounsOf(verb), ", ")));
  }

  // Words no command took, in the order they were given: the first names
  // an unknown command when no command was recognised.
  int Unexpected(bool verb_parsed) {
    std::vector<std::string> extras = app_.remaining(true);
    if (!verb_parsed && !extras.empty() && !absl::StartsWith(extras.front(), "-")) {
      return Usage(absl::StrCat("unknown command '", extras.front(), "'; expected one of ",
                                absl::StrJoin(VerbNames(), ", "), " (see --help)"));
    }
    return Usage(
        absl::StrCat(extras.size() == 1 ? "unexpected argument '" : "unexpected arguments '",
                     absl::StrJoin(extras, " "), "'"));
  }

  static bool AnyNounParsed(CLI::App* verb) {
    for (CLI::App* n : verb->get_subcommands({})) {
      if (n->parsed()) return true;
    }
    return false;
  }

  std::vector<std::string> VerbNames() const {
    std::vector<std::string> names;
    for (CLI::App* v : verbs_) names.push_back(v->get_name());
    return names;
  }
  static std::vector<std::string> NounsOf(CLI::App* verb) {
    std::vector<std::string> names;
    for (CLI::App* n : verb->get_subcommands({})) names.push_back(n->get_name());
    return names;
  }

  void AddGlobalFlags() {
    app_.require_subcommand(0, 1);
    AddText(&app_, "-H,--api-host", &api_host_,
            "vipu-server: comma-separated list of members, each HOST, HOST:PORT, [V6] or "
            "[V6]:PORT, tried in order (default localhost)");
    AddText(&app_, "--api-port", &api_port_,
            "port of the vipu-server members given without one (default 8090)");
    AddText(&app_, "--api-timeout", &api_timeout_,
            "seconds to wait for each call and for partitions to become ACTIVE (default 120)");
    AddText(&app_, "--api-user-id", &api_user_id_, "user id sent to the server");
    AddText(&app_, "--api-access-key", &api_access_key_, "access key sent to the server");
    AddText(&app_, "--api-tls-ca", &api_tls_ca_,
            "CA certificate (PEM) of a --secure vipu-server; enables mutual TLS");
    AddText(&app_, "--api-tls-cert", &api_tls_cert_, "client certificate (PEM) for mutual TLS");
    AddText(&app_, "--api-tls-key", &api_tls_key_, "client certificate's key (PEM)");
    AddText(&app_, "--config", &config_,
            "HCL file with api-host, api-port, ... (default /etc/vipu/vipu-cli.hcl)");
    app_.add_flag("--showjson", showjson_, "print replies as JSON instead of tables");
    app_.add_flag("--server-version", server_version_, "print the server's version and address");
    app_.add_flag("--version", version_, "print this program's version");
  }

  CLI::App* Verb(const std::string& name, const std::string& help) {
    for (CLI::App* v : verbs_) {
      if (v->get_name() == name) return v;
    }
    CLI::App* v = app_.add_subcommand(name, help);
    v->require_subcommand(0, 1);
    v->fallthrough();
    verbs_.push_back(v);
    return v;
  }

  // Adds `<verb> <noun>` with `alias` accepted too; `id_field` non-empty
  // adds the id positional, then `options` adds its flags.
  void Add(const std::string& verb, const std::string& noun, const std::string& alias,
           const std::string& id_field, const std::string& help,
           std::unique_ptr<CommandOptions> options) {
    auto command = std::make_unique<Command>();
    command->verb = verb;
    command->noun = noun;
    command->id_field = id_field;
    CLI::App* v = Verb(verb, absl::StrCat(verb, " an object"));
    command->app = v->add_subcommand(noun, help);
    if (!alias.empty()) command->app->alias(alias);
    command->app->fallthrough();
    if (!id_field.empty()) command->app->add_option("id", command->id, id_field);
    command->options = std::move(options);
    command->options->AddFlags(command->app);
    commands_.push_back(std::move(command));
  }

  void AddUserCommands() {
    PartitionTableKind table =
        kind_ == CliKind::kVipu ? PartitionTableKind::kUser : PartitionTableKind::kAdmin;
    Add("list", "partitions", "partition", "", "list partitions",
        std::make_unique<ListPartitionsOptions>(table));
    Add("list", "allocations", "allocation", "", "list allocations",
        Runs([](Connection& c, const CommandIo& io, const std::string&) {
          return ListAllocations(c, io);
        }));
    Add("list", "ipu-attrs", "ipu-attr", "", "list the IPUs' attributes",
        std::make_unique<ListIpuAttrsOptions>());
    Add("create", "partition", "partitions", "partition id",
        "create a partition, wait until ACTIVE, write its ipuof files",
        std::make_unique<CreatePartitionOptions>());
    Add("get", "partition", "partitions", "partition id",
        "show a partition, or one GCD's ipuof config", std::make_unique<GetPartitionOptions>());
    Add("get", "partition-status", "partitions-status", "partition id", "show a partition's status",
        Runs(GetPartitionStatus));
    Add("remove", "partition", "partitions", "partition id",
        "remove a partition and its ipuof files", std::make_unique<RemovePartitionOptions>());
    Add("reset", "partition", "partitions", "partition id",
        "reset a partition's IPUs and wait until it is ACTIVE",
        std::make_unique<ResetPartitionOptions>());
  }

  void AddAdminCommands() {
    // `backup FILE`: a verb without an object.
    auto backup = std::make_unique<Command>();
    backup->verb = "backup";
    backup->noun = "database";
    backup->app = app_.add_subcommand(
        "backup", "write an online copy of the server's database to FILE on the server's machine");
    backup->app->fallthrough();
    backup->options = std::make_unique<BackupOptions>();
    backup->options->AddFlags(backup->app);
    commands_.push_back(std::move(backup));

    auto migrate = std::make_unique<Command>();
    migrate->verb = "migrate";
    migrate->noun = "database";
    migrate->app = app_.add_subcommand(
        "migrate", "move the state of a stopped vipu-server's SQLite file into etcd (docs/ha.md)");
    migrate->app->fallthrough();
    migrate->options = std::make_unique<MigrateOptions>();
    migrate->options->AddFlags(migrate->app);
    commands_.push_back(std::move(migrate));

    Add("create", "agent", "agents", "agent id", "register an agent",
        std::make_unique<CreateAgentOptions>());
    Add("list", "agents", "agent", "", "list agents",
        Runs([](Connection& c, const CommandIo& io, const std::string&) {
          return ListAgents(c, io);
        }));
    Add("get", "agent", "agents", "agent id", "show an agent", Runs(GetAgent));
    Add("remove", "agent", "agents", "agent id", "remove an agent", Runs(RemoveAgent));

    Add("create", "cluster", "clusters", "cluster id", "create a cluster of agents",
        std::make_unique<CreateClusterCommandOptions>());
    Add("list", "clusters", "cluster", "", "list clusters",
        Runs([](Connection& c, const CommandIo& io, const std::string&) {
          return ListClusters(c, io);
        }));
    Add("remove", "cluster", "clusters", "cluster id", "remove a cluster", Runs(RemoveCluster));

    Add("create", "allocation", "allocations", "allocation id",
        "create an allocation of a cluster's agents", std::make_unique<CreateAllocationOptions>());
    Add("remove", "allocation", "allocations", "allocation id", "remove an allocation",
        Runs(RemoveAllocation));
    AddHealthCommands();
    AddUserAdminCommands();
    Add("move", "leadership", "", "",
        "hand a highly available control plane's leadership to another member (docs/ha.md)",
        std::make_unique<MoveLeadershipOptions>());
  }

  // Users of the secure mode (docs/security.md).
  void AddUserAdminCommands() {
    Add("create", "user", "users", "user id",
        "create a user; prints its access key and writes ID.vipu-cli.hcl",
        std::make_unique<CreateUserOptions>());
    Add("list", "users", "user", "", "list users",
        Runs([](Connection& c, const CommandIo& io, const std::string&) {
          return ListUsers(c, io);
        }));
    Add("remove", "user", "users", "user id", "remove a user", Runs(RemoveUser));
    Add("update", "user", "users", "user id",
        "change a user's allocations or admin flag, or issue a new access key",
        std::make_unique<UpdateUserOptions>());
  }

  // Simulated pods: `inject fault AGENT --kind ...` and `test cluster ID [--force]`.
  void AddHealthCommands() {
    Add("inject", "fault", "faults", "agent id",
        "inject a fault into a simulated IPU-Machine (or clear its faults)",
        std::make_unique<InjectFaultOptions>());
    Add("test", "cluster", "clusters", "cluster id",
        "run the installation tests (cabling, links, traffic) on a cluster",
        std::make_unique<TestClusterOptions>());
  }

  CliKind kind_;
  std::string program_;
  CLI::App app_;
  std::ostream& out_;
  std::ostream& err_;
  const Environment& env_;
  std::vector<CLI::App*> verbs_;
  // Every command's options live here; only one command runs per process.
  std::vector<std::unique_ptr<Command>> commands_;

  // Global flags.
  TextOption api_host_, api_port_, api_timeout_, api_user_id_, api_access_key_, config_;
  TextOption api_tls_ca_, api_tls_cert_, api_tls_key_;
  bool showjson_ = false;
  bool server_version_ = false;
  bool version_ = false;
};

int RunArgv(CliKind kind, int argc, char** argv, std::ostream& out, std::ostream& err,
            const Environment& env) {
  std::vector<std::string> args(argv, argv + argc);
  return RunCli(kind, args, out, err, env);
}

}  // namespace

int RunCli(CliKind kind, const std::vector<std::string>& args, std::ostream& out, std::ostream& err,
           const Environment& env) {
  CommandLine command_line(kind, out, err, env);
  return command_line.Run(args);
}

int RunVipu(int argc, char** argv, std::ostream& out, std::ostream& err, const Environment& env) {
  return RunArgv(CliKind::kVipu, argc, argv, out, err, env);
}

int RunVipuAdmin(int argc, char** argv, std::ostream& out, std::ostream& err,
                 const Environment& env) {
  return RunArgv(CliKind::kVipuAdmin, argc, argv, out, err, env);
}

}  // namespace vipu::cli
