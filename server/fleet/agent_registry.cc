// AgentRegistry: the in-memory record of registrations, heartbeats, health and topology sent.
#include "server/fleet/agent_registry.h"

#include "absl/strings/str_cat.h"

namespace vipu::server {

std::string NotConnectedText(const std::string& agent_id) {
  return absl::StrCat("agent ", agent_id, ": not connected");
}

absl::Status NotConnectedError(const std::string& agent_id) {
  return absl::UnavailableError(NotConnectedText(agent_id));
}

void AgentRegistry::Stamp(LiveAgent& agent, absl::Time now) {
  agent.registered = now;
  agent.last_heartbeat = now;
  agent.epoch = ++last_epoch_;
  agent.topology_sent = 0;  // a new registration may be a restarted agent
}

void AgentRegistry::Register(LiveAgent agent, absl::Time now) {
  vipu::MutexLock lock(&mu_);
  Stamp(agent, now);
  std::string id = agent.id;
  agents_[id] = std::move(agent);
}

bool AgentRegistry::Heartbeat(const std::string& id, absl::Time now) {
  vipu::MutexLock lock(&mu_);
  auto it = agents_.find(id);
  if (it == agents_.end()) return false;
  it->second.last_heartbeat = now;
  return true;
}

bool AgentRegistry::Heartbeat(const std::string& id, absl::Time now, AgentHealth health) {
  vipu::MutexLock lock(&mu_);
  auto it = agents_.find(id);
  if (it == agents_.end()) return false;
  Apply(it->second, now, std::move(health));
  return true;
}

void AgentRegistry::Apply(LiveAgent& agent, absl::Time now, AgentHealth health) {
  // An agent gives up on a heartbeat after its deadline and sends the next;
  // the abandoned one may still be served later. Its older health would
  // bring back a fault the newer one had cleared.
  if (health.sequence != 0 && health.sequence <= agent.health.sequence) return;
  agent.last_heartbeat = now;
  agent.health = std::move(health);
}

void AgentRegistry::RegisterMany(std::vector<LiveAgent> agents, absl::Time now) {
  vipu::MutexLock lock(&mu_);
  for (LiveAgent& agent : agents) {
    Stamp(agent, now);
    std::string id = agent.id;
    agents_[id] = std::move(agent);
  }
}

std::vector<std::string> AgentRegistry::HeartbeatMany(
    std::vector<std::pair<std::string, AgentHealth>> beats, absl::Time now) {
  std::vector<std::string> unknown;
  vipu::MutexLock lock(&mu_);
  for (auto& [id, health] : beats) {
    auto it = agents_.find(id);
    if (it == agents_.end()) {
      unknown.push_back(id);
      continue;
    }
    Apply(it->second, now, std::move(health));
  }
  return unknown;
}

void AgentRegistry::MarkTopologySent(const std::string& id, uint64_t epoch, uint64_t fingerprint) {
  vipu::MutexLock lock(&mu_);
  auto it = agents_.find(id);
  if (it != agents_.end() && it->second.epoch == epoch) it->second.topology_sent = fingerprint;
}

std::vector<TopologyDueAgent> AgentRegistry::TopologyDue(const std::vector<std::string>& ids,
                                                         const std::vector<uint64_t>& fingerprints,
                                                         absl::Time now) const {
  std::vector<TopologyDueAgent> due;
  vipu::MutexLock lock(&mu_);
  for (size_t i = 0; i < ids.size() && i < fingerprints.size(); ++i) {
    auto it = agents_.find(ids[i]);
    if (it == agents_.end()) continue;
    const LiveAgent& a = it->second;
    if (a.topology_sent == fingerprints[i] || now - a.last_heartbeat >= timeout()) continue;
    due.push_back({i, {a.host, a.port, a.epoch}});
  }
  return due;
}

void AgentRegistry::ForgetForTesting(const std::string& id) {
  vipu::MutexLock lock(&mu_);
  agents_.erase(id);
}

std::optional<LiveAgent> AgentRegistry::Get(const std::string& id) const {
  vipu::MutexLock lock(&mu_);
  auto it = agents_.find(id);
  if (it == agents_.end()) return std::nullopt;
  return it->second;
}

std::optional<AgentEndpoint> AgentRegistry::EndpointOf(const std::string& id) const {
  vipu::MutexLock lock(&mu_);
  auto it = agents_.find(id);
  if (it == agents_.end()) return std::nullopt;
  return AgentEndpoint{it->second.host, it->second.port, it->second.epoch};
}

std::vector<AgentPulse> AgentRegistry::Pulses() const {
  vipu::MutexLock lock(&mu_);
  std::vector<AgentPulse> out;
  out.reserve(agents_.size());
  for (const auto& [id, a] : agents_) out.push_back({id, a.last_heartbeat});
  return out;
}

bool AgentRegistry::Contains(const std::string& id) const {
  vipu::MutexLock lock(&mu_);
  return agents_.count(id) != 0;
}

size_t AgentRegistry::CountUpForTesting(absl::Time now) const {
  vipu::MutexLock lock(&mu_);
  size_t up = 0;
  for (const auto& [id, a] : agents_) up += now - a.last_heartbeat < timeout() ? 1 : 0;
  return up;
}

bool AgentRegistry::IsUp(const std::string& id, absl::Time now) const {
  vipu::MutexLock lock(&mu_);
  auto it = agents_.find(id);
  return it != agents_.end() && now - it->second.last_heartbeat < timeout();
}

size_t AgentRegistry::size() const {
  vipu::MutexLock lock(&mu_);
  return agents_.size();
}

std::vector<LiveAgent> AgentRegistry::All() const {
  vipu::MutexLock lock(&mu_);
  std::vector<LiveAgent> out;
  out.reserve(agents_.size());
  for (const auto& [id, a] : agents_) out.push_back(a);
  return out;
}

}  // namespace vipu::server
