// GrpcAgentClient: agent calls over gRPC, channels per agent address, and the agent API's messages.
#include "server/fleet/grpc_agent_client.h"

#include <grpcpp/grpcpp.h>

#include <map>
#include <utility>
#include <vector>

#include "absl/strings/str_cat.h"
#include "base/mutex.h"
#include "wire/status.h"

namespace vipu::server {

// The calls whose state (context, request, reply, channel) still exists.
class CallTracker {
 public:
  // Held by a call's state and destroyed with it, last.
  class Token {
   public:
    Token() = default;
    Token(const Token&) = delete;
    Token& operator=(const Token&) = delete;
    ~Token() {
      if (tracker_ != nullptr) tracker_->Freed(key_);
    }

   private:
    friend class CallTracker;
    CallTracker* tracker_ = nullptr;
    const void* key_ = nullptr;
  };

  // Counts the call `key` until `token` goes; `context` is what cancels it.
  // A call listed after CancelAndWait began is cancelled at once.
  void List(const void* key, std::weak_ptr<grpc::ClientContext> context, Token* token)
      ABSL_LOCKS_EXCLUDED(mu_) {
    bool cancel = false;
    {
      vipu::MutexLock lock(&mu_);
      calls_.emplace(key, context);
      cancel = closing_;
    }
    token->tracker_ = this;
    token->key_ = key;
    // Before the call starts, TryCancel marks the context, and gRPC ends the
    // call as cancelled as soon as it starts.
    if (cancel) {
      if (auto c = context.lock()) c->TryCancel();
    }
  }

  // Cancels the calls in flight and returns once every call's state is freed.
  void CancelAndWait() ABSL_LOCKS_EXCLUDED(mu_) {
    std::vector<std::weak_ptr<grpc::ClientContext>> contexts;
    {
      vipu::MutexLock lock(&mu_);
      closing_ = true;
      for (const auto& [key, context] : calls_) contexts.push_back(context);
    }
    // Without the lock: a cancelled call's callback may run on this thread
    // and free the call, which takes the lock.
    for (const auto& weak : contexts) {
      if (auto c = weak.lock()) c->TryCancel();
    }
    vipu::MutexLock lock(&mu_);
    while (!calls_.empty()) freed_.Wait(&mu_);
  }

 private:
  void Freed(const void* key) ABSL_LOCKS_EXCLUDED(mu_) {
    vipu::MutexLock lock(&mu_);
    calls_.erase(key);
    if (calls_.empty()) freed_.SignalAll();
  }

