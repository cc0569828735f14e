// The one place where a client's partition request (fabric::PartitionRequest,
// what `vipu create partition` and poprun ask for) becomes the wire message
// the server takes.
#ifndef VIPU_CLI_COMMON_PARTITION_REQUEST_H_
#define VIPU_CLI_COMMON_PARTITION_REQUEST_H_

#include "fabric/types.h"
#include "vipuuser.pb.h"

namespace vipu::cli {

// The CreatePartitionRequest carrying every field of `request`, field for
// field; zero and undefined values stay so, leaving the choice to the server.
// The enums are copied by number (fabric's equal the wire's), so a value the
// caller did not parse is the server's to refuse. Never fails.
virmgrpc::CreatePartitionRequest ToWire(const fabric::PartitionRequest& request);

}  // namespace vipu::cli

#endif  // VIPU_CLI_COMMON_PARTITION_REQUEST_H_
