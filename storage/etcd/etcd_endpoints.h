// The list of etcd client URLs a member is given ("--etcd-endpoints"), parsed
// into the addresses gRPC dials. Only the forms etcd itself advertises are
// accepted: http://HOST:PORT and https://HOST:PORT, HOST a name, an IPv4
// address or a bracketed IPv6 address. Stateless; safe from any thread.
#ifndef VIPU_STORAGE_ETCD_ETCD_ENDPOINTS_H_
#define VIPU_STORAGE_ETCD_ETCD_ENDPOINTS_H_

#include <string>
#include <string_view>
#include <vector>

#include "absl/status/statusor.h"

namespace vipu::storage::etcd {

// One etcd member's client URL.
struct EtcdEndpoint {
  // https: the channel uses TLS; http: plaintext.
  bool tls = false;
  // "HOST:PORT" as gRPC dials it ("127.0.0.1:2379", "[::1]:2379").
  std::string host_port;
  // The URL as given ("https://etcd1:2379"), for messages.
  std::string url;
};

// Parses a comma-separated list of client URLs, in order. Spaces around an
// entry are ignored. Returns INVALID_ARGUMENT naming the offending entry and
// what is wrong with it: an empty list or entry, a missing or unknown scheme,
// a missing host, a missing, non-numeric or out-of-range port, or anything
// after the port (a path, a query).
absl::StatusOr<std::vector<EtcdEndpoint>> ParseEtcdEndpoints(std::string_view list);

}  // namespace vipu::storage::etcd

#endif  // VIPU_STORAGE_ETCD_ETCD_ENDPOINTS_H_