  vipu::Mutex mu_;
  vipu::CondVar freed_;
  std::map<const void*, std::weak_ptr<grpc::ClientContext>> calls_ ABSL_GUARDED_BY(mu_);
  bool closing_ ABSL_GUARDED_BY(mu_) = false;
};

namespace {

using Stub = vipuagent::Agent::Stub;

// Set on the thread that is starting a call, to the call: its callback may
// run inline, on that thread, before the start returns.
thread_local const void* tl_starting = nullptr;

// One call's state, alive until its callback has run. gRPC's completion
// thread runs the callback after a hand-off ThreadSanitizer does not see
// (gRPC is not instrumented), while the start of the call goes on writing
// the callback's state inside gRPC's inline code. `started` is held for the
// whole start; a callback on another thread takes it once before anything
// else, which orders everything the start wrote before the callback.
template <typename Request, typename Reply>
struct Call {
  CallTracker::Token token;  // first, so destroyed last: after the context and the channel
  vipu::Mutex started;
  grpc::ClientContext context;
  Request request;
  Reply reply;
  std::shared_ptr<Stub> stub;  // keeps the channel while the call runs
};

// Sends `request` with `method` (a lambda naming the stub's async method)
// and passes the outcome and the reply to `finish`, once.
template <typename Reply, typename Request, typename Method, typename Finish>
void Send(CallTracker* tracker, std::shared_ptr<Stub> stub, absl::Duration deadline,
          Request request, Method method, Finish finish) {
  auto call = std::make_shared<Call<Request, Reply>>();
  call->request = std::move(request);
  call->stub = std::move(stub);
  call->context.set_deadline(absl::ToChronoTime(absl::Now() + deadline));
  tracker->List(call.get(), std::shared_ptr<grpc::ClientContext>(call, &call->context),
                &call->token);
  const void* const previous = tl_starting;
  tl_starting = call.get();
  call->started.Lock();
  method(call->stub->async(), &call->context, &call->request, &call->reply,
         [call, finish = std::move(finish)](grpc::Status s) {
           if (tl_starting != call.get()) {
             // Waits until the start has returned, at most that long.
             call->started.Lock();
             call->started.Unlock();
           }
           finish(wire::FromGrpc(s), call->reply);
         });
  call->started.Unlock();
  tl_starting = previous;
}

// For the calls whose reply says nothing: the status is the outcome.
template <typename Reply>
auto StatusOnly(AgentClient::Done done) {
  return [done = std::move(done)](absl::Status s, const Reply&) { done(std::move(s)); };
}

vipuagent::ConfigurePartitionRequest ToProto(const AgentAddress& agent,
                                             const AgentPartitionConfig& c) {
  vipuagent::ConfigurePartitionRequest r;
  r.set_agent_id(agent.agent_id);
  r.set_partition_id(c.partition.partition_id);
  r.set_generation(c.partition.generation);
  for (uint32_t i : c.ipus) r.add_ipus(i);
  // The fabric enums number their values as the wire does.
  r.set_ipulink_routing_type(static_cast<virmgrpc::IpuLinkRoutingType>(c.routing));
  r.set_gw_routing_type(static_cast<virmgrpc::GatewayRoutingType>(c.gw_routing));
  r.set_sync_type(static_cast<virmgrpc::SyncType>(c.sync_type));
  r.set_partition_size(c.partition_size);
  r.set_num_ilds(c.num_ilds);
  for (uint32_t port : c.link_ports) r.add_link_ports(port);
  for (const AgentPartitionMember& m : c.members) {
    vipuagent::PartitionMember* member = r.add_members();
    member->set_agent_id(m.agent_id);
    member->set_host(m.host);
    member->set_port(m.port);
  }
  return r;
}

template <typename Request>
Request PartitionRequest(const AgentAddress& agent, const AgentPartitionRef& partition) {
  Request r;
  r.set_agent_id(agent.agent_id);
  r.set_partition_id(partition.partition_id);
  r.set_generation(partition.generation);
  return r;
}

vipuagent::SetTopologyRequest ToProto(const AgentAddress& agent, const AgentTopology& t) {
  vipuagent::SetTopologyRequest r;
  r.set_agent_id(agent.agent_id);
  r.set_cluster_id(t.cluster_id);
  r.set_ild(t.ild);
  r.set_num_ilds(t.num_ilds);
  r.set_machine_index(t.machine_index);
  r.set_machines_per_ild(t.machines_per_ild);
  r.set_torus(t.torus);
  for (const AgentLinkPort& p : t.ports) {
    vipuagent::LinkPort* port = r.add_ports();
    port->set_port(p.port);
    port->set_kind(static_cast<vipuagent::LinkKind>(p.kind));  // numbers equal
    port->set_name(p.name);
    port->set_local_ipu(p.local_ipu);
    port->set_peer_agent_id(p.peer_agent_id);
    port->set_peer_port(p.peer_port);
    port->set_internal(p.internal);
  }
  return r;
}

vipuagent::InjectFaultRequest ToProto(const AgentAddress& agent, const fabric::FaultRequest& f) {
  vipuagent::InjectFaultRequest r;
  r.set_agent_id(agent.agent_id);
  r.set_kind(static_cast<vipuagent::FaultKind>(f.kind));  // numbers equal
  if (f.ipu) r.set_ipu(*f.ipu);
  if (f.link) r.set_link(*f.link);
  r.set_duration_ms(f.duration_ms);
  return r;
}

vipuagent::RunWorkloadRequest ToProto(const AgentAddress& agent, const AgentWorkloadRun& run) {
  vipuagent::RunWorkloadRequest r;
  r.set_agent_id(agent.agent_id);
  r.set_partition_id(run.partition.partition_id);
  r.set_generation(run.partition.generation);
  r.set_steps(run.steps);
  const AgentWorkload& w = run.workload;
  vipuagent::WorkloadSpec* spec = r.mutable_workload();
  spec->set_model(w.model);
  spec->set_micro_batch(w.micro_batch);
  spec->set_grad_accum(w.grad_accum);
  spec->set_device_iterations(w.device_iterations);
  spec->set_replicas(w.replicas);
  spec->set_ipus_per_replica(w.ipus_per_replica);
  spec->set_seq_len(w.seq_len);
  for (uint32_t n : w.layers_per_ipu) spec->add_layers_per_ipu(n);
  spec->set_optimizer(w.optimizer);
  if (w.optimizer_state_offchip) spec->set_optimizer_state_offchip(*w.optimizer_state_offchip);
  if (w.replicated_tensor_sharding) {
    spec->set_replicated_tensor_sharding(*w.replicated_tensor_sharding);
  }
  if (w.recompute) spec->set_recompute(*w.recompute);
  spec->set_packing(w.packing);
  spec->set_host_loader_samples_per_s(w.host_loader_samples_per_s);
  return r;
}

AgentInfo FromProto(const vipuagent::GetInfoReply& reply) {
  AgentInfo info;
  info.machine_type = reply.machine().machine_type();
  info.ipuof_port = reply.machine().ipuof_port();
  info.rdma_port = reply.machine().rdma_port();
  for (const auto& d : reply.machine().details()) info.details.emplace_back(d.name(), d.value());
  for (const auto& h : reply.held()) {
    info.held.push_back({h.partition_id(), h.generation(), {h.ipus().begin(), h.ipus().end()}});
  }
  return info;
}

AgentLinkTestResult FromProto(const vipuagent::TestLinksReply& reply) {
  AgentLinkTestResult result;
  for (const auto& l : reply.links()) {
    result.links.push_back({l.port(), l.name(), static_cast<fabric::LinkKind>(l.kind()),
                            l.state() == vipuagent::LINK_STATE_TRAINED, l.error_count(),
                            l.peer_agent_id(), l.peer_port()});
  }
  for (const auto& i : reply.ipus()) result.ipus.push_back({i.index(), i.healthy(), i.error()});
  return result;
}

AgentWorkloadResult FromProto(const vipuagent::RunWorkloadReply& reply) {
  AgentWorkloadResult result;
  result.step_time_s.assign(reply.step_time_s().begin(), reply.step_time_s().end());
  result.samples_per_sec = reply.samples_per_sec();
  result.generation = reply.generation();
  result.agent_ids.assign(reply.agent_ids().begin(), reply.agent_ids().end());
  result.routing = static_cast<fabric::RoutingType>(reply.ipulink_routing_type());
  result.sync_type = static_cast<fabric::SyncType>(reply.sync_type());
  result.gw_routing = static_cast<fabric::GwRoutingType>(reply.gw_routing_type());
  return result;
}

// For the calls whose reply is translated: the translation, or the status.
template <typename Reply, typename T>
auto Translated(AgentClient::DoneWith<T> done) {
  return [done = std::move(done)](absl::Status s, const Reply& reply) {
    if (!s.ok()) {
      done(std::move(s));
    } else {
      done(FromProto(reply));
    }
  };
}

}  // namespace

GrpcAgentClient::GrpcAgentClient(absl::Duration deadline,
                                 std::shared_ptr<grpc::ChannelCredentials> credentials)
    : deadline_(deadline),
      calls_(std::make_unique<CallTracker>()),
      credentials_(std::move(credentials)) {}

GrpcAgentClient::~GrpcAgentClient() { calls_->CancelAndWait(); }

GrpcAgentClient::Channel& GrpcAgentClient::ChannelFor(const AgentAddress& agent) {
  std::string address = absl::StrCat(agent.host, ":", agent.port);
  auto [seen, inserted] = address_of_.try_emplace(agent.agent_id, address);
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
    if (credentials_) {
      // The agent proves it is `agent_id`: its certificate must carry SAN
      // DNS:<agent-id>. Agents sharing an address share a certificate
      // naming all of them, so the first one's id stands for the channel.
      grpc::ChannelArguments args;
      args.SetSslTargetNameOverride(agent.agent_id);
      channel.channel = grpc::CreateCustomChannel(address, credentials_, args);
    } else {
      channel.channel = grpc::CreateChannel(address, grpc::InsecureChannelCredentials());
    }
    channel.stub = std::shared_ptr<Stub>(vipuagent::Agent::NewStub(channel.channel));
  }
  return channel;
}

