// The ports a partition's IPUoF configs send applications to, and which
// process listens on a TCP port: for the tests that check that every port of
// a pod is its own and held by the agent that serves it. Header-only, like
// daemon_process.h.
#ifndef VIPU_TESTS_INTEGRATION_MACHINE_PORTS_H_
#define VIPU_TESTS_INTEGRATION_MACHINE_PORTS_H_

#include <dirent.h>
#include <grpcpp/grpcpp.h>
#include <sys/types.h>
#include <unistd.h>

#include <chrono>
#include <cstdint>
#include <fstream>
#include <map>
#include <sstream>
#include <string>
#include <vector>

#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "vipuuser.grpc.pb.h"

namespace vipu::testing {

// One device of an IPUoF config: the machine's address and its two ports.
struct DevicePorts {
  std::string ip;
  uint32_t server_port = 0;
  uint32_t rdma_port = 0;
};

// Every device of every GCD of `partition`, from GetPartitionIpuofConfig on
// the server at `address` (no GCD named: all of them). Empty when the call
// fails.
inline std::vector<DevicePorts> IpuofDevicePorts(const std::string& address,
                                                 const std::string& partition) {
  auto stub = virmgrpc::UserService::NewStub(
      grpc::CreateChannel(address, grpc::InsecureChannelCredentials()));
  grpc::ClientContext context;
  context.set_deadline(std::chrono::system_clock::now() + std::chrono::seconds(30));
  virmgrpc::GetPartitionIpuofConfigRequest request;
  request.set_partition_id(partition);
  virmgrpc::GetPartitionIpuofConfigReply reply;
  std::vector<DevicePorts> out;
  if (!stub->GetPartitionIpuofConfig(&context, request, &reply).ok()) return out;
  for (const auto& gcd : reply.ipuof_config().gcd_configs()) {
    for (const auto& d : gcd.devices()) out.push_back({d.ip(), d.server_port(), d.rdma_port()});
  }
  return out;
}

// By TCP port: which of `pids` listens on it (any address, IPv4 or IPv6).
// Ports none of them listens on are left out.
inline std::map<uint32_t, pid_t> ListeningPortOwners(const std::vector<pid_t>& pids) {
  // Socket inode -> pid, from each process's descriptors.
  std::map<std::string, pid_t> inode_owner;
  for (pid_t pid : pids) {
    const std::string fd_dir = absl::StrCat("/proc/", pid, "/fd");
    DIR* dir = opendir(fd_dir.c_str());
    if (dir == nullptr) continue;
    while (dirent* entry = readdir(dir)) {
      char target[256] = {};
      const std::string link = fd_dir + "/" + entry->d_name;
      const ssize_t n = readlink(link.c_str(), target, sizeof target - 1);
      const std::string text(target, n > 0 ? static_cast<size_t>(n) : 0);
      // "socket:[12345]"
      if (text.rfind("socket:[", 0) == 0 && text.back() == ']') {
        inode_owner[text.substr(8, text.size() - 9)] = pid;
      }
    }
    closedir(dir);
  }
  std::map<uint32_t, pid_t> owners;
  for (const char* table : {"/proc/net/tcp", "/proc/net/tcp6"}) {
    std::ifstream in(table);
    std::string line;
    std::getline(in, line);  // the header
    while (std::getline(in, line)) {
      // sl local_address rem_address st tx:rx tr:when retrnsmt uid timeout inode
      std::istringstream fields(line);
      std::string sl, local, remote, state, queues, timer, retransmits, uid, timeout, inode;
      fields >> sl >> local >> remote >> state >> queues >> timer >> retransmits >> uid >>
          timeout >> inode;
      if (state != "0A") continue;  // TCP_LISTEN
      uint32_t port = 0;
      if (!absl::SimpleHexAtoi(local.substr(local.rfind(':') + 1), &port)) continue;
      if (auto it = inode_owner.find(inode); it != inode_owner.end()) owners[port] = it->second;
    }
  }
  return owners;
}

}  // namespace vipu::testing

#endif  // VIPU_TESTS_INTEGRATION_MACHINE_PORTS_H_
