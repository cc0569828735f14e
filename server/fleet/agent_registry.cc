// AgentRegistry: the in-memory record of registrations, heartbeats, health and topology sent.
#include "server/fleet/agent_registry.h"

#include <algorithm>

#include "absl/strings/str_cat.h"

namespace vipu::server {

std::string NotConnectedText(const std::string& agent_id) {
  return absl::StrCat("agent ", agent_id, ": not connected");
}

absl::Status NotConnectedError(const std::string& agent_id) {
  return absl::UnavailableError(NotConnectedText(agent_id));
}

void AgentRegistry::Stamp(LiveAgent& agent, absl::Time now) {
  ++up_version_;  // a new agent, or one back: Up now
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
  NoteHeartbeat(it->second.last_heartbeat, now);
  it->second.last_heartbeat = now;
  return !it->second.handed_over;
}

bool AgentRegistry::Heartbeat(const std::string& id, absl::Time now, AgentHealth health) {
  vipu::MutexLock lock(&mu_);
  auto it = agents_.find(id);
  if (it == agents_.end()) return false;
  Apply(it->second, now, std::move(health));
  return !it->second.handed_over;
}

void AgentRegistry::Apply(LiveAgent& agent, absl::Time now, AgentHealth health) {
  // An agent gives up on a heartbeat after its deadline and sends the next;
  // the abandoned one may still be served later. Its older health would
  // bring back a fault the newer one had cleared.
  if (health.sequence != 0 && health.sequence <= agent.health.sequence) return;
  NoteHeartbeat(agent.last_heartbeat, now);
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
    if (it->second.handed_over) unknown.push_back(id);
  }
  return unknown;
}

void AgentRegistry::HandOver(std::vector<LiveAgent> agents, absl::Time now) {
  vipu::MutexLock lock(&mu_);
  for (LiveAgent& agent : agents) {
    if (agents_.count(agent.id) != 0) continue;
    Stamp(agent, now);
    agent.handed_over = true;
    std::string id = agent.id;
    agents_[id] = std::move(agent);
  }
}

std::vector<LiveAgent> AgentRegistry::UpAgents(absl::Time now) const {
  vipu::MutexLock lock(&mu_);
  std::vector<LiveAgent> out;
  for (const auto& [id, a] : agents_) {
    if (now - a.last_heartbeat >= timeout()) continue;
    LiveAgent copy;
    copy.id = a.id;
    copy.host = a.host;
    copy.port = a.port;
    copy.ipuof_port = a.ipuof_port;
    copy.rdma_port = a.rdma_port;
    copy.machine_type = a.machine_type;
    out.push_back(std::move(copy));
  }
  return out;
}

void AgentRegistry::MarkTopologySent(const std::string& id, uint64_t epoch, uint64_t fingerprint) {
  vipu::MutexLock lock(&mu_);
  auto it = agents_.find(id);
  if (it != agents_.end() && it->second.epoch == epoch) it->second.topology_sent = fingerprint;
}

std::vector<TopologyDueAgent> AgentRegistry::TopologyDue(const std::vector<std::string>& ids,
                                                         const std::vector<uint64_t>& fingerprints,
                                                         absl::Time now,
                                                         const std::vector<uint32_t>* by_id) const {
  std::vector<TopologyDueAgent> due;
  const size_t n = std::min(ids.size(), fingerprints.size());
  auto check = [&](size_t i, const LiveAgent& a) {
    if (a.topology_sent == fingerprints[i] || now - a.last_heartbeat >= timeout()) return;
    due.push_back({i, {a.host, a.port, a.epoch}});
  };
  vipu::MutexLock lock(&mu_);
  if (by_id != nullptr && by_id->size() == ids.size()) {
    // Both in id order: one walk, a string comparison or two per agent.
    auto it = agents_.begin();
    for (uint32_t i : *by_id) {
      if (i >= n) continue;
      while (it != agents_.end() && it->first < ids[i]) ++it;
      if (it == agents_.end()) break;
      if (it->first == ids[i]) check(i, it->second);
    }
    std::sort(due.begin(), due.end(), [](const TopologyDueAgent& a, const TopologyDueAgent& b) {
      return a.index < b.index;
    });
    return due;
  }
  for (size_t i = 0; i < n; ++i) {
    auto it = agents_.find(ids[i]);
    if (it != agents_.end()) check(i, it->second);
  }
  return due;
}

