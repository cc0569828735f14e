// AgentDriver: configure, reset and release a partition on its machines in parallel; agent stubs.
#include "server/agent_driver.h"

#include <grpcpp/grpcpp.h>

#include "absl/strings/str_cat.h"
#include "spdlog/spdlog.h"

namespace vipu::server {
namespace {

// Counts outstanding callbacks; Wait() returns when all have completed.
class Latch {
 public:
  explicit Latch(int n) : n_(n) {}
  void CountDown() ABSL_LOCKS_EXCLUDED(mu_) {
    vipu::MutexLock lock(&mu_);
    --n_;
  }
  void Wait() ABSL_LOCKS_EXCLUDED(mu_) {
    vipu::MutexLock lock(&mu_);
    mu_.Await(absl::Condition(this, &Latch::Done));
  }

 private:
  bool Done() const ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_) { return n_ == 0; }

  vipu::Mutex mu_;
  int n_ ABSL_GUARDED_BY(mu_);
};

// One machine's part of an operation: the call's state lives here until its
// callback has run.
struct MachineCall {
  std::string agent_id;
  std::vector<uint32_t> ipus;
  grpc::ClientContext ctx;
  vipuagent::ConfigurePartitionRequest configure;
  vipuagent::ConfigurePartitionReply configure_reply;
  vipuagent::ResetPartitionRequest reset;
  vipuagent::ResetPartitionReply reset_reply;
  vipuagent::ReleasePartitionRequest release;
  vipuagent::ReleasePartitionReply release_reply;
  grpc::Status status;
  std::shared_ptr<vipuagent::Agent::Stub> stub;
};

std::string Describe(const std::string& agent_id, const grpc::Status& s) {
  return absl::StrCat("agent ", agent_id, ": ",
                      s.error_message().empty() ? "call failed" : s.error_message(), " (",
                      s.error_code(), ")");
}

}  // namespace

std::shared_ptr<vipuagent::Agent::Stub> AgentDriver::StubFor(const LiveAgent& agent) {
  return StubAt(agent.id, agent.host, agent.port);
}

std::shared_ptr<vipuagent::Agent::Stub> AgentDriver::StubAt(const std::string& agent_id,
                                                            const std::string& host,
                                                            uint32_t port) {
  std::string address = absl::StrCat(host, ":", port);
  vipu::MutexLock lock(&mu_);
  auto [seen, inserted] = address_of_.try_emplace(agent_id, address);
  if (!inserted && seen->second != address) {
    // The agent moved: the old address loses a user.
    auto old = channels_.find(seen->second);
    if (old != channels_.end() && --old->second.agents == 0) channels_.erase(old);
    seen->second = address;
    inserted = true;
  }
  Channel& channel = channels_[address];
  if (inserted) ++channel.agents;
  if (!channel.stub) {
    std::shared_ptr<grpc::Channel> created;
    if (credentials_) {
      // The agent proves it is `agent_id`: its certificate must carry SAN
      // DNS:<agent-id>. Agents sharing an address share a certificate
      // naming all of them, so the first one's id stands for the channel.
      grpc::ChannelArguments args;
      args.SetSslTargetNameOverride(agent_id);
      created = grpc::CreateCustomChannel(address, credentials_, args);
    } else {
      created = grpc::CreateChannel(address, grpc::InsecureChannelCredentials());
    }
    channel.stub = std::shared_ptr<vipuagent::Agent::Stub>(vipuagent::Agent::NewStub(created));
  }
  return channel.stub;
}

std::shared_ptr<vipuagent::Agent::Stub> AgentDriver::Stub(const std::string& agent_id) {
  std::optional<AgentEndpoint> endpoint = registry_->EndpointOf(agent_id);
  if (!endpoint) return nullptr;
  return StubAt(agent_id, endpoint->host, endpoint->port);
}