std::shared_ptr<grpc::Channel> GrpcAgentClient::ChannelAtForTesting(const AgentAddress& agent) {
  vipu::MutexLock lock(&mu_);
  return ChannelFor(agent).channel;
}

std::shared_ptr<Stub> GrpcAgentClient::StubFor(const AgentAddress& agent) {
  vipu::MutexLock lock(&mu_);
  return ChannelFor(agent).stub;
}

void GrpcAgentClient::Configure(const AgentAddress& agent, const AgentPartitionConfig& config,
                                Done done) {
  using Reply = vipuagent::ConfigurePartitionReply;
  Send<Reply>(
      calls_.get(), StubFor(agent), deadline_, ToProto(agent, config),
      [](auto* async, auto* ctx, auto* req, auto* reply, auto cb) {
        async->ConfigurePartition(ctx, req, reply, std::move(cb));
      },
      StatusOnly<Reply>(std::move(done)));
}

void GrpcAgentClient::Reset(const AgentAddress& agent, const AgentPartitionRef& partition,
                            Done done) {
  using Reply = vipuagent::ResetPartitionReply;
  Send<Reply>(
      calls_.get(), StubFor(agent), deadline_,
      PartitionRequest<vipuagent::ResetPartitionRequest>(agent, partition),
      [](auto* async, auto* ctx, auto* req, auto* reply, auto cb) {
        async->ResetPartition(ctx, req, reply, std::move(cb));
      },
      StatusOnly<Reply>(std::move(done)));
}

