// Parses and validates vipu-agent's command line: ids, ports, --machines, --shared-port.
#include "agents/agent_options.h"

#include <algorithm>
#include <set>

#include "CLI/CLI.hpp"
#include "absl/strings/ascii.h"
#include "absl/strings/match.h"
#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_split.h"
#include "base/absl_view.h"
#include "fabric/enum_names.h"
#include "wire/server_members.h"

#ifndef VIPU_VERSION
#define VIPU_VERSION "dev"
#endif

namespace vipu::agents {
namespace {

bool IsIdChar(char c) {
  return absl::ascii_isalnum(static_cast<unsigned char>(c)) || c == '.' || c == '_' || c == '-';
}

// Strict decimal: absl::SimpleAtoi would accept "+5" and " 5".
std::optional<uint32_t> ParsePort(std::string_view text) {
  if (text.empty() || text.size() > 5) return std::nullopt;
  for (char c : text) {
    if (!absl::ascii_isdigit(static_cast<unsigned char>(c))) return std::nullopt;
  }
  uint32_t value = 0;
  if (!absl::SimpleAtoi(AbslView(text), &value) || value > 65535) return std::nullopt;
  return value;
}

}  // namespace

absl::Status ValidateAgentId(std::string_view field, std::string_view id) {
  if (id.empty() || id.size() > fabric::kMaxIdLength) {
    return absl::InvalidArgumentError(absl::StrCat(AbslView(field), ": must be 1..",
                                                   fabric::kMaxIdLength, " characters, got ",
                                                   id.size(), " in '", AbslView(id), "'"));
  }
  if (!absl::ascii_isalnum(static_cast<unsigned char>(id[0]))) {
    return absl::InvalidArgumentError(absl::StrCat(
        AbslView(field), ": must start with a letter or digit, got '", AbslView(id), "'"));
  }
  for (char c : id) {
    if (!IsIdChar(c)) {
      return absl::InvalidArgumentError(absl::StrCat(
          AbslView(field), ": may contain only [A-Za-z0-9._-], got '", AbslView(id), "'"));
    }
  }
  return absl::OkStatus();
}

absl::StatusOr<std::vector<std::string>> ParseAgentIds(std::string_view list) {
  if (list.empty()) return absl::InvalidArgumentError("agent-ids: must name at least one agent");
  std::vector<std::string> ids = absl::StrSplit(AbslView(list), ',');
  std::set<std::string> seen;
  for (const std::string& id : ids) {
    if (absl::Status s = ValidateAgentId("agent-ids", id); !s.ok()) return s;
    if (!seen.insert(id).second) {
      return absl::InvalidArgumentError(
          absl::StrCat("agent-ids: must not repeat an id, got '", id, "' twice"));
    }
  }
  return ids;
}

absl::StatusOr<std::vector<std::string>> GenerateAgentIds(std::string_view prefix, uint32_t count,
                                                          uint32_t first_index) {
  if (count == 0 || count > kMaxMachinesPerProcess) {
    return absl::InvalidArgumentError(
        absl::StrCat("machines: must be 1..", kMaxMachinesPerProcess, ", got ", count));
  }
  if (static_cast<uint64_t>(first_index) + count - 1 > UINT32_MAX) {
    return absl::InvalidArgumentError(
        absl::StrCat("first-index: ", first_index, " + ", count, " machines overflows 32 bits"));
  }
  std::vector<std::string> ids;
  ids.reserve(count);
  for (uint32_t i = 0; i < count; ++i)
    ids.push_back(absl::StrCat(AbslView(prefix), first_index + i));
  // Only the prefix and the length vary: the first and the longest (last) id
  // stand for all of them.
  if (absl::Status s = ValidateAgentId("id-prefix", ids.front()); !s.ok()) return s;
  if (absl::Status s = ValidateAgentId("id-prefix", ids.back()); !s.ok()) return s;
  return ids;
}

absl::StatusOr<std::vector<uint32_t>> ParsePorts(std::string_view list, size_t count,
                                                 std::string_view field) {
  if (list.empty()) return std::vector<uint32_t>(count, 0);
  std::vector<absl::string_view> parts = absl::StrSplit(AbslView(list), ',');
  if (parts.size() != count) {
    return absl::InvalidArgumentError(absl::StrCat(
        AbslView(field), ": must give one port per agent id (", count, "), got ", parts.size()));
  }
  std::vector<uint32_t> ports;
  std::set<uint32_t> seen;
  for (absl::string_view part : parts) {
    std::optional<uint32_t> port = ParsePort(std::string_view(part.data(), part.size()));
    if (!port) {
      return absl::InvalidArgumentError(
          absl::StrCat(AbslView(field), ": each must be a number 0..65535, got '", part, "'"));
    }
    if (*port != 0 && !seen.insert(*port).second) {
      return absl::InvalidArgumentError(
          absl::StrCat(AbslView(field), ": must not repeat a port, got ", *port, " twice"));
    }
    ports.push_back(*port);
  }
  return ports;
}

absl::StatusOr<std::vector<std::string>> ParseServerAddresses(std::string_view list) {
  if (absl::StartsWith(AbslView(list), "unix:")) {
    if (list.size() == 5) return absl::InvalidArgumentError("server: unix: needs a path");
    return std::vector<std::string>{std::string(list)};
  }
  // The agent API has no well-known port: every member names its own.
  absl::StatusOr<std::vector<wire::ServerMember>> members =
      wire::ParseServerMembers(list, std::nullopt);
  if (!members.ok()) {
    return absl::InvalidArgumentError(absl::StrCat("server: ", members.status().message()));
  }
  std::vector<std::string> targets;
  for (const wire::ServerMember& m : *members) targets.push_back(m.Target());
  return targets;
}

absl::Status ValidateServerAddress(std::string_view address) {
  return ParseServerAddresses(address).status();
}

absl::StatusOr<spdlog::level::level_enum> ParseLogLevel(std::string_view name) {
  if (name == "trace") return spdlog::level::trace;
  if (name == "debug") return spdlog::level::debug;
  if (name == "info") return spdlog::level::info;
  if (name == "warn") return spdlog::level::warn;
  if (name == "error") return spdlog::level::err;
  return absl::InvalidArgumentError(absl::StrCat(
      "log-level: must be trace, debug, info, warn or error, got '", AbslView(name), "'"));
}

absl::Status ValidateTlsFlags(const std::string& ca, const std::string& cert,
                              const std::string& key) {
  const bool any = !ca.empty() || !cert.empty() || !key.empty();
  if (!any) return absl::OkStatus();
  for (const auto& [flag, value] : {std::pair<const char*, const std::string*>{"tls-ca", &ca},
                                    {"tls-cert", &cert},
                                    {"tls-key", &key}}) {
    if (value->empty()) {
      return absl::InvalidArgumentError(absl::StrCat(
          flag, ": --tls-ca, --tls-cert and --tls-key go together; --", flag, " is missing"));
    }
  }
  return absl::OkStatus();
}

namespace {

// The flags as CLI11 reads them, before validation.
struct Flags {
  std::string server;
  std::string agent_ids;
  std::string machine_type = "m2000";
  std::string host = "127.0.0.1";
  std::string ports;
  std::string rdma_ports;
  bool stable_ports = false;
  std::string reserved_ports;
  std::string log_level = "info";
  bool exit_with_parent = false;
  bool shared_port = false;
  uint32_t machines = 0;
  uint32_t first_index = 0;
  std::string id_prefix;
  std::string tls_ca;
  std::string tls_cert;
  std::string tls_key;
  // Whether --agent-ids and --machines were given (their values may be defaults).
  CLI::Option* ids_option = nullptr;
  CLI::Option* machines_option = nullptr;
};

// Declares every flag on `app`, bound to `flags`, in --help order.
void AddFlags(CLI::App& app, Flags& flags) {
  app.set_version_flag("--version", VIPU_VERSION);
  app.add_option("--server", flags.server,
                 "vipu-server's agent API: comma-separated list of members, each HOST:PORT or "
                 "[V6]:PORT, tried in order (or one unix:PATH)")
      ->required();
  flags.ids_option =
      app.add_option("--agent-ids", flags.agent_ids, "comma-separated agent ids, one machine each");
  flags.machines_option = app.add_option(
      "--machines", flags.machines,
      "serve N machines with generated ids (--id-prefix, --first-index) on one shared port");
  flags.ids_option->excludes(flags.machines_option);
  app.add_option("--id-prefix", flags.id_prefix,
                 "prefix of the generated agent ids (with --machines)")
      ->needs(flags.machines_option);
  app.add_option("--first-index", flags.first_index,
                 "number of the first generated agent id (with --machines)")
      ->needs(flags.machines_option)
      ->capture_default_str();
  app.add_flag("--shared-port", flags.shared_port,
               "serve every machine on one port, dispatching by agent id, and register and "
               "heartbeat in batches (implied by --machines)");
  app.add_option("--machine-type", flags.machine_type, "m2000 or bow")->capture_default_str();
  app.add_option("--host", flags.host, "address to bind and advertise")->capture_default_str();
  app.add_option("--ports", flags.ports,
                 "comma-separated ports, one per agent id (default: pick free ports)");
  app.add_option("--rdma-ports", flags.rdma_ports,
                 "comma-separated RDMA ports the IPUoF configs name, one per agent id with "
                 "--shared-port too; each is held open by this process (default: pick free "
                 "ports)");
  CLI::Option* stable = app.add_flag(
      "--stable-ports", flags.stable_ports,
      "a port of 0 is taken above the kernel's ephemeral range, chosen by binding it, and a "
      "taken RDMA port is replaced by one there (vipu-server --simulate: machines keep their "
      "ports across restarts)");
  app.add_option("--reserved-ports", flags.reserved_ports,
                 "comma-separated ports of other machines that --stable-ports must not take")
      ->needs(stable);
  app.add_option("--log-level", flags.log_level, "trace, debug, info, warn or error")
      ->capture_default_str();
  app.add_option("--tls-ca", flags.tls_ca,
                 "pod CA (PEM): turns on mutual TLS for every port and the server connection")
      ->envname("VIPU_AGENT_TLS_CA");
  app.add_option("--tls-cert", flags.tls_cert,
                 "this agent's certificate (PEM), SAN DNS:<agent-id> for each id and the host")
      ->envname("VIPU_AGENT_TLS_CERT");
  app.add_option("--tls-key", flags.tls_key, "the certificate's private key (PEM)")
      ->envname("VIPU_AGENT_TLS_KEY");
  app.add_flag("--exit-with-parent", flags.exit_with_parent,
               "terminate when the parent process dies (for agents started by vipu-server)");
}

// The agent ids: generated with --machines, else --agent-ids.
absl::StatusOr<std::vector<std::string>> AgentIdsOf(const Flags& flags) {
  const bool machines_given = flags.machines_option->count() > 0;
  if (flags.ids_option->count() == 0 && !machines_given) {
    return absl::InvalidArgumentError("agent-ids: give --agent-ids or --machines");
  }
  if (!machines_given) return ParseAgentIds(flags.agent_ids);
  if (flags.id_prefix.empty()) {
    return absl::InvalidArgumentError("id-prefix: must not be empty with --machines");
  }
  return GenerateAgentIds(flags.id_prefix, flags.machines, flags.first_index);
}

// Checks the flags in --help order and converts them; the first error wins.
absl::StatusOr<AgentOptions> Validate(const Flags& flags) {
  absl::StatusOr<std::vector<std::string>> servers = ParseServerAddresses(flags.server);
  if (!servers.ok()) return servers.status();
  if (absl::Status s = ValidateTlsFlags(flags.tls_ca, flags.tls_cert, flags.tls_key); !s.ok()) {
    return s;
  }
  if (flags.host.empty()) return absl::InvalidArgumentError("host: must not be empty");
  AgentOptions options;
  options.server = flags.server;
  options.servers = *std::move(servers);
  options.host = flags.host;
  options.exit_with_parent = flags.exit_with_parent;
  options.tls_ca = flags.tls_ca;
  options.tls_cert = flags.tls_cert;
  options.tls_key = flags.tls_key;
  options.shared_port = flags.shared_port || flags.machines_option->count() > 0;
  absl::StatusOr<std::vector<std::string>> ids = AgentIdsOf(flags);
  if (!ids.ok()) return ids.status();
  options.agent_ids = *std::move(ids);
  absl::StatusOr<fabric::MachineType> type = fabric::ParseMachineType(flags.machine_type);
  if (!type.ok()) return type.status();
  options.machine_type = *type;
  // A shared port is one port for every machine.
  absl::StatusOr<std::vector<uint32_t>> ports =
      ParsePorts(flags.ports, options.shared_port ? 1 : options.agent_ids.size());
  if (!ports.ok()) return ports.status();
  options.ports = *std::move(ports);
  absl::StatusOr<std::vector<uint32_t>> rdma_ports =
      ParsePorts(flags.rdma_ports, options.agent_ids.size(), "rdma-ports");
  if (!rdma_ports.ok()) return rdma_ports.status();
  for (uint32_t port : *rdma_ports) {
    if (port != 0 &&
        std::find(options.ports.begin(), options.ports.end(), port) != options.ports.end()) {
      return absl::InvalidArgumentError(absl::StrCat(
          "rdma-ports: ", port, " is also in --ports; a machine's RDMA port is a port of its own"));
    }
  }
  options.rdma_ports = *std::move(rdma_ports);
  options.stable_ports = flags.stable_ports;
  if (!flags.reserved_ports.empty()) {
    for (absl::string_view part : absl::StrSplit(AbslView(flags.reserved_ports), ',')) {
      std::optional<uint32_t> port = ParsePort(std::string_view(part.data(), part.size()));
      if (!port || *port == 0) {
        return absl::InvalidArgumentError(
            absl::StrCat("reserved-ports: each must be a number 1..65535, got '", part, "'"));
      }
      options.reserved_ports.insert(*port);
    }
  }
  absl::StatusOr<spdlog::level::level_enum> level = ParseLogLevel(flags.log_level);
  if (!level.ok()) return level.status();
  options.log_level = *level;
  return options;
}

}  // namespace

ParsedCommandLine ParseAgentCommandLine(int argc, const char* const* argv, std::ostream& out,
                                        std::ostream& err) {
  CLI::App app{"vipu-agent: simulated IPU-Machines (4 IPUs each) for vipu-server"};
  Flags flags;
  AddFlags(app, flags);
  ParsedCommandLine result;
  try {
    app.parse(argc, argv);
  } catch (const CLI::CallForHelp& e) {
    result.exit_code = app.exit(e, out, err);
    return result;
  } catch (const CLI::CallForVersion& e) {
    result.exit_code = app.exit(e, out, err);
    return result;
  } catch (const CLI::ParseError& e) {
    err << "vipu-agent: " << e.what() << " (see --help)\n";
    result.exit_code = 2;
    return result;
  }
  absl::StatusOr<AgentOptions> options = Validate(flags);
  if (!options.ok()) {
    err << "vipu-agent: " << options.status().message() << "\n";
    result.exit_code = 2;
    return result;
  }
  result.options = *std::move(options);
  return result;
}

}  // namespace vipu::agents
