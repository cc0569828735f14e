// The launch hosts as poprun sees them: which are this machine, and the
// V-IPU server address the instances on each host are given. A server
// configured on a loopback address (the default, localhost) is reachable as
// such only from this machine, so instances elsewhere get this machine's
// address on the route to their host, provided the server answers there.
#ifndef VIPU_POPRUN_POPRUN_HOSTS_H_
#define VIPU_POPRUN_POPRUN_HOSTS_H_

#include <cstdint>
#include <functional>
#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "poprun/poprun_options.h"
#include "wire/server_members.h"

namespace vipu::poprun {

// The system calls behind the decisions, replaceable in tests.
struct HostProbe {
  // The host resolves to a loopback address or to one of this machine's.
  std::function<bool(const std::string& host)> is_local;
  // This machine's address on the route to the host.
  std::function<absl::StatusOr<std::string>(const std::string& host)> route_source;
  // A TCP connection to address:port is accepted.
  std::function<bool(const std::string& address, uint32_t port)> server_answers;
};

HostProbe SystemHostProbe();

// "localhost", 127.0.0.0/8, ::1, or a name that resolves only to those.
bool IsLoopbackHost(const std::string& host);

// The server address for the instances of each of `hosts`, in order:
// `server_host` itself unless it is loopback and the host is not this
// machine; then the route address, if the server answers on it. Otherwise
// FAILED_PRECONDITION naming the host and what to pass instead.
absl::StatusOr<std::vector<std::string>> ServerAddressPerHost(const std::vector<std::string>& hosts,
                                                              const std::string& server_host,
                                                              uint32_t port,
                                                              const HostProbe& probe);

// IPUOF_VIPU_API_HOST for the instances of each of `hosts`, in order: every
// member of the server mapped by ServerAddressPerHost, written as it was
// given (IPv6 bracketed, ":PORT" only when the entry had one) and joined
// with ','. With one member given as a bare host, that host's address
// alone, as ServerAddressPerHost gives it. Its FAILED_PRECONDITION for the
// first member a host's instances could not reach.
absl::StatusOr<std::vector<std::string>> MembersPerHost(
    const std::vector<std::string>& hosts, const std::vector<wire::ServerMember>& members,
    const HostProbe& probe);

// --synchronise-python-venv, --synchronise-poplar-sdk and
// --distribute-ssh-key: nothing to do when every host is this machine;
// refused naming the option and the host when one is not, since poprun
// copies nothing between machines.
absl::Status CheckSynchronisation(const PoprunOptions& options, const HostProbe& probe);

}  // namespace vipu::poprun

#endif  // VIPU_POPRUN_POPRUN_HOSTS_H_
