// Parses and validates vipu-agent's command line: ids, ports, --machines, --shared-port.
#include "agents/agent_options.h"

#include <set>

#include "CLI/CLI.hpp"
#include "absl/strings/ascii.h"
#include "absl/strings/match.h"
#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_split.h"
#include "agents/simulated_machine.h"

#ifndef VIPU_VERSION
#define VIPU_VERSION "dev"
#endif

namespace vipu::agents {
namespace {

// Debian's abseil has its own string_view, distinct from std::string_view.
absl::string_view A(std::string_view s) { return absl::string_view(s.data(), s.size()); }

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
  if (!absl::SimpleAtoi(A(text), &value) || value > 65535) return std::nullopt;
  return value;
}

}  // namespace

absl::Status ValidateAgentId(std::string_view field, std::string_view id) {
  if (id.empty() || id.size() > fabric::kMaxIdLength) {
    return absl::InvalidArgumentError(absl::StrCat(A(field), ": must be 1..", fabric::kMaxIdLength,
                                                   " characters, got ", id.size(), " in '", A(id),
                                                   "'"));
  }
  if (!absl::ascii_isalnum(static_cast<unsigned char>(id[0]))) {
    return absl::InvalidArgumentError(
        absl::StrCat(A(field), ": must start with a letter or digit, got '", A(id), "'"));
  }
  for (char c : id) {
    if (!IsIdChar(c)) {
      return absl::InvalidArgumentError(
          absl::StrCat(A(field), ": may contain only [A-Za-z0-9._-], got '", A(id), "'"));
    }
  }
  return absl::OkStatus();
}

absl::StatusOr<std::vector<std::string>> ParseAgentIds(std::string_view list) {
  if (list.empty()) return absl::InvalidArgumentError("agent-ids: must name at least one agent");
  std::vector<std::string> ids = absl::StrSplit(A(list), ',');
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
  for (uint32_t i = 0; i < count; ++i) ids.push_back(absl::StrCat(A(prefix), first_index + i));
  // Only the prefix and the length vary: the first and the longest (last) id
  // stand for all of them.
  if (absl::Status s = ValidateAgentId("id-prefix", ids.front()); !s.ok()) return s;
  if (absl::Status s = ValidateAgentId("id-prefix", ids.back()); !s.ok()) return s;
  return ids;
}

absl::StatusOr<std::vector<uint32_t>> ParsePorts(std::string_view list, size_t count) {
  if (list.empty()) return std::vector<uint32_t>(count, 0);
  std::vector<absl::string_view> parts = absl::StrSplit(A(list), ',');
  if (parts.size() != count) {
    return absl::InvalidArgumentError(
        absl::StrCat("ports: must give one port per agent id (", count, "), got ", parts.size()));
  }
  std::vector<uint32_t> ports;
  std::set<uint32_t> seen;
  for (absl::string_view part : parts) {
    std::optional<uint32_t> port = ParsePort(std::string_view(part.data(), part.size()));
    if (!port) {
      return absl::InvalidArgumentError(
          absl::StrCat("ports: each must be a number 0..65535, got '", part, "'"));
    }
    if (*port != 0 && !seen.insert(*port).second) {
      return absl::InvalidArgumentError(
          absl::StrCat("ports: must not repeat a port, got ", *port, " twice"));
    }
    ports.push_back(*port);
  }
  return ports;
}

absl::Status ValidateServerAddress(std::string_view address) {
  if (absl::StartsWith(A(address), "unix:")) {
    if (address.size() == 5) return absl::InvalidArgumentError("server: unix: needs a path");
    return absl::OkStatus();
  }
  const size_t colon = address.rfind(':');
  if (colon == std::string_view::npos) {
    return absl::InvalidArgumentError(
        absl::StrCat("server: must be HOST:PORT, got '", A(address), "'"));
  }
  std::string_view host = address.substr(0, colon);
  if (host.empty() || host == "[]") {
    return absl::InvalidArgumentError(
        absl::StrCat("server: must name a host before the port, got '", A(address), "'"));
  }
  std::optional<uint32_t> port = ParsePort(address.substr(colon + 1));
  if (!port || *port == 0) {
    return absl::InvalidArgumentError(
        absl::StrCat("server: port must be a number 1..65535, got '", A(address), "'"));
  }
  return absl::OkStatus();
}

