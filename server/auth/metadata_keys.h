// gRPC metadata the clients send with every call (--api-user-id and
// --api-access-key, docs/security.md). The one definition: the server reads
// these and the clients send them (cli/common/credentials.h).
#ifndef VIPU_SERVER_AUTH_METADATA_KEYS_H_
#define VIPU_SERVER_AUTH_METADATA_KEYS_H_

namespace vipu::server::auth {

inline constexpr char kUserIdMetadata[] = "vipu-user-id";
inline constexpr char kAccessKeyMetadata[] = "vipu-access-key";
// "true" on CreatePartition: the partition is shared with every user of its
// allocation (the published CreatePartitionRequest has no field for it).
inline constexpr char kShareMetadata[] = "vipu-share";

}  // namespace vipu::server::auth

#endif  // VIPU_SERVER_AUTH_METADATA_KEYS_H_
