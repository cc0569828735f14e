#include "server/agent_registry.h"

namespace vipu::server {

void AgentRegistry::Register(LiveAgent agent, absl::Time now) {
  std::lock_guard<std::mutex> lock(mu_);
  agent.registered = now;
  agent.last_heartbeat = now;
  std::string id = agent.id;
  agents_[id] = std::move(agent);
}

bool AgentRegistry::Heartbeat(const std::string& id, absl::Time now) {
  std::lock_guard<std::mutex> lock(mu_);
  auto it = agents_.find(id);
  if (it == agents_.end()) return false;
  it->second.last_heartbeat = now;
  return true;
}

bool AgentRegistry::Heartbeat(const std::string& id, absl::Time now, AgentHealth health) {
  std::lock_guard<std::mutex> lock(mu_);
  auto it = agents_.find(id);
  if (it == agents_.end()) return false;
  it->second.last_heartbeat = now;
  it->second.health = std::move(health);
  return true;
}

void AgentRegistry::MarkTopologySent(const std::string& id, const std::string& fingerprint) {
  std::lock_guard<std::mutex> lock(mu_);
  auto it = agents_.find(id);
  if (it != agents_.end()) it->second.topology_sent = fingerprint;
}

void AgentRegistry::Forget(const std::string& id) {
  std::lock_guard<std::mutex> lock(mu_);
  agents_.erase(id);
}

std::optional<LiveAgent> AgentRegistry::Get(const std::string& id) const {
  std::lock_guard<std::mutex> lock(mu_);
  auto it = agents_.find(id);
  if (it == agents_.end()) return std::nullopt;
  return it->second;
}

bool AgentRegistry::IsUp(const std::string& id, absl::Time now) const {
  std::lock_guard<std::mutex> lock(mu_);
  auto it = agents_.find(id);
  return it != agents_.end() && now - it->second.last_heartbeat < timeout();
}

size_t AgentRegistry::size() const {
  std::lock_guard<std::mutex> lock(mu_);
  return agents_.size();
}

std::vector<LiveAgent> AgentRegistry::All() const {
  std::lock_guard<std::mutex> lock(mu_);
  std::vector<LiveAgent> out;
  out.reserve(agents_.size());
  for (const auto& [id, a] : agents_) out.push_back(a);
  return out;
}

}  // namespace vipu::server