void AgentRegistry::NoteHeartbeat(absl::Time last, absl::Time now) {
  // Down at `now`, or at the moment some bitmap was made: it comes back.
  if (last + timeout() <= std::max(now, up_latest_)) ++up_version_;
}

void AgentRegistry::ForgetForTesting(const std::string& id) {
  vipu::MutexLock lock(&mu_);
  ++up_version_;
  agents_.erase(id);
}

std::optional<AgentStatus> AgentRegistry::StatusOf(const std::string& id) const {
  vipu::MutexLock lock(&mu_);
  auto it = agents_.find(id);
  if (it == agents_.end()) return std::nullopt;
  const LiveAgent& a = it->second;
  return AgentStatus{a.id, a.last_heartbeat, a.machine_type, a.health};
}

std::optional<HeldReport> AgentRegistry::HeldBy(const std::string& id, absl::Time now) const {
  vipu::MutexLock lock(&mu_);
  auto it = agents_.find(id);
  if (it == agents_.end()) return std::nullopt;
  const LiveAgent& a = it->second;
  if (now - a.last_heartbeat >= timeout() || a.health.sequence == 0 || a.health.held == nullptr) {
    return std::nullopt;
  }
  return HeldReport{a.epoch, a.health.sequence, a.health.held};
}

std::vector<AgentStatus> AgentRegistry::Statuses() const {
  vipu::MutexLock lock(&mu_);
  std::vector<AgentStatus> out;
  out.reserve(agents_.size());
  for (const auto& [id, a] : agents_)
    out.push_back({id, a.last_heartbeat, a.machine_type, a.health});
  return out;
}

std::vector<std::pair<std::string, AgentHealth>> AgentRegistry::Faults() const {
  vipu::MutexLock lock(&mu_);
  std::vector<std::pair<std::string, AgentHealth>> out;
  for (const auto& [id, a] : agents_) {
    if (!a.health.healthy()) out.emplace_back(id, a.health);
  }
  return out;
}

std::shared_ptr<const std::vector<bool>> AgentRegistry::UpMachines(
    const std::shared_ptr<const fabric::ClusterLayout>& layout, absl::Time now) const {
  vipu::MutexLock lock(&mu_);
  for (auto it = up_bitmaps_.begin(); it != up_bitmaps_.end(); ++it) {
    if (it->layout != layout) continue;
    if (it->version == up_version_ && it->from <= now && now < it->until) {
      std::rotate(it, it + 1, up_bitmaps_.end());  // most recently used last
      return up_bitmaps_.back().up;
    }
    up_bitmaps_.erase(it);
    break;
  }
  // One walk of the agents (by id) beside the layout's machines (by id).
  const std::vector<std::string>& ids = layout->cluster().agent_ids;
  auto up = std::make_shared<std::vector<bool>>(ids.size(), false);
  absl::Time until = absl::InfiniteFuture();
  auto agent = agents_.begin();
  for (uint32_t index : layout->by_agent_id()) {
    const std::string& id = ids[index];
    while (agent != agents_.end() && agent->first < id) ++agent;
    if (agent == agents_.end()) break;
    if (agent->first != id) continue;
    const absl::Time expires = agent->second.last_heartbeat + timeout();
    if (now < expires) {  // as IsUp
      (*up)[index] = true;
      until = std::min(until, expires);
    }
  }
  up_latest_ = std::max(up_latest_, now);
  if (up_bitmaps_.size() >= kMaxUpBitmaps) up_bitmaps_.erase(up_bitmaps_.begin());
  up_bitmaps_.push_back({layout, up_version_, now, until, up});
  return up;
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