std::vector<std::string> AgentDriver::Apply(Op op, const fabric::Partition& partition,
                                            uint64_t generation) {
  // Group the partition's IPUs by machine, keeping the partition's order.
  std::vector<std::unique_ptr<MachineCall>> calls;
  std::map<std::string, MachineCall*> by_agent;
  for (const fabric::PartitionIpu& ipu : partition.ipus) {
    MachineCall*& call = by_agent[ipu.ipu.agent_id];
    if (call == nullptr) {
      calls.push_back(std::make_unique<MachineCall>());
      call = calls.back().get();
      call->agent_id = ipu.ipu.agent_id;
    }
    call->ipus.push_back(ipu.ipu.ipu);
  }

  std::vector<std::string> errors;
  std::vector<MachineCall*> started;
  for (auto& call : calls) {
    std::optional<LiveAgent> agent = registry_->Get(call->agent_id);
    if (!agent) {
      errors.push_back(absl::StrCat("agent ", call->agent_id, ": not connected"));
      continue;
    }
    call->stub = StubFor(*agent);
    call->ctx.set_deadline(absl::ToChronoTime(absl::Now() + deadline_));
    started.push_back(call.get());
  }

  // What each machine owns besides its IPUs, and where the others are.
  std::map<std::string, std::vector<uint32_t>> ports;
  std::vector<vipuagent::PartitionMember> members;
  if (op == Op::kConfigure || op == Op::kReset) {
    if (link_ports_) {
      auto planned = link_ports_(partition);
      if (planned.ok()) {
        ports = std::move(*planned);
      } else {
        spdlog::warn("partition {}: no link ports claimed: {}", partition.id,
                     std::string(planned.status().message()));
      }
    }
    for (auto& call : calls) {
      vipuagent::PartitionMember m;
      m.set_agent_id(call->agent_id);
      if (std::optional<LiveAgent> live = registry_->Get(call->agent_id)) {
        m.set_host(live->host);
        m.set_port(live->port);
      }
      if (m.port() != 0) members.push_back(std::move(m));
    }
  }

  auto configure_request = [&](MachineCall* c) {
    c->configure.set_agent_id(c->agent_id);
    c->configure.set_partition_id(partition.id);
    c->configure.set_generation(generation);
    for (uint32_t i : c->ipus) c->configure.add_ipus(i);
    c->configure.set_ipulink_routing_type(
        static_cast<virmgrpc::IpuLinkRoutingType>(partition.routing));
    c->configure.set_gw_routing_type(
        static_cast<virmgrpc::GatewayRoutingType>(partition.gw_routing));
    c->configure.set_sync_type(static_cast<virmgrpc::SyncType>(partition.sync_type));
    c->configure.set_partition_size(partition.size());
    c->configure.set_num_ilds(partition.num_ilds);
    for (uint32_t port : ports[c->agent_id]) c->configure.add_link_ports(port);
    for (const auto& m : members) *c->configure.add_members() = m;
  };

  Latch latch(static_cast<int>(started.size()));
  for (MachineCall* c : started) {
    auto done = [c, &latch](grpc::Status s) {
      c->status = std::move(s);
      latch.CountDown();
    };
    switch (op) {
      case Op::kConfigure:
        configure_request(c);
        c->stub->async()->ConfigurePartition(&c->ctx, &c->configure, &c->configure_reply, done);
        break;
      case Op::kReset:
        c->reset.set_agent_id(c->agent_id);
        c->reset.set_partition_id(partition.id);
        c->reset.set_generation(generation);
        c->stub->async()->ResetPartition(&c->ctx, &c->reset, &c->reset_reply, done);
        break;
      case Op::kRelease:
        c->release.set_agent_id(c->agent_id);
        c->release.set_partition_id(partition.id);
        c->release.set_generation(generation);
        c->stub->async()->ReleasePartition(&c->ctx, &c->release, &c->release_reply, done);
        break;
    }
  }
  latch.Wait();

  std::vector<MachineCall*> reconfigure;
  for (MachineCall* c : started) {
    if (c->status.ok()) continue;
    if (op == Op::kReset && c->status.error_code() == grpc::StatusCode::NOT_FOUND) {
      reconfigure.push_back(c);
      continue;
    }
    errors.push_back(Describe(c->agent_id, c->status));
  }
  // Machines that lost the partition get it configured afresh, one at a
  // time: this is the rare path after an agent restart.
  for (MachineCall* c : reconfigure) {
    grpc::ClientContext ctx;
    ctx.set_deadline(absl::ToChronoTime(absl::Now() + deadline_));
    configure_request(c);
    grpc::Status s = c->stub->ConfigurePartition(&ctx, c->configure, &c->configure_reply);
    if (!s.ok()) errors.push_back(Describe(c->agent_id, s));
  }
  return errors;
}

std::vector<std::string> AgentDriver::ReleaseOn(const std::string& agent_id,
                                                const std::string& partition_id,
                                                uint64_t generation) {
  std::optional<LiveAgent> agent = registry_->Get(agent_id);
  if (!agent) return {absl::StrCat("agent ", agent_id, ": not connected")};
  grpc::ClientContext ctx;
  ctx.set_deadline(absl::ToChronoTime(absl::Now() + deadline_));
  vipuagent::ReleasePartitionRequest req;
  req.set_agent_id(agent_id);
  req.set_partition_id(partition_id);
  req.set_generation(generation);
  vipuagent::ReleasePartitionReply reply;
  grpc::Status s = StubFor(*agent)->ReleasePartition(&ctx, req, &reply);
  if (!s.ok()) return {Describe(agent_id, s)};
  return {};
}

}  // namespace vipu::server
