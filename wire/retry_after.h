// A client's reading of the server's word that it refused a call before
// acting on it: the trailing metadata `retry-after-ms` (metadata_keys.h),
// which the server sends for a refusal marked "nothing done" (status.h).
// Read by the CLIs' rounds over the members (member_channels.h) and by the
// agents' registration alike.
//
// A free function without state; safe from any thread.
#ifndef VIPU_WIRE_RETRY_AFTER_H_
#define VIPU_WIRE_RETRY_AFTER_H_

#include <grpcpp/client_context.h>

#include <chrono>
#include <optional>

namespace vipu::wire {

// The wait the server asked for with the reply of the call `context` made,
// or nullopt when it sent no `retry-after-ms`. A value that is not a
// number of milliseconds reads as 0: the word itself still counts.
std::optional<std::chrono::milliseconds> RetryAfterOf(const grpc::ClientContext& context);

}  // namespace vipu::wire

#endif  // VIPU_WIRE_RETRY_AFTER_H_
