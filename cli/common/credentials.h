// How a client of a V-IPU pod proves who it is, from a resolved ClientConfig
// (client_config.h): the channel credentials (mutual TLS with the pod's CA
// and the client certificate when a CA is configured, plaintext otherwise)
// and the per-call credentials (the user id and access key as gRPC metadata,
// the names vipu-server reads, wire/metadata_keys.h). The CLIs and the
// IPUoF client (popdist_ipuof) share these, so an application under poprun
// attaches with exactly what `vipu` would use.
//
// Thread safety: the functions are reentrant; they only read their arguments
// and the files the config names.
#ifndef VIPU_CLI_COMMON_CREDENTIALS_H_
#define VIPU_CLI_COMMON_CREDENTIALS_H_

#include <grpcpp/grpcpp.h>

#include <memory>

#include "absl/status/statusor.h"
#include "cli/common/client_config.h"

namespace vipu::cli {

// Credentials for a channel to any end-point of the pod: vipu-server or an
// IPU-Machine's agent. With config.tls(), TLS that trusts only config.tls_ca
// and presents config.tls_cert/tls_key when set; the peer's certificate is
// checked against the host of the channel's target. Without a CA, plaintext.
// INVALID_ARGUMENT naming the file when one cannot be read ("TLS CA file:
// cannot read '/x'").
absl::StatusOr<std::shared_ptr<grpc::ChannelCredentials>> ChannelCredentials(
    const ClientConfig& config);

// Adds config.user_id and config.access_key (each when not empty) to the
// call's metadata. The key travels only inside the call, never in a
// process's arguments.
void AddCallCredentials(const ClientConfig& config, grpc::ClientContext* context);

}  // namespace vipu::cli

#endif  // VIPU_CLI_COMMON_CREDENTIALS_H_
