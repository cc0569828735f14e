// Launch hosts: local-machine detection, route addresses and the server address per host.
#include "poprun/poprun_hosts.h"

#include <arpa/inet.h>
#include <fcntl.h>
#include <ifaddrs.h>
#include <netdb.h>
#include <netinet/in.h>
#include <poll.h>
#include <sys/socket.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <set>

#include "absl/strings/str_cat.h"
#include "base/status_macros.h"

namespace vipu::poprun {
namespace {

struct Address {
  sockaddr_storage storage{};
  socklen_t length = 0;
};

std::vector<Address> Resolve(const std::string& host) {
  addrinfo hints{};
  hints.ai_family = AF_UNSPEC;
  hints.ai_socktype = SOCK_DGRAM;
  addrinfo* list = nullptr;
  std::vector<Address> out;
  if (getaddrinfo(host.c_str(), nullptr, &hints, &list) != 0) return out;
  for (addrinfo* a = list; a != nullptr; a = a->ai_next) {
    Address addr;
    std::memcpy(&addr.storage, a->ai_addr, a->ai_addrlen);
    addr.length = a->ai_addrlen;
    out.push_back(addr);
  }
  freeaddrinfo(list);
  return out;
}

std::string Numeric(const sockaddr* sa, socklen_t length) {
  char text[NI_MAXHOST] = {};
  if (getnameinfo(sa, length, text, sizeof text, nullptr, 0, NI_NUMERICHOST) != 0) return "";
  return text;
}

bool IsLoopbackAddress(const sockaddr* sa) {
  if (sa->sa_family == AF_INET) {
    const auto* in = reinterpret_cast<const sockaddr_in*>(sa);
    return (ntohl(in->sin_addr.s_addr) >> 24) == 127;
  }
  if (sa->sa_family == AF_INET6) {
    const auto* in6 = reinterpret_cast<const sockaddr_in6*>(sa);
    return IN6_IS_ADDR_LOOPBACK(&in6->sin6_addr);
  }
  return false;
}

std::set<std::string> LocalAddresses() {
  std::set<std::string> out;
  ifaddrs* list = nullptr;
  if (getifaddrs(&list) != 0) return out;
  for (ifaddrs* i = list; i != nullptr; i = i->ifa_next) {
    if (i->ifa_addr == nullptr) continue;
    const int family = i->ifa_addr->sa_family;
    if (family != AF_INET && family != AF_INET6) continue;
    out.insert(
        Numeric(i->ifa_addr, family == AF_INET ? sizeof(sockaddr_in) : sizeof(sockaddr_in6)));
  }
  freeifaddrs(list);
  return out;
}

bool SystemIsLocal(const std::string& host) {
  const std::vector<Address> addresses = Resolve(host);
  if (addresses.empty()) return false;
  const std::set<std::string> mine = LocalAddresses();
  for (const Address& a : addresses) {
    const auto* sa = reinterpret_cast<const sockaddr*>(&a.storage);
    if (IsLoopbackAddress(sa) || mine.count(Numeric(sa, a.length)) > 0) return true;
  }
  return false;
}

absl::StatusOr<std::string> SystemRouteSource(const std::string& host) {
  const std::vector<Address> addresses = Resolve(host);
  if (addresses.empty()) {
    return absl::NotFoundError(absl::StrCat("cannot resolve host ", host));
  }
  std::string last_error;
  for (Address a : addresses) {
    auto* sa = reinterpret_cast<sockaddr*>(&a.storage);
    // Any port: a UDP connect sends nothing, it only picks the route.
    if (sa->sa_family == AF_INET) reinterpret_cast<sockaddr_in*>(sa)->sin_port = htons(9);
    if (sa->sa_family == AF_INET6) reinterpret_cast<sockaddr_in6*>(sa)->sin6_port = htons(9);
    const int fd = socket(sa->sa_family, SOCK_DGRAM | SOCK_CLOEXEC, 0);
    if (fd < 0) continue;
    if (connect(fd, sa, a.length) != 0) {
      last_error = std::strerror(errno);
      close(fd);
      continue;
    }
    sockaddr_storage local{};
    socklen_t length = sizeof local;
    const bool named = getsockname(fd, reinterpret_cast<sockaddr*>(&local), &length) == 0;
    close(fd);
    if (named) return Numeric(reinterpret_cast<sockaddr*>(&local), length);
  }
  return absl::UnavailableError(
      absl::StrCat("no route to host ", host, last_error.empty() ? "" : ": ", last_error));
}

bool SystemServerAnswers(const std::string& address, uint32_t port) {
  addrinfo hints{};
  hints.ai_family = AF_UNSPEC;
  hints.ai_socktype = SOCK_STREAM;
  hints.ai_flags = AI_NUMERICHOST;
  addrinfo* list = nullptr;
  if (getaddrinfo(address.c_str(), std::to_string(port).c_str(), &hints, &list) != 0) return false;
  bool ok = false;
  const int fd = socket(list->ai_family, SOCK_STREAM | SOCK_CLOEXEC | SOCK_NONBLOCK, 0);
  if (fd >= 0) {
    if (connect(fd, list->ai_addr, list->ai_addrlen) == 0) {
      ok = true;
    } else if (errno == EINPROGRESS) {
      // The address is this machine's own, so an answer is immediate; the
      // deadline only bounds a filtered port.
      pollfd p{fd, POLLOUT, 0};
      int error = 0;
      socklen_t len = sizeof error;
      ok = poll(&p, 1, 3000) == 1 && getsockopt(fd, SOL_SOCKET, SO_ERROR, &error, &len) == 0 &&
           error == 0;
    }
    close(fd);
  }
  freeaddrinfo(list);
  return ok;
}

}  // namespace

HostProbe SystemHostProbe() {
  return HostProbe{SystemIsLocal, SystemRouteSource, SystemServerAnswers};
}

bool IsLoopbackHost(const std::string& host) {
  if (host == "localhost") return true;
  const std::vector<Address> addresses = Resolve(host);
  if (addresses.empty()) return false;
  for (const Address& a : addresses) {
    if (!IsLoopbackAddress(reinterpret_cast<const sockaddr*>(&a.storage))) return false;
  }
  return true;
}

absl::StatusOr<std::vector<std::string>> ServerAddressPerHost(const std::vector<std::string>& hosts,
                                                              const std::string& server_host,
                                                              uint32_t port,
                                                              const HostProbe& probe) {
  std::vector<std::string> out(hosts.size(), server_host);
  if (hosts.empty() || !IsLoopbackHost(server_host)) return out;
  for (size_t i = 0; i < hosts.size(); ++i) {
    if (probe.is_local(hosts[i])) continue;
    auto route = probe.route_source(hosts[i]);
    if (!route.ok()) {
      return absl::FailedPreconditionError(
          absl::StrCat("--host ", hosts[i], ": the V-IPU server is at ", server_host, ":", port,
                       ", a loopback address that host cannot reach, and ",
                       std::string(route.status().message()),
                       "; pass --vipu-server-host with an address the host can reach"));
    }
    if (!probe.server_answers(*route, port)) {
      return absl::FailedPreconditionError(absl::StrCat(
          "--host ", hosts[i], ": the V-IPU server is at ", server_host, ":", port,
          ", a loopback address that host cannot reach, and does not answer on ", *route, ":", port,
          ", this machine's address towards it; make vipu-server listen on an address "
          "the host can reach and pass it with --vipu-server-host"));
    }
    out[i] = *route;
  }
  return out;
}

absl::StatusOr<std::vector<std::string>> MembersPerHost(
    const std::vector<std::string>& hosts, const std::vector<wire::ServerMember>& members,
    const HostProbe& probe) {
  std::vector<std::string> out(hosts.size());
  for (const wire::ServerMember& member : members) {
    ASSIGN_OR_RETURN(auto per_host, ServerAddressPerHost(hosts, member.host, member.port, probe));
    for (size_t i = 0; i < hosts.size(); ++i) {
      wire::ServerMember mapped = member;
      mapped.host = per_host[i];
      absl::StrAppend(&out[i], out[i].empty() ? "" : ",", mapped.Entry());
    }
  }
  return out;
}

absl::Status CheckSynchronisation(const PoprunOptions& o, const HostProbe& probe) {
  const std::vector<std::pair<bool, const char*>> asked = {
      {o.synchronise_python_venv, "--synchronise-python-venv"},
      {o.synchronise_poplar_sdk, "--synchronise-poplar-sdk"},
      {o.distribute_ssh_key, "--distribute-ssh-key"}};
  for (const auto& [on, option] : asked) {
    if (!on) continue;
    for (const std::string& host : o.hosts) {
      if (probe.is_local(host)) continue;
      return absl::FailedPreconditionError(absl::StrCat(
          option, ": host ", host,
          " is another machine and poprun copies nothing between machines; put the files at "
          "the same path on every host (a shared file system) and set ",
          option, "=no"));
    }
  }
  return absl::OkStatus();
}

}  // namespace vipu::poprun