void GrpcAgentClient::Release(const AgentAddress& agent, const AgentPartitionRef& partition,
                              Done done) {
  using Reply = vipuagent::ReleasePartitionReply;
  Send<Reply>(
      calls_.get(), StubFor(agent), deadline_,
      PartitionRequest<vipuagent::ReleasePartitionRequest>(agent, partition),
      [](auto* async, auto* ctx, auto* req, auto* reply, auto cb) {
        async->ReleasePartition(ctx, req, reply, std::move(cb));
      },
      StatusOnly<Reply>(std::move(done)));
}

void GrpcAgentClient::SetTopology(const AgentAddress& agent, const AgentTopology& topology,
                                  absl::Duration deadline, Done done) {
  using Reply = vipuagent::SetTopologyReply;
  Send<Reply>(
      calls_.get(), StubFor(agent), deadline, ToProto(agent, topology),
      [](auto* async, auto* ctx, auto* req, auto* reply, auto cb) {
        async->SetTopology(ctx, req, reply, std::move(cb));
      },
      StatusOnly<Reply>(std::move(done)));
}

void GrpcAgentClient::GetInfo(const AgentAddress& agent, DoneWith<AgentInfo> done) {
  using Reply = vipuagent::GetInfoReply;
  vipuagent::GetInfoRequest request;
  request.set_agent_id(agent.agent_id);
  Send<Reply>(
      calls_.get(), StubFor(agent), deadline_, std::move(request),
      [](auto* async, auto* ctx, auto* req, auto* reply, auto cb) {
        async->GetInfo(ctx, req, reply, std::move(cb));
      },
      Translated<Reply>(std::move(done)));
}

void GrpcAgentClient::InjectFault(const AgentAddress& agent, const fabric::FaultRequest& fault,
                                  DoneWith<std::string> done) {
  using Reply = vipuagent::InjectFaultReply;
  Send<Reply>(
      calls_.get(), StubFor(agent), deadline_, ToProto(agent, fault),
      [](auto* async, auto* ctx, auto* req, auto* reply, auto cb) {
        async->InjectFault(ctx, req, reply, std::move(cb));
      },
      [done = std::move(done)](absl::Status s, const Reply& reply) {
        if (!s.ok()) {
          done(std::move(s));
        } else {
          done(reply.description());
        }
      });
}

void GrpcAgentClient::TestLinks(const AgentAddress& agent, AgentLinkTest test,
                                DoneWith<AgentLinkTestResult> done) {
  using Reply = vipuagent::TestLinksReply;
  vipuagent::TestLinksRequest request;
  request.set_agent_id(agent.agent_id);
  request.set_kind(static_cast<vipuagent::LinkTestKind>(test));  // numbers equal
  Send<Reply>(
      calls_.get(), StubFor(agent), deadline_, std::move(request),
      [](auto* async, auto* ctx, auto* req, auto* reply, auto cb) {
        async->TestLinks(ctx, req, reply, std::move(cb));
      },
      Translated<Reply>(std::move(done)));
}

void GrpcAgentClient::RunWorkload(const AgentAddress& agent, const AgentWorkloadRun& run,
                                  DoneWith<AgentWorkloadResult> done) {
  using Reply = vipuagent::RunWorkloadReply;
  Send<Reply>(
      calls_.get(), StubFor(agent), deadline_, ToProto(agent, run),
      [](auto* async, auto* ctx, auto* req, auto* reply, auto cb) {
        async->RunWorkload(ctx, req, reply, std::move(cb));
      },
      Translated<Reply>(std::move(done)));
}

void GrpcAgentClient::CheckPartition(const AgentAddress& agent, const AgentPartitionRef& partition,
                                     Done done) {
  using Reply = vipuagent::CheckPartitionReply;
  Send<Reply>(
      calls_.get(), StubFor(agent), deadline_,
      PartitionRequest<vipuagent::CheckPartitionRequest>(agent, partition),
      [](auto* async, auto* ctx, auto* req, auto* reply, auto cb) {
        async->CheckPartition(ctx, req, reply, std::move(cb));
      },
      StatusOnly<Reply>(std::move(done)));
}

}  // namespace vipu::server
