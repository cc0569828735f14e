// RegistrationClient: registers this process's machines with the server and heartbeats them.
#include "agents/registration.h"

#include <algorithm>
#include <map>
#include <set>
#include <utility>

#include "absl/time/time.h"
#include "agents/wire_translation.h"
#include "base/thread_name.h"
#include "grpcpp/create_channel.h"
#include "grpcpp/security/credentials.h"
#include "grpcpp/support/channel_arguments.h"
#include "spdlog/spdlog.h"
#include "wire/retry_after.h"
#include "wire/status.h"

namespace vipu::agents {
namespace {

std::shared_ptr<grpc::Channel> MakeChannel(const RegistrationOptions& options,
                                           const std::string& address) {
  grpc::ChannelArguments args;
  // gRPC's own reconnect backoff (1 s growing to 120 s) would hide a server
  // that came back; keep it within ours.
  args.SetInt(GRPC_ARG_INITIAL_RECONNECT_BACKOFF_MS, static_cast<int>(options.min_backoff.count()));
  args.SetInt(GRPC_ARG_MIN_RECONNECT_BACKOFF_MS, static_cast<int>(options.min_backoff.count()));
  args.SetInt(GRPC_ARG_MAX_RECONNECT_BACKOFF_MS, static_cast<int>(options.max_backoff.count()));
  // The server's certificate is checked against the host of the member's
  // address, like any TLS client would.
  return grpc::CreateCustomChannel(
      address, options.credentials ? options.credentials : grpc::InsecureChannelCredentials(),
      args);
}

}  // namespace

RegistrationClient::RegistrationClient(RegistrationOptions options,
                                       std::vector<SimulatedMachine*> machines)
    : options_(std::move(options)) {
  for (const std::string& address : options_.server_addresses) {
    stubs_.push_back(vipuagent::AgentRegistry::NewStub(MakeChannel(options_, address)));
  }
  for (SimulatedMachine* machine : machines) {
    Slot slot;
    slot.machine = machine;
    slot.backoff = options_.min_backoff;
    slot.interval = options_.default_heartbeat_interval;
    slots_.push_back(slot);
  }
}

RegistrationClient::~RegistrationClient() { Stop(); }

void RegistrationClient::Start() {
  const Clock::time_point now = Clock::now();
  for (Slot& slot : slots_) slot.due = now;
  thread_ = std::thread([this] { Run(); });
  NameThread(thread_, "agent-register");
}

void RegistrationClient::Stop() {
  {
    vipu::MutexLock lock(&mu_);
    stopping_ = true;
    if (in_flight_ != nullptr) in_flight_->TryCancel();
  }
  if (thread_.joinable()) thread_.join();
}

bool RegistrationClient::RegisteredForTesting(std::string_view agent_id) const {
  vipu::MutexLock lock(&mu_);
  for (const Slot& slot : slots_) {
    if (slot.machine->agent_id() == agent_id) return slot.registered;
  }
  return false;
}

RegistrationStats RegistrationClient::StatsForTesting() const {
  vipu::MutexLock lock(&mu_);
  return stats_;
}

bool RegistrationClient::IdleForTesting() const {
  vipu::MutexLock lock(&mu_);
  return idle_;
}

std::string RegistrationClient::ServerForTesting() const { return CurrentServer(); }

std::string RegistrationClient::CurrentServer() const {
  vipu::MutexLock lock(&mu_);
  return options_.server_addresses[current_];
}

bool RegistrationClient::FailOver(const grpc::Status& status) {
  const size_t n = stubs_.size();
  const grpc::StatusCode code = status.error_code();
  if (n < 2 ||
      (code != grpc::StatusCode::UNAVAILABLE && code != grpc::StatusCode::DEADLINE_EXCEEDED)) {
    return false;
  }
  std::string from, to;
  {
    vipu::MutexLock lock(&mu_);
    from = options_.server_addresses[current_];
    current_ = (current_ + 1) % n;
    to = options_.server_addresses[current_];
    ++stats_.failovers;
  }
  ++misses_in_row_;
  const bool at_once = misses_in_row_ < n;
  spdlog::warn(
      "vipu-server member {} does not answer ({}: {}); moving to {} and registering "
      "every machine there{}",
      from, static_cast<int>(code), status.error_message(), to,
      at_once ? "" : " after a backoff (every member failed in turn)");
  const Clock::time_point now = Clock::now();
  for (Slot& slot : slots_) {
    SetRegistered(slot, false);
    if (at_once) {
      slot.due = now;
      slot.failing = false;
    }
  }
  return at_once;
}

void RegistrationClient::Run() {
  mu_.Lock();
  while (!stopping_) {
    Clock::time_point next = Clock::time_point::max();
    for (const Slot& slot : slots_) next = std::min(next, slot.due);
    // Until the first slot is due; Stop() ends the wait at once.
    idle_ = true;
    const bool stop =
        mu_.AwaitWithTimeout(absl::Condition(&stopping_), absl::FromChrono(next - Clock::now()));
    idle_ = false;
    if (stop) break;
    const Clock::time_point now = Clock::now();
    if (options_.batched) {
      mu_.Unlock();
      StepBatched(now);
      mu_.Lock();
      continue;
    }
    for (Slot& slot : slots_) {
      if (stopping_) break;
      if (slot.due > now) continue;
      mu_.Unlock();
      Step(slot);
      mu_.Lock();
    }
  }
  mu_.Unlock();
}

void RegistrationClient::Step(Slot& slot) {
  if (slot.machine->silenced()) {
    // A hung or crashed machine sends nothing; look again next period.
    slot.due = Clock::now() + slot.interval;
    return;
  }
  if (slot.registered) {
    Heartbeat(slot);
  } else {
    Register(slot);
  }
}

template <typename Call>
grpc::Status RegistrationClient::Invoke(Call&& call) {
  grpc::ClientContext context;
  context.set_deadline(std::chrono::system_clock::now() + options_.rpc_timeout);
  vipuagent::AgentRegistry::Stub* stub = nullptr;
  {
    vipu::MutexLock lock(&mu_);
    if (stopping_) return grpc::Status(grpc::StatusCode::CANCELLED, "stopping");
    in_flight_ = &context;
    stub = stubs_[current_].get();
  }
  grpc::Status status = call(*stub, &context);
  if (const std::optional<std::chrono::milliseconds> asked = wire::RetryAfterOf(context)) {
    retry_after_ = std::clamp(*asked, options_.min_backoff, options_.max_backoff);
  }
  const grpc::StatusCode code = status.error_code();
  if (code != grpc::StatusCode::UNAVAILABLE && code != grpc::StatusCode::DEADLINE_EXCEEDED &&
      code != grpc::StatusCode::CANCELLED) {
    misses_in_row_ = 0;  // the member answered
    retry_after_.reset();
  }
  vipu::MutexLock lock(&mu_);
  in_flight_ = nullptr;
  if (!status.ok() && !stopping_) ++stats_.failures;
  return status;
}

void RegistrationClient::Register(Slot& slot) {
  SimulatedMachine& machine = *slot.machine;
  vipuagent::RegisterRequest request;
  request.set_agent_id(machine.agent_id());
  request.set_host(options_.advertised_host);
  request.set_port(machine.ipuof_port());
  *request.mutable_machine() = ToProto(machine);
  AppendHeld(machine.Held(), request.mutable_held());
  vipuagent::RegisterReply reply;
  grpc::Status status =
      Invoke([&](vipuagent::AgentRegistry::Stub& stub, grpc::ClientContext* context) {
        return stub.Register(context, request, &reply);
      });
  if (!status.ok()) {
    if (!FailOver(status)) RetryLater(slot, "register", status);
    return;
  }
  slot.interval = reply.heartbeat_interval_ms() == 0
                      ? options_.default_heartbeat_interval
                      : std::chrono::milliseconds(reply.heartbeat_interval_ms());
  slot.backoff = options_.min_backoff;
  slot.failing = false;
  slot.due = Clock::now() + slot.interval;
  SetRegistered(slot, true);
  spdlog::info("agent {}: registered with {} as {}:{} (heartbeat every {} ms)", machine.agent_id(),
               CurrentServer(), options_.advertised_host, machine.ipuof_port(),
               slot.interval.count());
}

void RegistrationClient::Heartbeat(Slot& slot) {
  SimulatedMachine& machine = *slot.machine;
  vipuagent::HeartbeatRequest request;
  request.set_agent_id(machine.agent_id());
  request.set_sequence(++slot.heartbeats);
  AppendHeld(machine.Held(), request.mutable_held());
  AppendHealth(machine, &request);
  vipuagent::HeartbeatReply reply;
  grpc::Status status =
      Invoke([&](vipuagent::AgentRegistry::Stub& stub, grpc::ClientContext* context) {
        return stub.Heartbeat(context, request, &reply);
      });
  if (status.ok()) {
    vipu::MutexLock lock(&mu_);
    ++stats_.heartbeats;
  }
  if (status.ok() && !reply.reregister()) {
    if (slot.failing)
      spdlog::info("agent {}: heartbeats reach the server again", machine.agent_id());
    slot.backoff = options_.min_backoff;
    slot.failing = false;
    slot.due = Clock::now() + slot.interval;
    return;
  }
  if (status.ok() || status.error_code() == grpc::StatusCode::NOT_FOUND) {
    spdlog::warn("agent {}: the server does not know this agent; registering again",
                 machine.agent_id());
    SetRegistered(slot, false);
    slot.due = Clock::now();
    return;
  }
  if (!FailOver(status)) RetryLater(slot, "heartbeat", status);
}

void RegistrationClient::RetryLater(Slot& slot, std::string_view what, const grpc::Status& status) {
  if (status.error_code() == grpc::StatusCode::CANCELLED) return;  // stopping
  if (!slot.failing) {
    spdlog::warn("agent {}: {} to {} failed ({}: {}); retrying", slot.machine->agent_id(), what,
                 CurrentServer(), static_cast<int>(status.error_code()), status.error_message());
  } else {
    spdlog::debug("agent {}: {} failed again ({})", slot.machine->agent_id(), what,
                  status.error_message());
  }
  slot.failing = true;
  slot.due = RetryAt(&slot.backoff);
}

RegistrationClient::Clock::time_point RegistrationClient::RetryAt(
    std::chrono::milliseconds* backoff) const {
  // While members refuse saying when to come back (a failover: the standby
  // has nobody to forward to until the next leader serves), that is when:
  // a backoff grown to its cap would find the new leader up to a second
  // late.
  if (retry_after_) return Clock::now() + *retry_after_;
  const Clock::time_point at = Clock::now() + *backoff;
  *backoff = std::min(*backoff * 2, options_.max_backoff);
  return at;
}

void RegistrationClient::StepBatched(Clock::time_point now) {
  std::vector<Slot*> to_register, to_heartbeat;
  for (Slot& slot : slots_) {
    if (slot.due > now) continue;
    if (slot.machine->silenced()) {
      slot.due = now + slot.interval;
    } else if (slot.registered) {
      to_heartbeat.push_back(&slot);
    } else {
      to_register.push_back(&slot);
    }
  }
  const size_t n = std::clamp<size_t>(options_.batch_size, 1, 1024);
  auto in_chunks = [n](const std::vector<Slot*>& all, auto&& send) {
    for (size_t i = 0; i < all.size(); i += n) {
      send(std::vector<Slot*>(all.begin() + i, all.begin() + std::min(all.size(), i + n)));
    }
  };
  in_chunks(to_register, [this](const std::vector<Slot*>& b) { RegisterBatch(b); });
  in_chunks(to_heartbeat, [this](const std::vector<Slot*>& b) { HeartbeatBatch(b); });
}

void RegistrationClient::RegisterBatch(const std::vector<Slot*>& batch) {
  vipuagent::RegisterBatchRequest request;
  for (Slot* slot : batch) {
    SimulatedMachine& machine = *slot->machine;
    vipuagent::RegisterRequest* r = request.add_agents();
    r->set_agent_id(machine.agent_id());
    r->set_host(options_.advertised_host);
    r->set_port(machine.ipuof_port());
    *r->mutable_machine() = ToProto(machine);
    AppendHeld(machine.Held(), r->mutable_held());
  }
  vipuagent::RegisterBatchReply reply;
  grpc::Status status =
      Invoke([&](vipuagent::AgentRegistry::Stub& stub, grpc::ClientContext* context) {
        return stub.RegisterBatch(context, request, &reply);
      });
  if (!status.ok()) {
    RetryBatchLater(batch, "register batch", status);
    return;
  }
  std::map<std::string, grpc::Status> refused;
  for (const vipuagent::AgentRefusal& r : reply.refused()) {
    refused[r.agent_id()] = wire::FromCodeNumber(r.code(), r.message());
  }
  const std::chrono::milliseconds interval =
      reply.heartbeat_interval_ms() == 0 ? options_.default_heartbeat_interval
                                         : std::chrono::milliseconds(reply.heartbeat_interval_ms());
  const Clock::time_point now = Clock::now();
  for (Slot* slot : batch) {
    auto it = refused.find(slot->machine->agent_id());
    if (it != refused.end()) {
      RetryLater(*slot, "register", it->second);
      continue;
    }
    slot->interval = interval;
    slot->backoff = options_.min_backoff;
    slot->failing = false;
    slot->due = now + interval;
    SetRegistered(*slot, true);
  }
  spdlog::info(
      "registered {} machines (first {}) with {} as {}, {} refused (heartbeat every {} ms)",
      batch.size() - refused.size(), batch.front()->machine->agent_id(), CurrentServer(),
      options_.advertised_host, refused.size(), interval.count());
}

void RegistrationClient::HeartbeatBatch(const std::vector<Slot*>& batch) {
  vipuagent::HeartbeatBatchRequest request;
  for (Slot* slot : batch) {
    SimulatedMachine& machine = *slot->machine;
    vipuagent::HeartbeatRequest* beat = request.add_agents();
    beat->set_agent_id(machine.agent_id());
    beat->set_sequence(++slot->heartbeats);
    AppendHeld(machine.Held(), beat->mutable_held());
    // Only faults: the server ignores healthy entries, and 16,384 machines'
    // full reports would be most of the bytes.
    for (const IpuHealth& h : machine.IpuHealthReport()) {
      if (!h.healthy) ToProto(h, beat->add_ipu_health());
    }
    for (const PortHealth& h : machine.PortHealthReport()) {
      if (!h.trained) ToProto(h, beat->add_link_health());
    }
  }
  vipuagent::HeartbeatBatchReply reply;
  grpc::Status status =
      Invoke([&](vipuagent::AgentRegistry::Stub& stub, grpc::ClientContext* context) {
        return stub.HeartbeatBatch(context, request, &reply);
      });
  if (!status.ok()) {
    RetryBatchLater(batch, "heartbeat batch", status);
    return;
  }
  {
    vipu::MutexLock lock(&mu_);
    stats_.heartbeats += batch.size();
  }
  std::set<std::string> reregister(reply.reregister().begin(), reply.reregister().end());
  if (!reregister.empty()) {
    spdlog::warn("the server does not know {} machines (first {}); registering them again",
                 reregister.size(), *reregister.begin());
  }
  const Clock::time_point now = Clock::now();
  bool recovered = false;
  for (Slot* slot : batch) {
    recovered = recovered || slot->failing;
    slot->backoff = options_.min_backoff;
    slot->failing = false;
    if (reregister.count(slot->machine->agent_id()) != 0) {
      SetRegistered(*slot, false);
      slot->due = now;
    } else {
      slot->due = now + slot->interval;
    }
  }
  if (recovered) {
    spdlog::info("heartbeats of {} machines reach the server again", batch.size());
  }
}

void RegistrationClient::RetryBatchLater(const std::vector<Slot*>& batch, std::string_view what,
                                         const grpc::Status& status) {
  if (status.error_code() == grpc::StatusCode::CANCELLED) return;  // stopping
  if (FailOver(status)) return;
  if (!batch.front()->failing) {
    spdlog::warn("{} of {} machines (first {}) to {} failed ({}: {}); retrying", what, batch.size(),
                 batch.front()->machine->agent_id(), CurrentServer(),
                 static_cast<int>(status.error_code()), status.error_message());
  }
  for (Slot* slot : batch) {
    slot->failing = true;
    slot->due = RetryAt(&slot->backoff);
  }
}

void RegistrationClient::SetRegistered(Slot& slot, bool registered) {
  vipu::MutexLock lock(&mu_);
  slot.registered = registered;
  if (registered) ++stats_.registrations;
}

}  // namespace vipu::agents
