// What the server knows about agents from their own reports: address,
// machine details and IPU attributes from Register, liveness from
// heartbeats. In memory only: after a restart agents register again, and a
// heartbeat every period would be too many commits to persist.
//
// Owns its copies of the reports and hands out copies. Thread-safe: the
// registry RPCs, the health monitor and the partition controller call it at
// once; every method takes mu_.
#ifndef VIPU_SERVER_FLEET_AGENT_REGISTRY_H_
#define VIPU_SERVER_FLEET_AGENT_REGISTRY_H_

#include <map>
#include <memory>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "absl/base/thread_annotations.h"
#include "absl/status/status.h"
#include "absl/time/time.h"
#include "base/mutex.h"
#include "fabric/topology.h"
#include "fabric/types.h"
#include "server/fleet/attributes.h"

namespace vipu::server {

// "agent ag3: not connected": the registry has no registration for the
// agent (it never registered, or was forgotten). Partition errors, agent
// calls and topology pushes all say it this way.
std::string NotConnectedText(const std::string& agent_id);
// UNAVAILABLE with NotConnectedText(agent_id).
absl::Status NotConnectedError(const std::string& agent_id);

// Faults an agent reported in its latest heartbeat.
struct AgentHealth {
  std::map<uint32_t, std::string> ipu_errors;  // IPU# -> "injected fault"
  // Port -> "IPU-Link ag3.ipu1-ag4.ipu3" (kind and link name) of downed links.
  std::map<uint32_t, std::string> links_down;
  // The heartbeat's number since the agent registered (0: unnumbered). A
  // numbered report no newer than the one held is stale and ignored.
  uint64_t sequence = 0;
  // What the machine said it holds, partition id -> generation; null when
  // the report did not say (a report made in a test). Shared: the health
  // monitor reads it for every machine of every partition each tick.
  std::shared_ptr<const std::map<std::string, uint64_t>> held;
  bool healthy() const { return ipu_errors.empty() && links_down.empty(); }
};

struct LiveAgent {
  std::string id;
  std::string host;
  uint32_t port = 0;
  uint32_t ipuof_port = 0;
  uint32_t rdma_port = 0;  // 0: not reported
  fabric::MachineType machine_type = fabric::MachineType::kM2000;
  Attributes details;            // ordered, as `get agent` prints them (server/fleet/attributes.h)
  std::vector<Attributes> ipus;  // by IPU#
  absl::Time registered;
  absl::Time last_heartbeat;
  AgentHealth health;
  // Which registration this is: the registry numbers every Register, so a
  // late answer to a call made before the agent registered again is told
  // apart from one for the agent as it is now.
  uint64_t epoch = 0;
  // Fingerprint of the topology last pushed (SetTopology) since this
  // registration; 0: none yet.
  uint64_t topology_sent = 0;
  // Known from the previous leader's handover (HandOver), not from a
  // registration of its own: its heartbeats count, and are each answered
  // "register again" until it has, so that its details come back.
  bool handed_over = false;
};

// Where an agent listens, without its reports (cheap to copy).
struct AgentEndpoint {
  std::string host;
  uint32_t port = 0;
  uint64_t epoch = 0;  // LiveAgent::epoch
};

// An agent's last heartbeat, without its reports (the health monitor's tick).
struct AgentPulse {
  std::string id;
  absl::Time last_heartbeat;
};

// An agent's liveness and last reported health, without its reports of
// machine details and IPU attributes (the health monitor, the console and
// the metrics ask for these for every agent).
struct AgentStatus {
  std::string id;
  absl::Time last_heartbeat;
  fabric::MachineType machine_type = fabric::MachineType::kM2000;
  AgentHealth health;
};

// What an Up agent last reported holding (AgentRegistry::HeldBy).
struct HeldReport {
  uint64_t epoch = 0;     // LiveAgent::epoch: the registration it was made in
  uint64_t sequence = 0;  // AgentHealth::sequence
  std::shared_ptr<const std::map<std::string, uint64_t>> held;  // never null
};

// An agent that should be told its topology (AgentRegistry::TopologyDue).
struct TopologyDueAgent {
  size_t index = 0;        // into the ids asked about
  AgentEndpoint endpoint;  // with the registration it is due for
};

class AgentRegistry {
 public:
  explicit AgentRegistry(absl::Duration heartbeat_interval)
      : heartbeat_interval_(heartbeat_interval) {}

  absl::Duration heartbeat_interval() const { return heartbeat_interval_; }
  // An agent is Up while its last heartbeat is younger than three periods.
  absl::Duration timeout() const { return 3 * heartbeat_interval_; }

