// Drives the agents of a partition over the agent API: configure, reset and
// release its IPUs on every machine it spans, in parallel, with a deadline.
#ifndef VIPU_SERVER_AGENT_DRIVER_H_
#define VIPU_SERVER_AGENT_DRIVER_H_

#include <functional>
#include <map>
#include <memory>
#include <string>
#include <vector>

#include "absl/base/thread_annotations.h"
#include "absl/status/statusor.h"
#include "absl/time/time.h"
#include "base/mutex.h"
#include "fabric/types.h"
#include "grpcpp/security/credentials.h"
#include "server/agent_registry.h"
#include "vipu_agent.grpc.pb.h"

namespace vipu::server {

class AgentDriver {
 public:
  AgentDriver(const AgentRegistry* registry, absl::Duration deadline)
      : registry_(registry), deadline_(deadline) {}

  enum class Op { kConfigure, kReset, kRelease };

  // Applies `op` for the partition at `generation` on every machine holding
  // its IPUs. Returns one message per machine that failed, naming the
  // machine; empty when all succeeded. kReset falls back to kConfigure on a
  // machine that no longer holds the partition (it lost it in a restart).
  std::vector<std::string> Apply(Op op, const fabric::Partition& partition, uint64_t generation);

  // Owned link ports per machine of a partition (fabric::PartitionPorts),
  // sent with ConfigurePartition together with every member's address.
  using PortsFn = std::function<absl::StatusOr<std::map<std::string, std::vector<uint32_t>>>(
      const fabric::Partition&)>;
  // Unset: no ports are claimed (agents then check no link ownership).
  void set_link_ports(PortsFn fn) { link_ports_ = std::move(fn); }

  // Secure mode: channels to agents use `credentials` (mutual TLS with the
  // server's certificate) and verify the agent's certificate against the
  // agent id (GRPC_SSL_TARGET_NAME_OVERRIDE_ARG), not its host. Null:
  // plaintext. Set before the first call.
  void set_channel_credentials(std::shared_ptr<grpc::ChannelCredentials> credentials) {
    credentials_ = std::move(credentials);
  }

  // A stub for a registered agent at its current address; nullptr when the
  // agent is not registered. For the calls this class does not wrap.
  std::shared_ptr<vipuagent::Agent::Stub> Stub(const std::string& agent_id);
  // The stub for `agent_id` at host:port. Agents at one address (a process
  // serving many machines on a shared port) share one channel: 16,384
  // machines in 16 processes are 16 channels, not 16,384.
  std::shared_ptr<vipuagent::Agent::Stub> StubAt(const std::string& agent_id,
                                                 const std::string& host, uint32_t port);
  absl::Duration deadline() const { return deadline_; }

  // Release of a partition that `agent_id` holds but the database does not
  // want there (reconciliation).
  std::vector<std::string> ReleaseOn(const std::string& agent_id, const std::string& partition_id,
                                     uint64_t generation);

 private:
  std::shared_ptr<vipuagent::Agent::Stub> StubFor(const LiveAgent& agent);

  const AgentRegistry* registry_;
  const absl::Duration deadline_;
  PortsFn link_ports_;
  std::shared_ptr<grpc::ChannelCredentials> credentials_;
  struct Channel {
    std::shared_ptr<vipuagent::Agent::Stub> stub;
    size_t agents = 0;  // agents last seen at this address; the channel goes at 0
  };
  vipu::Mutex mu_;
  std::map<std::string, std::string> address_of_ ABSL_GUARDED_BY(mu_);  // agent id -> host:port
  std::map<std::string, Channel> channels_ ABSL_GUARDED_BY(mu_);        // host:port -> channel
};

}  // namespace vipu::server

#endif  // VIPU_SERVER_AGENT_DRIVER_H_
