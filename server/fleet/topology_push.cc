// EnsureTopology and TopologyPusher: SetTopology to agents, once per registration or change.
#include "server/fleet/topology_push.h"

#include <atomic>
#include <functional>
#include <utility>

#include "absl/strings/str_cat.h"
#include "spdlog/spdlog.h"

namespace vipu::server {
namespace {

// Set while this thread starts calls: a call that completes inline must not
// start more from inside its own start (unbounded recursion).
thread_local bool tl_pumping = false;

}  // namespace

uint64_t TopologyHash(const AgentTopology& topology) {
  // A hash rather than the fingerprint: 16,384 agents would keep ~20 MB of
  // fingerprints otherwise.
  const uint64_t h = std::hash<std::string>{}(TopologyFingerprint(topology));
  return h == 0 ? 1 : h;
}

absl::Status EnsureTopology(AgentClient* client, AgentRegistry* registry, const ClusterLinks& links,
                            const std::string& agent_id, absl::Duration deadline) {
  std::optional<LiveAgent> live = registry->Get(agent_id);
  if (!live) return NotConnectedError(agent_id);
  AgentTopology topology = TopologyFor(links, agent_id);
  const uint64_t fingerprint = TopologyHash(topology);
  if (live->topology_sent == fingerprint) return absl::OkStatus();
  absl::Status s = client->SetTopologySync({agent_id, live->host, live->port}, topology, deadline);
  if (!s.ok()) {
    return absl::UnavailableError(
        absl::StrCat("agent ", agent_id, ": SetTopology failed: ", s.message()));
  }
  registry->MarkTopologySent(agent_id, live->epoch, fingerprint);
  spdlog::info("agent {} told its place in cluster {} ({} ports)", agent_id, topology.cluster_id,
               topology.ports.size());
  return absl::OkStatus();
}

struct TopologyPusher::Call {
  // Pump fills the call, then hands it to the client, whose callback may
  // run Finish on a transport thread in code ThreadSanitizer does not see.
  // Pump's release store and Finish's acquire load make that hand-off
  // visible to it (and to the memory model, whatever the transport does).
  std::atomic<bool> handed_off{false};
  Pending what;
  AgentTopology topology;
};

TopologyPusher::TopologyPusher(AgentClient* client, AgentRegistry* registry, Options options)
    : client_(client), registry_(registry), options_(options) {}

TopologyPusher::~TopologyPusher() {
  vipu::MutexLock lock(&mu_);
  stopping_ = true;
  queue_.clear();
  mu_.Await(absl::Condition(this, &TopologyPusher::NothingRunning));
}

const TopologyPusher::Plan& TopologyPusher::PlanFor(
    const std::shared_ptr<const ClusterLinks>& links) {
  auto it = plans_.find(links.get());
  if (it != plans_.end()) return it->second;
  Plan plan;
  plan.links = links;
  const std::vector<std::string>& ids = links->layout.cluster().agent_ids;
  plan.fingerprints.reserve(ids.size());
  for (const std::string& id : ids)
    plan.fingerprints.push_back(TopologyHash(TopologyFor(*links, id)));
  return plans_.emplace(links.get(), std::move(plan)).first->second;
}

void TopologyPusher::Push(const std::vector<std::shared_ptr<const ClusterLinks>>& clusters) {
  vipu::MutexLock push_lock(&push_mu_);
  // Plans of clusters gone (or changed: new links) go; the plan holds its
  // links, so a key is never a reused address.
  std::set<const ClusterLinks*> current;
  for (const auto& links : clusters) current.insert(links.get());
  for (auto it = plans_.begin(); it != plans_.end();) {
    it = current.count(it->first) != 0 ? std::next(it) : plans_.erase(it);
  }

  const absl::Time now = absl::Now();
  std::vector<Pending> due;
  for (const auto& links : clusters) {
    const Plan& plan = PlanFor(links);
    const std::vector<std::string>& ids = links->layout.cluster().agent_ids;
    for (TopologyDueAgent& agent :
         registry_->TopologyDue(ids, plan.fingerprints, now, &links->layout.by_agent_id())) {
      due.push_back(
          {links, ids[agent.index], std::move(agent.endpoint), plan.fingerprints[agent.index]});
    }
  }
  {
    vipu::MutexLock lock(&mu_);
    if (stopping_) return;
    for (auto it = queue_.begin(); it != queue_.end();) {
      if (current.count(it->links.get()) != 0) {
        ++it;
        continue;
      }
      pending_.erase(it->agent_id);
      it = queue_.erase(it);
    }
    for (Pending& p : due) {
      if (!pending_.insert(p.agent_id).second) continue;  // queued or in flight already
      queue_.push_back(std::move(p));
    }
  }
  Pump(/*reserved=*/false);
}

void TopologyPusher::Pump(bool reserved) {
  tl_pumping = true;
  mu_.Lock();
  if (!reserved) ++starting_;
  for (;;) {
    std::vector<Call*> start;
    while (!stopping_ && in_flight_ < options_.max_in_flight && !queue_.empty()) {
      auto* call = new Call;  // Finish deletes it
      call->what = std::move(queue_.front());
      queue_.pop_front();
      ++in_flight_;
      start.push_back(call);
    }
    if (start.empty()) break;
    mu_.Unlock();
    for (Call* call : start) {
      const Pending& what = call->what;
      // Queued from an older look at the registry: the agent may have been
      // told meanwhile (a call that ended after that look), gone Down or
      // registered again (a later Push queues it afresh).
      std::vector<TopologyDueAgent> due =
          registry_->TopologyDue({what.agent_id}, {what.fingerprint}, absl::Now());
      if (due.empty() || due[0].endpoint.epoch != what.endpoint.epoch) {
        Finish(call, Outcome::kSkipped, "");
        continue;
      }
      call->topology = TopologyFor(*what.links, what.agent_id);
      call->handed_off.store(true, std::memory_order_release);
      client_->SetTopology({what.agent_id, what.endpoint.host, what.endpoint.port}, call->topology,
                           options_.deadline, [this, call](absl::Status s) {
                             Finish(call, s.ok() ? Outcome::kTold : Outcome::kFailed,
                                    std::string(s.message()));
                           });
    }
    mu_.Lock();
  }
  --starting_;
  tl_pumping = false;
  EndRoundIfIdle();
  mu_.Unlock();  // the last touch of this object
}

void TopologyPusher::Finish(Call* call, Outcome outcome, const std::string& error) {
  std::unique_ptr<Call> owned(call);
  (void)call->handed_off.load(std::memory_order_acquire);
  const Pending& what = call->what;
  if (outcome == Outcome::kTold) {
    registry_->MarkTopologySent(what.agent_id, what.endpoint.epoch, what.fingerprint);
    spdlog::debug("agent {} told its place in cluster {} ({} ports)", what.agent_id,
                  call->topology.cluster_id, call->topology.ports.size());
  }
  bool more = false;
  {
    vipu::MutexLock lock(&mu_);
    pending_.erase(what.agent_id);
    if (outcome == Outcome::kTold) {
      ++told_;
      ++round_told_;
      warned_.erase(what.agent_id);
    } else if (outcome == Outcome::kFailed) {
      ++failed_;
      // Once per agent until it takes a topology: a failing agent is asked
      // again every tick.
      if (warned_.insert(what.agent_id).second) {
        spdlog::warn("health: agent {}: SetTopology failed: {}", what.agent_id, error);
      }
    }
    --in_flight_;
    // A call that completed inside Pump's own start leaves the queue to it.
    more = !stopping_ && !queue_.empty() && !tl_pumping;
    if (more) {
      ++starting_;  // keeps the destructor waiting until Pump has run
    } else {
      EndRoundIfIdle();
    }
  }
  if (more) Pump(/*reserved=*/true);
}

void TopologyPusher::EndRoundIfIdle() {
  if (Idle() && round_told_ > 0) {
    spdlog::info("{} agents told their place in the cluster", round_told_);
    round_told_ = 0;
  }
}

bool TopologyPusher::AwaitIdleForTesting(absl::Time deadline) {
  vipu::MutexLock lock(&mu_);
  return mu_.AwaitWithDeadline(absl::Condition(this, &TopologyPusher::Idle), deadline);
}

uint64_t TopologyPusher::ToldForTesting() const {
  vipu::MutexLock lock(&mu_);
  return told_;
}

uint64_t TopologyPusher::FailedForTesting() const {
  vipu::MutexLock lock(&mu_);
  return failed_;
}

}  // namespace vipu::server
