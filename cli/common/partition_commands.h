// The user-API commands shared by `vipu` and `vipu-admin`: partitions,
// allocations, IPU attributes and the server version. Each returns the
// failure as a status whose message follows "<verb> <noun> (<id>): failure: "
// on stderr; success output goes to io.out. Options arrive validated.
#ifndef VIPU_CLI_COMMON_PARTITION_COMMANDS_H_
#define VIPU_CLI_COMMON_PARTITION_COMMANDS_H_

#include <chrono>
#include <cstdint>
#include <string>
#include <vector>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "cli/common/command_io.h"
#include "cli/common/connection.h"
#include "fabric/types.h"
#include "vipu_admin.pb.h"
#include "vipuuser.pb.h"

namespace vipu::cli {

// Which table `list partitions` prints: vipu's verbatim one, or vipu-admin's
// with one leading Allocation column (admin scripts `cut -d '|' -f 2`).
enum class PartitionTableKind { kUser, kAdmin };

// Pure renderers, exposed for byte-exact tests.
std::string RenderPartitionsTable(const virmgrpc::ListPartitionsReply& reply,
                                  PartitionTableKind kind);
std::string RenderAllocationsTable(const vipuadmin::ListAllocationsReply& reply);
std::string RenderIpuAttributesTable(const virmgrpc::ListIPUAttributesReply& reply);
std::string RenderPartitionDetails(const virmgrpc::Partition& partition,
                                   const virmgrpc::PartitionStatus& status);
std::string RenderPartitionStatus(const virmgrpc::PartitionStatus& status);
// "2024-05-01T12:00:00Z", or "never" for an unset timestamp.
std::string FormatTimestamp(const google::protobuf::Timestamp& t);

// `--server-version`: "version: X\nhost: H:P\n", H:P the member that answered.
// VersionService.GetVersion through `conn`. A member of a highly available
// control plane says in the reply's metadata its role ("leader" or
// "standby") and the leader's user address, which land in `role` and
// `leader`; a server on SQLite says neither, and both are left empty.
absl::Status GetVersion(Connection& conn, virmgrpc::VersionReply* reply, std::string* role,
                        std::string* leader);
absl::Status ServerVersion(Connection& conn, const CommandIo& io);

absl::Status ListPartitions(Connection& conn, const CommandIo& io, const std::string& allocation_id,
                            PartitionTableKind kind);

// CreatePartition with `request` (zero and undefined fields are the
// server's to choose; see ToWire), then waits for PS_ACTIVE (see
// WaitForPartition), writes ~/.ipuof.conf.d/<id>_gcd<N>_ipuof.conf for every
// GCD and prints "create partition (<id>): success.". PS_ERROR fails with the
// partition's errors joined by "; ".
absl::Status CreatePartition(Connection& conn, const CommandIo& io,
                             const fabric::PartitionRequest& request);

// Polls GetPartitionStatus (2 ms, doubling to 100 ms) until the partition is
// PS_ACTIVE with no operation in flight, PS_ERROR/PS_REMOVED (failure), or
// `deadline` passes (DEADLINE_EXCEEDED).
absl::StatusOr<virmgrpc::PartitionStatus> WaitForPartition(
    Connection& conn, const std::string& id, std::chrono::steady_clock::time_point deadline);

// The Gcd message for `gcd` of a partition, as the server sends it.
absl::StatusOr<virmgrpc::PartitionConfig::Gcd> FetchGcdConfig(Connection& conn,
                                                              const std::string& id, uint32_t gcd);

// Details box (ListPartitions + GetPartitionStatus); JSON with --showjson.
absl::Status GetPartition(Connection& conn, const CommandIo& io, const std::string& id);
// The GCD's ipuof config JSON, identical to the file create writes.
absl::Status GetPartitionIpuofConfig(Connection& conn, const CommandIo& io, const std::string& id,
                                     uint32_t gcd);
absl::Status GetPartitionStatus(Connection& conn, const CommandIo& io, const std::string& id);

// Removes on the server, then the local ipuof files (also when the server no
// longer knows the partition, since the files are then stale).
absl::Status RemovePartition(Connection& conn, const CommandIo& io, const std::string& id,
                             bool force);

// ResetPartition, then waits for PS_ACTIVE like create. With relocatable the
// IPUs may move, so ipuof files already present locally are rewritten.
absl::Status ResetPartition(Connection& conn, const CommandIo& io, const std::string& id,
                            bool relocatable);

absl::Status ListAllocations(Connection& conn, const CommandIo& io);
absl::Status ListIpuAttributes(Connection& conn, const CommandIo& io,
                               const std::vector<std::string>& agents);

}  // namespace vipu::cli

#endif  // VIPU_CLI_COMMON_PARTITION_COMMANDS_H_