  void Register(LiveAgent agent, absl::Time now);
  // False when the agent is not registered, or only handed over: it must
  // register (again).
  bool Heartbeat(const std::string& id, absl::Time now);
  // Same, recording the health the heartbeat carried.
  bool Heartbeat(const std::string& id, absl::Time now, AgentHealth health);
  // A batch of agents under one lock (the batched registry calls). Returns
  // the ids that are not registered (they must register again).
  void RegisterMany(std::vector<LiveAgent> agents, absl::Time now);
  // The agents a leader that stopped on purpose knew were Up, registered as
  // if they had just heartbeated (handed_over): a new leader serves them at
  // once instead of waiting for each to find it and register. An agent
  // already registered is left as it is.
  void HandOver(std::vector<LiveAgent> agents, absl::Time now);
  // The agents Up at `now`, without their reports (a handover).
  std::vector<LiveAgent> UpAgents(absl::Time now) const;
  std::vector<std::string> HeartbeatMany(std::vector<std::pair<std::string, AgentHealth>> beats,
                                         absl::Time now);
  // Remembers what SetTopology told the agent during registration `epoch`
  // (no-op for an unknown agent or one that registered again since).
  void MarkTopologySent(const std::string& id, uint64_t epoch, uint64_t fingerprint);
  // Of `ids[i]` (which should have been told `fingerprints[i]`), the agents
  // Up at `now` that have not been told it since they registered. One lock
  // for the lot: a cluster of 16,384 agents is checked every tick.
  // `by_id` (optional) lists the indexes of `ids` in the order of the ids
  // (fabric::ClusterLayout::by_agent_id() for a cluster's agents): the
  // agents are then walked beside them instead of looked up one by one.
  std::vector<TopologyDueAgent> TopologyDue(const std::vector<std::string>& ids,
                                            const std::vector<uint64_t>& fingerprints,
                                            absl::Time now,
                                            const std::vector<uint32_t>* by_id = nullptr) const;
  void ForgetForTesting(const std::string& id);

  std::optional<LiveAgent> Get(const std::string& id) const;
  // Liveness and health of one agent / of every agent (sorted by id),
  // without copying their reports.
  std::optional<AgentStatus> StatusOf(const std::string& id) const;
  std::vector<AgentStatus> Statuses() const;
  // The health of every registered agent whose last heartbeat reported a
  // fault, sorted by id.
  std::vector<std::pair<std::string, AgentHealth>> Faults() const;
  // Which machines of `layout` (by index, as layout->cluster().agent_ids)
  // are Up at `now`. Kept per layout and handed out again until an agent
  // registers, is forgotten or comes back after a timeout, or the first of
  // the Up machines may time out: a create on 16,384 machines costs no walk
  // over the agents then. `layout` must not be null.
  std::shared_ptr<const std::vector<bool>> UpMachines(
      const std::shared_ptr<const fabric::ClusterLayout>& layout, absl::Time now) const;
  // What `id` last reported holding, when it is Up at `now` and its last
  // report was numbered and said what it holds; else nullopt.
  std::optional<HeldReport> HeldBy(const std::string& id, absl::Time now) const;
  // Address and registration of an agent, without copying its reports.
  std::optional<AgentEndpoint> EndpointOf(const std::string& id) const;
  // Every registered agent's last heartbeat, sorted by id.
  std::vector<AgentPulse> Pulses() const;
  // Registered (Up or not), without copying the agent's reports.
  bool Contains(const std::string& id) const;
  // Agents whose last heartbeat is younger than timeout().
  size_t CountUpForTesting(absl::Time now) const;
  bool IsUp(const std::string& id, absl::Time now) const;
  size_t size() const;
  std::vector<LiveAgent> All() const;

 private:
  const absl::Duration heartbeat_interval_;
  // Numbers a registration (LiveAgent::epoch).
  void Stamp(LiveAgent& agent, absl::Time now) ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_);
  // Takes a heartbeat's liveness and health unless it is older than the
  // report `agent` holds.
  void Apply(LiveAgent& agent, absl::Time now, AgentHealth health)
      ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_);
  // A heartbeat at `now` of an agent last heard of at `last`: if a bitmap of
  // UpMachines may hold the agent Down, those bitmaps are stale.
  void NoteHeartbeat(absl::Time last, absl::Time now) ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_);

  mutable vipu::Mutex mu_;
  std::map<std::string, LiveAgent> agents_ ABSL_GUARDED_BY(mu_);
  uint64_t last_epoch_ ABSL_GUARDED_BY(mu_) = 0;

  // UpMachines' bitmaps: valid while up_version_ is `version` and `now` is
  // in [from, until).
  struct UpBitmap {
    std::shared_ptr<const fabric::ClusterLayout> layout;
    uint64_t version = 0;
    absl::Time from;
    absl::Time until;
    std::shared_ptr<const std::vector<bool>> up;
  };
  static constexpr size_t kMaxUpBitmaps = 4;
  // Grows at every registration, forgetting, and heartbeat of an agent a
  // bitmap may hold Down.
  uint64_t up_version_ ABSL_GUARDED_BY(mu_) = 0;
  // The latest `now` a bitmap was made at.
  mutable absl::Time up_latest_ ABSL_GUARDED_BY(mu_) = absl::InfinitePast();
  mutable std::vector<UpBitmap> up_bitmaps_ ABSL_GUARDED_BY(mu_);  // most recently used last
};

}  // namespace vipu::server

#endif  // VIPU_SERVER_FLEET_AGENT_REGISTRY_H_
