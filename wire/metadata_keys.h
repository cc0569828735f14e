// gRPC metadata the clients send with every call (--api-user-id and
// --api-access-key, docs/security.md), and what the server sends back. The
// one definition: the server reads these and the clients send them
// (cli/common/credentials.h).
#ifndef VIPU_WIRE_METADATA_KEYS_H_
#define VIPU_WIRE_METADATA_KEYS_H_

namespace vipu::wire {

inline constexpr char kUserIdMetadata[] = "vipu-user-id";
inline constexpr char kAccessKeyMetadata[] = "vipu-access-key";
// "true" on CreatePartition: the partition is shared with every user of its
// allocation (the published CreatePartitionRequest has no field for it).
inline constexpr char kShareMetadata[] = "vipu-share";
// Trailing metadata on a mutating call refused while the server is not ready
// (server/control/readiness.h): how many milliseconds to wait before retrying.
inline constexpr char kRetryAfterMetadata[] = "retry-after-ms";
// Initial metadata of every reply of a member of a highly available control
// plane (docs/ha.md): "leader" or "standby", and the leader's advertised
// host:port ("none" while nobody leads). A server on SQLite sends neither.
inline constexpr char kRoleMetadata[] = "vipu-role";
inline constexpr char kLeaderMetadata[] = "vipu-leader";
// Set by a standby on the calls it forwards to the leader: the standby's
// advertised address. A member that is not leader refuses a call that
// carries it rather than forward it again.
inline constexpr char kForwardedByMetadata[] = "vipu-forwarded-by";
// Set by a standby of a secure control plane on the agent calls it
// forwards: the subject alternative names of the certificate the agent
// proved to the standby, joined by ','. The leader believes it only from a
// caller holding the server's certificate (tls/peer_identity.h); a standby
// drops whatever a caller sent under this key.
inline constexpr char kForwardedPeerMetadata[] = "vipu-forwarded-peer";

}  // namespace vipu::wire

#endif  // VIPU_WIRE_METADATA_KEYS_H_
