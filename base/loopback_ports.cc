// Loopback ports: a free-port probe, the stable range, and the holder of a port from /proc.
#include "base/loopback_ports.h"

#include <dirent.h>
#include <netinet/in.h>
#include <sys/socket.h>
#include <unistd.h>

#include <cstdlib>
#include <fstream>
#include <set>
#include <sstream>

namespace vipu {
namespace {

// The socket inodes listening on `port`, from /proc/net/tcp and tcp6
// (state 0A is LISTEN; the local address's port is hexadecimal).
std::set<std::string> ListeningInodes(uint32_t port) {
  std::set<std::string> inodes;
  for (const char* table : {"/proc/net/tcp", "/proc/net/tcp6"}) {
    std::ifstream in(table);
    std::string line;
    std::getline(in, line);  // the header
    while (std::getline(in, line)) {
      std::istringstream fields(line);
      std::string slot, local, remote, state, queues, timer, retransmits, uid, timeout, inode;
      if (!(fields >> slot >> local >> remote >> state >> queues >> timer >> retransmits >> uid >>
            timeout >> inode)) {
        continue;
      }
      const size_t colon = local.rfind(':');
      if (state != "0A" || colon == std::string::npos) continue;
      if (std::strtoul(local.c_str() + colon + 1, nullptr, 16) == port) inodes.insert(inode);
    }
  }
  return inodes;
}

}  // namespace

bool LoopbackPortFree(uint32_t port) {
  const int fd = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
  if (fd < 0) return false;
  const int one = 1;
  setsockopt(fd, SOL_SOCKET, SO_REUSEADDR, &one, sizeof one);
  sockaddr_in addr{};
  addr.sin_family = AF_INET;
  addr.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  addr.sin_port = htons(static_cast<uint16_t>(port));
  const bool free =
      bind(fd, reinterpret_cast<sockaddr*>(&addr), sizeof addr) == 0 && listen(fd, 1) == 0;
  close(fd);
  return free;
}

std::pair<uint32_t, uint32_t> StablePortRange() {
  uint32_t low = 32768, high = 60999;
  std::ifstream range("/proc/sys/net/ipv4/ip_local_port_range");
  range >> low >> high;
  return {high + 1, 65535};
}

std::string PortHolder(uint32_t port) {
  const std::set<std::string> inodes = ListeningInodes(port);
  if (inodes.empty()) return "";
  DIR* proc = opendir("/proc");
  if (proc == nullptr) return "";
  std::string holder;
  while (holder.empty()) {
    dirent* entry = readdir(proc);
    if (entry == nullptr) break;
    const std::string pid = entry->d_name;
    if (pid.find_first_not_of("0123456789") != std::string::npos) continue;
    const std::string fd_dir = "/proc/" + pid + "/fd";
    DIR* fds = opendir(fd_dir.c_str());
    if (fds == nullptr) continue;
    while (dirent* fd = readdir(fds)) {
      char target[64] = {};
      const std::string link = fd_dir + "/" + fd->d_name;
      const ssize_t n = readlink(link.c_str(), target, sizeof target - 1);
      if (n <= 0) continue;
      const std::string socket_name(target, static_cast<size_t>(n));
      // "socket:[INODE]"
      if (socket_name.rfind("socket:[", 0) != 0) continue;
      if (inodes.count(socket_name.substr(8, socket_name.size() - 9)) == 0) continue;
      std::string name;
      std::ifstream comm("/proc/" + pid + "/comm");
      std::getline(comm, name);
      holder = "pid " + pid + (name.empty() ? "" : " (" + name + ")");
      break;
    }
    closedir(fds);
  }
  closedir(proc);
  return holder;
}

std::string ListenFailureReason(const std::string& address) {
  const size_t colon = address.rfind(':');
  if (colon == std::string::npos) return "";
  char* end = nullptr;
  const unsigned long port = std::strtoul(address.c_str() + colon + 1, &end, 10);
  if (end == address.c_str() + colon + 1 || *end != '\0' || port == 0 || port > 65535) return "";
  const std::string holder = PortHolder(static_cast<uint32_t>(port));
  return holder.empty() ? "" : ": the address is in use by " + holder;
}

}  // namespace vipu
