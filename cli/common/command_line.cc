// The `vipu` and `vipu-admin` command lines: verbs, nouns, flags and exit codes, in-process.
#include "cli/common/command_line.h"

#include <CLI/CLI.hpp>
#include <functional>
#include <memory>
#include <utility>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "absl/strings/str_replace.h"
#include "absl/strings/str_split.h"
#include "cli/common/admin_commands.h"
#include "cli/common/connection.h"
#include "cli/common/health_commands.h"
#include "cli/common/partition_commands.h"
#include "cli/common/user_commands.h"
#include "fabric/enum_names.h"
#include "fabric/types.h"
#include "fabric/validation.h"
#include "server/auth/metadata_keys.h"

#ifndef VIPU_VERSION
#define VIPU_VERSION "unknown"
#endif

namespace vipu::cli {
namespace {

namespace fabric = ::vipu::fabric;

using RunFn = std::function<absl::Status(Connection&, const CommandIo&)>;

// One `<verb> <noun>` command: its subcommand, the id positional (for
// commands on one object), local validation and the RPC work.
struct Command {
  CLI::App* app = nullptr;
  std::string verb;
  std::string noun;      // as named in messages: singular with an id, plural for lists
  std::string id_field;  // "partition id"; empty for commands without an id
  std::string id;        // filled by the parser
  std::function<absl::Status()> validate;  // filled by the builder; may be empty
  RunFn run;

