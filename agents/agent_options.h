// Command line of vipu-agent, parsed and validated completely before any
// machine starts, so that a bad flag costs one line on stderr and exit code 2.
#ifndef VIPU_AGENTS_AGENT_OPTIONS_H_
#define VIPU_AGENTS_AGENT_OPTIONS_H_

#include <cstdint>
#include <optional>
#include <ostream>
#include <set>
#include <string>
#include <string_view>
#include <vector>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "fabric/types.h"
#include "spdlog/common.h"

namespace vipu::agents {

struct AgentOptions {
  std::string server;  // --server as given
  // --server's members, in order: host:port targets, or one unix:path.
  std::vector<std::string> servers;
  std::vector<std::string> agent_ids;  // --agent-ids, one machine each
  fabric::MachineType machine_type = fabric::MachineType::kM2000;
  std::string host = "127.0.0.1";  // --host: bound and advertised
  std::vector<uint32_t> ports;     // one per agent id; 0: pick a free port
  // The RDMA port of each machine (--rdma-ports), one per agent id with a
  // shared port too; 0: pick a free one. Each is held (listened on) by this
  // process for its life and is never one of `ports`.
  std::vector<uint32_t> rdma_ports;
  // --stable-ports: a port of 0 is taken above the kernel's ephemeral range
  // (agents/stable_port_picker.h) rather than wherever the kernel picks,
  // and an RDMA port that another process holds is replaced by one there;
  // vipu-server --simulate asks for it, so that machines keep their ports.
  bool stable_ports = false;
  // --reserved-ports: ports of other machines of the pod (their remembered
  // ports) that a stable-port search must leave alone.
  std::set<uint32_t> reserved_ports;
  spdlog::level::level_enum log_level = spdlog::level::info;
  bool exit_with_parent = false;
  // Every machine on one gRPC server and port (ports holds that one
  // port), requests dispatched by agent_id, and registration and heartbeats
  // sent in batches. Set by --shared-port or by --machines.
  bool shared_port = false;
  // Mutual TLS (docs/security.md, Agents over mutual TLS): all three or
  // none. --tls-ca/--tls-cert/--tls-key, or VIPU_AGENT_TLS_CA/_CERT/_KEY.
  std::string tls_ca;
  std::string tls_cert;
  std::string tls_key;
  bool tls() const { return !tls_ca.empty(); }
};

// Most machines one vipu-agent process serves: 65,536 IPUs, the design limit.
inline constexpr uint32_t kMaxMachinesPerProcess = 16384;

// --machines N --id-prefix P --first-index K: ids P<K> .. P<K+N-1>, each a
// valid agent id. INVALID_ARGUMENT naming the flag otherwise.
absl::StatusOr<std::vector<std::string>> GenerateAgentIds(std::string_view prefix, uint32_t count,
                                                          uint32_t first_index);

// 1..64 characters of [A-Za-z0-9._-], the first a letter or digit
// (fabric/types.h). INVALID_ARGUMENT naming `field`.
absl::Status ValidateAgentId(std::string_view field, std::string_view id);
// Comma-separated, each valid, no duplicates, at least one.
absl::StatusOr<std::vector<std::string>> ParseAgentIds(std::string_view list);
// Empty: `count` zeros. Otherwise exactly `count` ports 0..65535; non-zero
// ports must not repeat. Messages start with `field`.
absl::StatusOr<std::vector<uint32_t>> ParsePorts(std::string_view list, size_t count,
                                                 std::string_view field = "ports");
// --server: a comma-separated list of members, each "host:port" or
// "[v6]:port" with port 1..65535 (wire/server_members.h), checked one by
// one; or a single "unix:path". The targets in order; INVALID_ARGUMENT
// starting "server: " and naming the bad entry.
absl::StatusOr<std::vector<std::string>> ParseServerAddresses(std::string_view list);
absl::Status ValidateServerAddress(std::string_view address);
// trace|debug|info|warn|error
absl::StatusOr<spdlog::level::level_enum> ParseLogLevel(std::string_view name);
// All three TLS files or none; INVALID_ARGUMENT naming the missing flag.
absl::Status ValidateTlsFlags(const std::string& ca, const std::string& cert,
                              const std::string& key);

struct ParsedCommandLine {
  std::optional<AgentOptions> options;  // set when the agent should run
  int exit_code = 0;                    // otherwise: 0 after --help/--version, 2 on error
};

// Parses `argv` (argv[0] is the program name). Help and version go to `out`;
// an error is one line on `err`.
ParsedCommandLine ParseAgentCommandLine(int argc, const char* const* argv, std::ostream& out,
                                        std::ostream& err);

}  // namespace vipu::agents

#endif  // VIPU_AGENTS_AGENT_OPTIONS_H_