absl::StatusOr<spdlog::level::level_enum> ParseLogLevel(std::string_view name) {
  if (name == "trace") return spdlog::level::trace;
  if (name == "debug") return spdlog::level::debug;
  if (name == "info") return spdlog::level::info;
  if (name == "warn") return spdlog::level::warn;
  if (name == "error") return spdlog::level::err;
  return absl::InvalidArgumentError(
      absl::StrCat("log-level: must be trace, debug, info, warn or error, got '", A(name), "'"));
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

ParsedCommandLine ParseAgentCommandLine(int argc, const char* const* argv, std::ostream& out,
                                        std::ostream& err) {
  CLI::App app{"vipu-agent: simulated IPU-Machines (4 IPUs each) for vipu-server"};
  app.set_version_flag("--version", VIPU_VERSION);
  std::string server, agent_ids, machine_type = "m2000", host = "127.0.0.1", ports,
                                 log_level = "info";
  bool exit_with_parent = false, shared_port = false;
  uint32_t machines = 0, first_index = 0;
  std::string id_prefix;
  app.add_option("--server", server, "vipu-server address, HOST:PORT")->required();
  auto* ids_option =
      app.add_option("--agent-ids", agent_ids, "comma-separated agent ids, one machine each");
  auto* machines_option = app.add_option(
      "--machines", machines,
      "serve N machines with generated ids (--id-prefix, --first-index) on one shared port");
  ids_option->excludes(machines_option);
  app.add_option("--id-prefix", id_prefix, "prefix of the generated agent ids (with --machines)")
      ->needs(machines_option);
  app.add_option("--first-index", first_index,
                 "number of the first generated agent id (with --machines)")
      ->needs(machines_option)
      ->capture_default_str();
  app.add_flag("--shared-port", shared_port,
               "serve every machine on one port, dispatching by agent id, and register and "
               "heartbeat in batches (implied by --machines)");
  app.add_option("--machine-type", machine_type, "m2000 or bow")->capture_default_str();
  app.add_option("--host", host, "address to bind and advertise")->capture_default_str();
  app.add_option("--ports", ports,
                 "comma-separated ports, one per agent id (default: pick free ports)");
  app.add_option("--log-level", log_level, "trace, debug, info, warn or error")
      ->capture_default_str();
  std::string tls_ca, tls_cert, tls_key;
  app.add_option("--tls-ca", tls_ca,
                 "pod CA (PEM): turns on mutual TLS for every port and the server connection")
      ->envname("VIPU_AGENT_TLS_CA");
  app.add_option("--tls-cert", tls_cert,
                 "this agent's certificate (PEM), SAN DNS:<agent-id> for each id and the host")
      ->envname("VIPU_AGENT_TLS_CERT");
  app.add_option("--tls-key", tls_key, "the certificate's private key (PEM)")
      ->envname("VIPU_AGENT_TLS_KEY");
  app.add_flag("--exit-with-parent", exit_with_parent,
               "terminate when the parent process dies (for agents started by vipu-server)");

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

  AgentOptions options;
  options.server = server;
  options.host = host;
  options.exit_with_parent = exit_with_parent;
  absl::Status status = ValidateServerAddress(server);
  if (status.ok()) status = ValidateTlsFlags(tls_ca, tls_cert, tls_key);
  options.tls_ca = tls_ca;
  options.tls_cert = tls_cert;
  options.tls_key = tls_key;
  if (status.ok() && host.empty()) status = absl::InvalidArgumentError("host: must not be empty");
  options.shared_port = shared_port || machines_option->count() > 0;
  if (status.ok() && ids_option->count() == 0 && machines_option->count() == 0) {
    status = absl::InvalidArgumentError("agent-ids: give --agent-ids or --machines");
  }
  if (status.ok() && machines_option->count() > 0) {
    if (id_prefix.empty()) {
      status = absl::InvalidArgumentError("id-prefix: must not be empty with --machines");
    } else if (absl::StatusOr<std::vector<std::string>> ids =
                   GenerateAgentIds(id_prefix, machines, first_index);
               ids.ok()) {
      options.agent_ids = *std::move(ids);
    } else {
      status = ids.status();
    }
  } else if (status.ok()) {
    absl::StatusOr<std::vector<std::string>> ids = ParseAgentIds(agent_ids);
    if (ids.ok()) {
      options.agent_ids = *std::move(ids);
    } else {
      status = ids.status();
    }
  }
  if (status.ok()) {
    absl::StatusOr<fabric::MachineType> type = ParseMachineType(machine_type);
    if (type.ok()) {
      options.machine_type = *type;
    } else {
      status = type.status();
    }
  }
  if (status.ok()) {
    // A shared port is one port for every machine.
    absl::StatusOr<std::vector<uint32_t>> parsed =
        ParsePorts(ports, options.shared_port ? 1 : options.agent_ids.size());
    if (parsed.ok()) {
      options.ports = *std::move(parsed);
    } else {
      status = parsed.status();
    }
  }
  if (status.ok()) {
    absl::StatusOr<spdlog::level::level_enum> level = ParseLogLevel(log_level);
    if (level.ok()) {
      options.log_level = *level;
    } else {
      status = level.status();
    }
  }
  if (!status.ok()) {
    err << "vipu-agent: " << status.message() << "\n";
    result.exit_code = 2;
    return result;
  }
  result.options = std::move(options);
  return result;
}

}  // namespace vipu::agents