  std::string Label() const {
    return id.empty() ? absl::StrCat(verb, " ", noun)
                      : absl::StrCat(verb, " ", noun, " (", id, ")");
  }
};

// A value given on the command line as text; `option` tells whether it was.
struct TextOption {
  std::string value;
  CLI::Option* option = nullptr;
  bool given() const { return option != nullptr && option->count() > 0; }
};

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
  auto n = ParseNumber(flag, o.value, min, max);
  if (!n.ok()) return n.status();
  *out = *n;
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
      // `vipu list foo`: name the verb's objects rather than CLI11's
      // "argument was not expected".
      if (dynamic_cast<const CLI::ExtrasError*>(&e) != nullptr) {
        for (CLI::App* verb : verbs_) {
          if (verb->parsed() && !AnyNounParsed(verb)) return UnknownNoun(verb);
        }
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
      if (command->validate) {
        if (absl::Status s = command->validate(); !s.ok()) return Usage(s.message());
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
    // Shared partitions: our extension, carried as metadata (docs/security.md).
    if (create_shared_) conn.AddCallMetadata(server::auth::kShareMetadata, "true");
    CommandIo io{out_, showjson_, env_.Home()};
    if (server_version_) {
      return Report("server-version", ServerVersion(conn, io));
    }
    return Report(command->Label(), command->run(conn, io));
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

  void AddText(CLI::App* app, const std::string& names, TextOption* o, const std::string& help) {
    o->option = app->add_option(names, o->value, help);
  }

  void AddGlobalFlags() {
    app_.require_subcommand(0, 1);
    AddText(&app_, "-H,--api-host", &api_host_, "vipu-server host (default localhost)");
    AddText(&app_, "--api-port", &api_port_, "vipu-server port (default 8090)");
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
  // adds the id positional.
  Command* Add(const std::string& verb, const std::string& noun, const std::string& alias,
               const std::string& id_field, const std::string& help) {
    auto command = std::make_unique<Command>();
    command->verb = verb;
    command->noun = noun;
    command->id_field = id_field;
    CLI::App* v = Verb(verb, absl::StrCat(verb, " an object"));
    command->app = v->add_subcommand(noun, help);
    if (!alias.empty()) command->app->alias(alias);
    command->app->fallthrough();
    if (!id_field.empty()) command->app->add_option("id", command->id, id_field);
    commands_.push_back(std::move(command));
    return commands_.back().get();
  }

  void AddUserCommands() {
    PartitionTableKind table =
        kind_ == CliKind::kVipu ? PartitionTableKind::kUser : PartitionTableKind::kAdmin;

    Command* list_partitions = Add("list", "partitions", "partition", "", "list partitions");
    auto* allocation = list_partitions->app->add_option("--allocation", list_allocation_,
                                                        "only partitions of this allocation");
    list_partitions->validate = [this, allocation]() {
      if (allocation->count() == 0) return absl::OkStatus();
      return Prefix("--allocation", fabric::ValidateId("allocation id", list_allocation_));
    };
    list_partitions->run = [this, table](Connection& c, const CommandIo& io) {
      return ListPartitions(c, io, list_allocation_, table);
    };

    Command* list_allocations = Add("list", "allocations", "allocation", "", "list allocations");
    list_allocations->run = [](Connection& c, const CommandIo& io) {
      return ListAllocations(c, io);
    };

    Command* attrs = Add("list", "ipu-attrs", "ipu-attr", "", "list the IPUs' attributes");
    auto* agents = attrs->app->add_option("--agents", attr_agents_text_, "agents a,b,c");
    attrs->validate = [this, agents]() {
      if (agents->count() == 0) return absl::OkStatus();
      auto ids = ParseIdList("--agents", "agent id", attr_agents_text_);
      if (!ids.ok()) return ids.status();
      attr_agents_ = *ids;
      return absl::OkStatus();
    };
    attrs->run = [this](Connection& c, const CommandIo& io) {
      return ListIpuAttributes(c, io, attr_agents_);
    };

    AddCreatePartition();

    Command* get = Add("get", "partition", "partitions", "partition id",
                       "show a partition, or one GCD's ipuof config");
    AddText(get->app, "--gcd", &get_gcd_, "GCD index for --ipuof-configs (default 0)");
    get->app->add_flag("--ipuof-configs,--ipu-configs", get_ipuof_,
                       "print the GCD's ipuof config JSON");
    get->validate = [this]() {
      if (get_gcd_.given() && !get_ipuof_) {
        return absl::InvalidArgumentError("--gcd: only meaningful with --ipuof-configs");
      }
      return ParseNumberInto("--gcd", get_gcd_, 0, 65535, &gcd_);
    };
    get->run = [this, get](Connection& c, const CommandIo& io) {
      if (get_ipuof_) return GetPartitionIpuofConfig(c, io, get->id, gcd_);
      return GetPartition(c, io, get->id);
    };

    Command* status = Add("get", "partition-status", "partitions-status", "partition id",
                          "show a partition's status");
    status->run = [status](Connection& c, const CommandIo& io) {
      return GetPartitionStatus(c, io, status->id);
    };

    Command* remove = Add("remove", "partition", "partitions", "partition id",
                          "remove a partition and its ipuof files");
    remove->app->add_flag("--force", remove_force_, "remove even when agents report errors");
    remove->run = [this, remove](Connection& c, const CommandIo& io) {
      return RemovePartition(c, io, remove->id, remove_force_);
    };

    Command* reset = Add("reset", "partition", "partitions", "partition id",
                         "reset a partition's IPUs and wait until it is ACTIVE");
    reset->app->add_flag("--relocatable", reset_relocatable_, "allow moving to other IPUs");
    reset->run = [this, reset](Connection& c, const CommandIo& io) {
      return ResetPartition(c, io, reset->id, reset_relocatable_);
    };
  }

  void AddCreatePartition() {
    Command* create = Add("create", "partition", "partitions", "partition id",
                          "create a partition, wait until ACTIVE, write its ipuof files");
    CLI::App* a = create->app;
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
    a->add_flag("--reconfigurable", create_.reconfigurable, "reconfigurable partition");
    a->add_flag("--disable-auto-reset", create_.disable_auto_reset, "no automatic resets");
    a->add_flag("--relocatable", create_.relocatable, "may move to other IPUs on reset");
    a->add_flag("--shared", create_shared_,
                "visible to every user of the allocation, not only to its creator");
    create->validate = [this, create]() -> absl::Status {
      create_.id = create->id;
      if (!size_.given()) return absl::InvalidArgumentError("--size: is required");
      absl::Status s = ParseNumberInto("--size", size_, 1, 65536, &create_.size);
      if (s.ok()) s = ParseNumberInto("--num-gcds", num_gcds_, 1, 65536, &create_.num_gcds);
      if (s.ok()) {
        s = ParseNumberInto("--total-num-replicas", num_replicas_, 1, 1u << 24,
                            &create_.num_replicas);
      }
      if (s.ok()) s = ParseNumberInto("--num-ilds", num_ilds_, 1, 1024, &create_.num_ilds);
      if (!s.ok()) return s;
      if (allocation_.given()) {
        s = Prefix("--allocation", fabric::ValidateId("allocation id", allocation_.value));
        if (!s.ok()) return s;
        create_.allocation_id = allocation_.value;
      }
      if (cluster_.given()) {
        s = Prefix("--cluster", fabric::ValidateId("cluster id", cluster_.value));
        if (!s.ok()) return s;
        create_.cluster_id = cluster_.value;
      }
      if (sync_type_.given()) {
        auto t = fabric::ParseSyncType(sync_type_.value);
        if (!t.ok()) return EnumError("--sync-type", t.status());
        create_.sync_type = *t;
      }
      if (routing_.given()) {
        auto r = fabric::ParseRoutingType(routing_.value);
        if (!r.ok()) return EnumError("--routing", r.status());
        create_.routing = *r;
      }
      if (gw_routing_.given()) {
        auto r = fabric::ParseGwRoutingType(gw_routing_.value);
        if (!r.ok()) return EnumError("--gw-routing", r.status());
        create_.gw_routing = *r;
      }
      return absl::OkStatus();
    };
    create->run = [this](Connection& c, const CommandIo& io) {
      return CreatePartition(c, io, create_);
    };
  }

  void AddAdminCommands() {
    // `backup FILE`: a verb without an object. The server writes the copy,
    // so FILE is a path on the server's machine and must be absolute.
    auto backup = std::make_unique<Command>();
    backup->verb = "backup";
    backup->noun = "database";
    backup->app = app_.add_subcommand(
        "backup", "write an online copy of the server's database to FILE on the server's machine");
    backup->app->fallthrough();
    backup->app->add_option("file", backup_path_, "absolute path on the server's machine");
    backup->validate = [this]() -> absl::Status {
      if (backup_path_.empty()) return absl::InvalidArgumentError("backup: missing FILE");
      if (backup_path_.front() != '/') {
        return absl::InvalidArgumentError(absl::StrCat(
            "FILE: must be an absolute path on the server's machine, got '", backup_path_, "'"));
      }
      return absl::OkStatus();
    };
    backup->run = [this](Connection& c, const CommandIo& io) {
      return BackupDatabase(c, io, backup_path_);
    };
    commands_.push_back(std::move(backup));

    Command* create_agent = Add("create", "agent", "agents", "agent id", "register an agent");
    AddText(create_agent->app, "--host", &agent_host_, "agent's management address (required)");
    AddText(create_agent->app, "--port", &agent_port_, "agent's API port (default 8080)");
    create_agent->validate = [this]() -> absl::Status {
      if (!agent_host_.given() || agent_host_.value.empty()) {
        return absl::InvalidArgumentError("--host: is required and must not be empty");
      }
      return ParseNumberInto("--port", agent_port_, 1, 65535, &agent_port_number_);
    };
    create_agent->run = [this, create_agent](Connection& c, const CommandIo& io) {
      return CreateAgent(c, io, create_agent->id, agent_host_.value, agent_port_number_);
    };
    Command* list_agents = Add("list", "agents", "agent", "", "list agents");
    list_agents->run = [](Connection& c, const CommandIo& io) { return ListAgents(c, io); };
    Command* get_agent = Add("get", "agent", "agents", "agent id", "show an agent");
    get_agent->run = [get_agent](Connection& c, const CommandIo& io) {
      return GetAgent(c, io, get_agent->id);
    };
    Command* remove_agent = Add("remove", "agent", "agents", "agent id", "remove an agent");
    remove_agent->run = [remove_agent](Connection& c, const CommandIo& io) {
      return RemoveAgent(c, io, remove_agent->id);
    };

    Command* create_cluster =
        Add("create", "cluster", "clusters", "cluster id", "create a cluster of agents");
    CLI::App* a = create_cluster->app;
    AddText(a, "--agents", &cluster_agents_, "ordered agents a,b,c (required)");
    AddText(a, "--num-ipulinkdomains", &cluster_ilds_, "IPU-Link domains (default 1)");
    AddText(a, "--topology", &cluster_topology_, "torus | mesh (default torus)");
    AddText(a, "--cluster-topology", &cluster_gw_topology_, "looped | switched (default looped)");
    create_cluster->validate = [this, create_cluster]() -> absl::Status {
      new_cluster_.id = create_cluster->id;
      if (!cluster_agents_.given()) return absl::InvalidArgumentError("--agents: is required");
      auto agents = ParseIdList("--agents", "agent id", cluster_agents_.value);
      if (!agents.ok()) return agents.status();
      new_cluster_.agents = *agents;
      absl::Status s = ParseNumberInto("--num-ipulinkdomains", cluster_ilds_, 1, 1024,
                                       &new_cluster_.num_ipulink_domains);
      if (!s.ok()) return s;
      if (cluster_topology_.given()) {
        auto t = fabric::ParseIldTopology(cluster_topology_.value);
        if (!t.ok()) return EnumError("--topology", t.status());
        new_cluster_.topology = static_cast<vipuadmin::IpuLinkTopology>(*t);
      }
      if (cluster_gw_topology_.given()) {
        auto t = fabric::ParseClusterTopology(cluster_gw_topology_.value);
        if (!t.ok()) return EnumError("--cluster-topology", t.status());
        new_cluster_.cluster_topology = static_cast<vipuadmin::GwLinkTopology>(*t);
      }
      return absl::OkStatus();
    };
    create_cluster->run = [this](Connection& c, const CommandIo& io) {
      return CreateCluster(c, io, new_cluster_);
    };
    Command* list_clusters = Add("list", "clusters", "cluster", "", "list clusters");
    list_clusters->run = [](Connection& c, const CommandIo& io) { return ListClusters(c, io); };
    Command* remove_cluster =
        Add("remove", "cluster", "clusters", "cluster id", "remove a cluster");
    remove_cluster->run = [remove_cluster](Connection& c, const CommandIo& io) {
      return RemoveCluster(c, io, remove_cluster->id);
    };

    Command* create_allocation = Add("create", "allocation", "allocations", "allocation id",
                                     "create an allocation of a cluster's agents");
    AddText(create_allocation->app, "--cluster", &allocation_cluster_, "cluster (required)");
    AddText(create_allocation->app, "--agents", &allocation_agents_text_,
            "agents a,b (default: all of the cluster)");
    create_allocation->validate = [this]() -> absl::Status {
      if (!allocation_cluster_.given()) {
        return absl::InvalidArgumentError("--cluster: is required");
      }
      absl::Status s =
          Prefix("--cluster", fabric::ValidateId("cluster id", allocation_cluster_.value));
      if (!s.ok()) return s;
      if (allocation_agents_text_.given()) {
        auto agents = ParseIdList("--agents", "agent id", allocation_agents_text_.value);
        if (!agents.ok()) return agents.status();
        allocation_agents_ = *agents;
      }
      return absl::OkStatus();
    };
    create_allocation->run = [this, create_allocation](Connection& c, const CommandIo& io) {
      return CreateAllocation(c, io, create_allocation->id, allocation_cluster_.value,
                              allocation_agents_);
    };
    Command* remove_allocation =
        Add("remove", "allocation", "allocations", "allocation id", "remove an allocation");
    remove_allocation->run = [remove_allocation](Connection& c, const CommandIo& io) {
      return RemoveAllocation(c, io, remove_allocation->id);
    };
    AddHealthCommands();
    AddUserAdminCommands();
  }

  // Users of the secure mode (docs/security.md).
  void AddUserAdminCommands() {
    Command* create = Add("create", "user", "users", "user id",
                          "create a user; prints its access key and writes ID.vipu-cli.hcl");
    AddText(create->app, "--allocations", &user_allocations_,
            "allocations a,b the user may use (default: all)");
    create->app->add_flag("--admin", user_admin_, "the user may use vipu-admin");
    create->validate = [this]() -> absl::Status {
      if (!user_allocations_.given()) return absl::OkStatus();
      auto ids = ParseIdList("--allocations", "allocation id", user_allocations_.value);
      if (!ids.ok()) return ids.status();
      user_allocation_ids_ = *ids;
      return absl::OkStatus();
    };
    create->run = [this, create](Connection& c, const CommandIo& io) {
      return CreateUser(c, io, create->id, user_allocation_ids_, user_admin_, ".");
    };
    Command* list = Add("list", "users", "user", "", "list users");
    list->run = [](Connection& c, const CommandIo& io) { return ListUsers(c, io); };
    Command* remove = Add("remove", "user", "users", "user id", "remove a user");
    remove->run = [remove](Connection& c, const CommandIo& io) {
      return RemoveUser(c, io, remove->id);
    };

    Command* update = Add("update", "user", "users", "user id",
                          "change a user's allocations or admin flag, or issue a new access key");
    AddText(update->app, "--allocations", &update_allocations_, "replace the allocations with a,b");
    update->app->add_flag("--all-allocations", update_all_allocations_,
                          "grant every allocation (as create user without --allocations)");
    update->app->add_flag("--admin", update_admin_, "make the user an admin");
    update->app->add_flag("--no-admin", update_no_admin_, "take the admin flag away");
    update->app->add_flag("--rotate-key", update_changes_.rotate_key,
                          "issue a new access key, printed once; the old key stops working");
    update->validate = [this]() -> absl::Status {
      if (update_allocations_.given() && update_all_allocations_) {
        return absl::InvalidArgumentError(
            "--all-allocations: contradicts --allocations; give one of them");
      }
      if (update_admin_ && update_no_admin_) {
        return absl::InvalidArgumentError("--no-admin: contradicts --admin; give one of them");
      }
      if (update_allocations_.given()) {
        auto ids = ParseIdList("--allocations", "allocation id", update_allocations_.value);
        if (!ids.ok()) return ids.status();
        update_changes_.allocations = *ids;
      }
      if (update_all_allocations_) update_changes_.allocations = std::vector<std::string>();
      if (update_admin_) update_changes_.admin = true;
      if (update_no_admin_) update_changes_.admin = false;
      if (!update_changes_.allocations && !update_changes_.admin && !update_changes_.rotate_key) {
        return absl::InvalidArgumentError(
            "update user: nothing to change; give --allocations, --all-allocations, --admin, "
            "--no-admin or --rotate-key");
      }
      return absl::OkStatus();
    };
    update->run = [this, update](Connection& c, const CommandIo& io) {
      return UpdateUser(c, io, update->id, update_changes_);
    };
  }

  // Simulated pods: `inject fault AGENT --kind ...` and `test cluster ID [--force]`.
  void AddHealthCommands() {
    Command* inject = Add("inject", "fault", "faults", "agent id",
                          "inject a fault into a simulated IPU-Machine (or clear its faults)");
    AddText(inject->app, "--kind", &fault_kind_,
            "ipu-error | link-down | agent-crash | agent-hang | clear (required)");
    AddText(inject->app, "--ipu", &fault_ipu_, "IPU# 0..3 (ipu-error)");
    AddText(inject->app, "--link", &fault_link_, "port 0..13 of the machine (link-down)");
    AddText(inject->app, "--duration-ms", &fault_duration_,
            "hang length in ms, 0 = until cleared (agent-hang)");
    inject->validate = [this, inject]() -> absl::Status {
      FaultFlags flags;
      flags.agent_id = inject->id;
      if (fault_kind_.given()) flags.kind = fault_kind_.value;
      if (fault_ipu_.given()) flags.ipu = fault_ipu_.value;
      if (fault_link_.given()) flags.link = fault_link_.value;
      if (fault_duration_.given()) flags.duration_ms = fault_duration_.value;
      auto parsed = ParseFaultFlags(flags);
      if (!parsed.ok()) return parsed.status();
      fault_ = *parsed;
      return absl::OkStatus();
    };
    inject->run = [this](Connection& c, const CommandIo& io) { return InjectFault(c, io, fault_); };

    Command* test = Add("test", "cluster", "clusters", "cluster id",
                        "run the installation tests (cabling, links, traffic) on a cluster");
    test->app->add_flag("--force", test_force_, "run even while partitions are on the cluster");
    test->run = [this, test](Connection& c, const CommandIo& io) {
      return TestCluster(c, io, test->id, test_force_);
    };
  }

  CliKind kind_;
  std::string program_;
  CLI::App app_;
  std::ostream& out_;
  std::ostream& err_;
  const Environment& env_;
  std::vector<CLI::App*> verbs_;
  std::vector<std::unique_ptr<Command>> commands_;

  // Global flags.
  TextOption api_host_, api_port_, api_timeout_, api_user_id_, api_access_key_, config_;
  TextOption api_tls_ca_, api_tls_cert_, api_tls_key_;
  bool showjson_ = false;
  bool server_version_ = false;
  bool version_ = false;

  // Per-command options (only one command runs per process).
  std::string list_allocation_;
  std::string attr_agents_text_;
  std::vector<std::string> attr_agents_;
  TextOption get_gcd_;
  bool get_ipuof_ = false;
  uint32_t gcd_ = 0;
  bool remove_force_ = false;
  bool reset_relocatable_ = false;
  TextOption size_, allocation_, cluster_, num_gcds_, num_replicas_, num_ilds_, sync_type_,
      routing_, gw_routing_;
  fabric::PartitionRequest create_;
  TextOption agent_host_, agent_port_;
  uint32_t agent_port_number_ = 8080;
  TextOption cluster_agents_, cluster_ilds_, cluster_topology_, cluster_gw_topology_;
  CreateClusterOptions new_cluster_;
  TextOption allocation_cluster_, allocation_agents_text_;
  std::vector<std::string> allocation_agents_;
  TextOption fault_kind_, fault_ipu_, fault_link_, fault_duration_;
  fabric::FaultRequest fault_;
  bool test_force_ = false;
  std::string backup_path_;
  bool create_shared_ = false;
  TextOption user_allocations_;
  std::vector<std::string> user_allocation_ids_;
  bool user_admin_ = false;
  TextOption update_allocations_;
  bool update_all_allocations_ = false;
  bool update_admin_ = false;
  bool update_no_admin_ = false;
  UserChanges update_changes_;
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
