// RdmaPorts: the listening sockets that hold each simulated machine's RDMA port.
#include "agents/rdma_ports.h"

#include <netdb.h>
#include <netinet/in.h>
#include <sys/resource.h>
#include <sys/socket.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstring>
#include <utility>

#include "absl/strings/str_cat.h"
#include "base/host_port.h"
#include "spdlog/spdlog.h"

namespace vipu::agents {
namespace {

// Descriptors beyond one per port: gRPC's listeners, channels and files.
constexpr rlim_t kSpareDescriptors = 256;

// Many machines in one process hold one descriptor each: raise the soft
// limit towards the hard one when the default would not do.
void RaiseDescriptorLimit(size_t sockets) {
  rlimit limit{};
  if (getrlimit(RLIMIT_NOFILE, &limit) != 0) return;
  const rlim_t want = static_cast<rlim_t>(sockets) + kSpareDescriptors;
  if (limit.rlim_cur != RLIM_INFINITY && limit.rlim_cur < want) {
    limit.rlim_cur = limit.rlim_max == RLIM_INFINITY ? want : std::min(want, limit.rlim_max);
    setrlimit(RLIMIT_NOFILE, &limit);
  }
}

// A socket listening on host:port and the port it got, or the reason it
// could not.
absl::StatusOr<std::pair<int, uint32_t>> ListenOn(const std::string& host, uint32_t port) {
  addrinfo hints{};
  hints.ai_family = AF_UNSPEC;
  hints.ai_socktype = SOCK_STREAM;
  hints.ai_flags = AI_PASSIVE | AI_NUMERICSERV;
  addrinfo* found = nullptr;
  const std::string service = absl::StrCat(port);
  const std::string name = host.size() > 2 && host.front() == '[' && host.back() == ']'
                               ? host.substr(1, host.size() - 2)
                               : host;
  if (int rc = getaddrinfo(name.c_str(), service.c_str(), &hints, &found); rc != 0) {
    return absl::UnavailableError(absl::StrCat("cannot resolve ", host, ": ", gai_strerror(rc)));
  }
  std::string error = "no address";
  for (addrinfo* a = found; a != nullptr; a = a->ai_next) {
    const int fd = socket(a->ai_family, a->ai_socktype | SOCK_CLOEXEC, a->ai_protocol);
    if (fd < 0) {
      error = std::strerror(errno);
      continue;
    }
    // As gRPC binds: connections of an earlier holder in TIME_WAIT do not
    // keep the port; a listener does (no SO_REUSEPORT).
    const int one = 1;
    setsockopt(fd, SOL_SOCKET, SO_REUSEADDR, &one, sizeof one);
    sockaddr_storage bound{};
    socklen_t length = sizeof bound;
    if (bind(fd, a->ai_addr, a->ai_addrlen) != 0 || listen(fd, 1) != 0 ||
        getsockname(fd, reinterpret_cast<sockaddr*>(&bound), &length) != 0) {
      error = std::strerror(errno);
      close(fd);
      continue;
    }
    freeaddrinfo(found);
    const uint16_t got = bound.ss_family == AF_INET6
                             ? reinterpret_cast<sockaddr_in6*>(&bound)->sin6_port
                             : reinterpret_cast<sockaddr_in*>(&bound)->sin_port;
    return std::make_pair(fd, static_cast<uint32_t>(ntohs(got)));
  }
  freeaddrinfo(found);
  return absl::UnavailableError(error);
}

}  // namespace

absl::StatusOr<std::unique_ptr<RdmaPorts>> RdmaPorts::Listen(const std::string& host,
                                                             const std::vector<uint32_t>& ports,
                                                             StablePortPicker* picker) {
  RaiseDescriptorLimit(ports.size());
  std::unique_ptr<RdmaPorts> held(new RdmaPorts());
  held->fds_.reserve(ports.size());
  held->ports_.reserve(ports.size());
  for (uint32_t port : ports) {
    absl::StatusOr<std::pair<int, uint32_t>> listening =
        absl::UnavailableError("no free port above the ephemeral range");
    if (port != 0 || picker == nullptr) listening = ListenOn(host, port);
    if (!listening.ok() && picker != nullptr) {
      const absl::Status first = listening.status();
      const uint32_t taken = picker->Take([&](uint32_t candidate) {
        listening = ListenOn(host, candidate);
        return listening.ok();
      });
      if (taken != 0 && port != 0) {
        spdlog::info("RDMA port {} is taken ({}); holding {} instead", HostPort(host, port),
                     std::string(first.message()), taken);
      }
      if (taken == 0) {
        spdlog::warn("no free RDMA port above the ephemeral range; taking any free port");
        listening = ListenOn(host, 0);
      }
    }
    if (!listening.ok()) {
      // The destructor closes the ones already held.
      return absl::UnavailableError(absl::StrCat(
          "cannot listen on RDMA port ", HostPort(host, port), ": ", listening.status().message()));
    }
    held->fds_.push_back(listening->first);
    held->ports_.push_back(listening->second);
  }
  return held;
}

RdmaPorts::~RdmaPorts() {
  for (int fd : fds_) close(fd);
}

}  // namespace vipu::agents
