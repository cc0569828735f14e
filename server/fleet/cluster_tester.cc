// ClusterTester::Run: the `test cluster` tests, fanned out to the cluster's agents and summarised.
#include "server/fleet/cluster_tester.h"

#include <future>
#include <map>
#include <set>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "base/mutex.h"
#include "fabric/validation.h"
#include "server/fleet/agent_driver.h"
#include "server/fleet/cluster_links_loader.h"
#include "server/fleet/topology_push.h"
#include "spdlog/spdlog.h"
#include "wire/attribute_names.h"

namespace vipu::server {
namespace {

// An agent's answer to one test: its ports by number and IPU health, or why
// it did not answer.
struct AgentAnswer {
  bool ok = false;
  std::string error;
  std::map<uint32_t, AgentLinkHealth> ports;
  std::vector<AgentIpuHealth> ipus;
};

using Answers = std::map<std::string, AgentAnswer>;

// Calls `call` on every agent in parallel; returns each answer and the wall time.
template <typename Call>
Answers FanOut(const std::vector<std::string>& agents, Call call, double* seconds) {
  const absl::Time start = absl::Now();
  std::vector<std::pair<std::string, std::future<AgentAnswer>>> futures;
  for (const std::string& agent : agents) {
    futures.emplace_back(agent,
                         std::async(std::launch::async, [&call, agent] { return call(agent); }));
  }
  Answers out;
  for (auto& [agent, f] : futures) out[agent] = f.get();
  *seconds = absl::ToDoubleSeconds(absl::Now() - start);
  return out;
}

std::string Unanswered(const std::string& agent, const AgentAnswer& a) {
  return absl::StrCat("agent ", agent, " did not answer: ", a.error);
}

// Why the end of `link` on `end` is not trained, or "" when it is.
std::string EndFault(const fabric::Link& link, const fabric::LinkEnd& end, const Answers& answers) {
  auto it = answers.find(end.agent_id);
  if (it == answers.end() || !it->second.ok) {
    return Unanswered(end.agent_id, it == answers.end() ? AgentAnswer{} : it->second);
  }
  auto p = it->second.ports.find(end.port);
  if (p == it->second.ports.end()) {
    return absl::StrCat("agent ", end.agent_id, " does not know port ", end.port);
  }
  if (!p->second.trained) {
    return absl::StrCat("down (reported by ", end.agent_id, ", ", p->second.error_count,
                        " errors)");
  }
  (void)link;
  return "";
}

std::string LinkFault(const fabric::Link& link, const Answers& answers) {
  std::string fault = EndFault(link, link.a, answers);
  if (fault.empty() && !link.internal) fault = EndFault(link, link.b, answers);
  return fault;
}

TestOutcome Summarise(std::string type, double seconds, uint32_t total,
                      std::vector<std::string> failures, const std::string& pass_summary,
                      const std::string& noun) {
  TestOutcome t;
  t.test_type = std::move(type);
  t.duration_s = seconds;
  t.total = total;
  t.passed = total - static_cast<uint32_t>(failures.size());
  if (failures.empty()) {
    t.summary = pass_summary;
  } else {
    t.summary = absl::StrCat(failures.size(), " of ", total, " ", noun, " failed: ", failures[0],
                             failures.size() > 1 ? " ..." : "");
  }
  t.failures = std::move(failures);
  return t;
}

// The agents a test asks and the plan their answers are judged by, borrowed
// for one Run.
struct TestScope {
  AgentRegistry* registry;
  AgentClient* client;
  const ClusterLinks& links;
  const std::vector<std::string>& agents;  // links.layout.cluster().agent_ids
  fabric::LinkCounts counts;
};

// The partitions on the cluster, which the tests would disturb; NOT_FOUND
// for an unknown cluster, else the store's errors.
absl::StatusOr<int64_t> CountPartitions(storage::Store* store, const std::string& cluster_id) {
  int64_t partitions = 0;
  absl::Status s = store->Read([&](storage::ReadTxn& txn) -> absl::Status {
    auto c = txn.GetCluster(cluster_id);
    if (!c.ok()) {
      if (absl::IsNotFound(c.status())) {
        return absl::NotFoundError(
            absl::StrCat("cluster_id: cluster '", cluster_id, "' not found"));
      }
      return c.status();
    }
    auto n = txn.CountPartitionsInCluster(cluster_id);
    if (!n.ok()) return n.status();
    partitions = *n;
    return absl::OkStatus();
  });
  if (!s.ok()) return s;
  return partitions;
}

// Refuses (FAILED_PRECONDITION) to test under partitions unless `force`: the
// tests retrain the links their jobs run on.
absl::Status CheckUndisturbed(const std::string& cluster_id, int64_t partitions, bool force) {
  if (partitions > 0 && !force) {
    return absl::FailedPreconditionError(absl::StrCat(
        "cluster_id: cluster '", cluster_id, "' has ", partitions,
        " partition(s); testing retrains its links and disturbs running jobs: remove them or "
        "use --force"));
  }
  return absl::OkStatus();
}

// Tells every reachable agent the plan, which the cabling test compares each
// port's discovery with (a fresh registration may not have been told yet).
// An agent that cannot be told fails the tests that follow.
void PushPlanToAgents(const TestScope& scope, absl::Duration deadline) {
  for (const std::string& agent : scope.agents) {
    EnsureTopology(scope.client, scope.registry, scope.links, agent, deadline).IgnoreError();
  }
}

// Version: every agent answers with the same component versions, as an
// installation runs one release on all its machines.
TestOutcome VersionTest(const TestScope& scope) {
  double seconds = 0;
  std::map<std::string, std::string> version_of;
  vipu::Mutex version_mu;  // for version_of
  Answers versions = FanOut(
      scope.agents,
      [&](const std::string& agent) {
        AgentAnswer a;
        std::optional<AgentAddress> address = AgentAddressOf(*scope.registry, agent);
        if (!address) {
          a.error = "not connected";
          return a;
        }
        absl::StatusOr<AgentInfo> info = scope.client->GetInfoSync(*address);
        if (!info.ok()) {
          a.error = std::string(info.status().message());
          return a;
        }
        std::string v;
        for (const auto& [name, value] : info->details) {
          if (name == wire::kMachineVirmVersion || name == wire::kMachineRuntimeVersion ||
              name == wire::kMachineGwswVersion || name == wire::kMachineIpuofServerVersion) {
            absl::StrAppend(&v, name, "=", value, " ");
          }
        }
        vipu::MutexLock lock(&version_mu);
        version_of[agent] = v;
        a.ok = true;
        return a;
      },
      &seconds);
  std::vector<std::string> failures;
  std::string reference;
  for (const std::string& agent : scope.agents) {
    if (versions[agent].ok && reference.empty()) reference = version_of[agent];
  }
  for (const std::string& agent : scope.agents) {
    if (!versions[agent].ok) {
      failures.push_back(Unanswered(agent, versions[agent]));
    } else if (version_of[agent] != reference) {
      failures.push_back(absl::StrCat("agent ", agent, " runs ", version_of[agent]));
    }
  }
  return Summarise("Version", seconds, scope.counts.agents, std::move(failures),
                   "All component versions are consistent", "agents");
}

// Runs link test `kind` on every agent in parallel; each answer carries the
// agent's ports and IPU health, which the tests below judge against the plan.
Answers TestLinksOnAgents(const TestScope& scope, AgentLinkTest kind, double* seconds) {
  return FanOut(
      scope.agents,
      [&, kind](const std::string& agent) {
        AgentAnswer a;
        std::optional<AgentAddress> address = AgentAddressOf(*scope.registry, agent);
        if (!address) {
          a.error = "not connected";
          return a;
        }
        absl::StatusOr<AgentLinkTestResult> result = scope.client->TestLinksSync(*address, kind);
        if (!result.ok()) {
          a.error = std::string(result.status().message());
          return a;
        }
        for (AgentLinkHealth& l : result->links) a.ports[l.port] = std::move(l);
        a.ipus = std::move(result->ipus);
        a.ok = true;
        return a;
      },
      seconds);
}

// Cabling: each cable's ends discovered the expected peer, so a miswired
// cable is found before a partition's links are trained over it.
TestOutcome CablingTest(const TestScope& scope) {
  double seconds = 0;
  Answers answers = TestLinksOnAgents(scope, AgentLinkTest::kCabling, &seconds);
  std::vector<std::string> failures;
  for (const fabric::Link& link : scope.links.topology.links()) {
    if (link.kind != fabric::LinkKind::kIpuLink || link.cables == 0) continue;
    std::string fault;
    for (const auto* ends : {&link.a, &link.b}) {
      const fabric::LinkEnd& self = *ends;
      const fabric::LinkEnd& peer = ends == &link.a ? link.b : link.a;
      const AgentAnswer& a = answers[self.agent_id];
      if (!a.ok) {
        fault = Unanswered(self.agent_id, a);
        break;
      }
      auto p = a.ports.find(self.port);
      if (p == a.ports.end() || p->second.peer_agent_id != peer.agent_id ||
          p->second.peer_port != peer.port) {
        fault = absl::StrCat(self.agent_id, " port ", self.port, " does not see ", peer.agent_id,
                             " port ", peer.port);
        break;
      }
    }
    if (fault.empty()) continue;
    for (uint32_t c = 0; c < link.cables; ++c) {
      failures.push_back(absl::StrCat("cable ", c, " of ", link.name, ": ", fault));
    }
  }
  return Summarise("Cabling", seconds, scope.counts.ipu_link_cables, std::move(failures),
                   "All cables connected as expected", "cables");
}

// Sync-Link, Link-Training, GW-Link: every link of `link_kind` trained at
// both ends (the one end of a link inside a machine), as partitions need them up.
TestOutcome LinkKindTest(const TestScope& scope, AgentLinkTest kind, fabric::LinkKind link_kind,
                         const std::string& type, uint32_t total, const std::string& pass,
                         const std::string& noun) {
  double seconds = 0;
  Answers answers = TestLinksOnAgents(scope, kind, &seconds);
  std::vector<std::string> failures;
  for (const fabric::Link& link : scope.links.topology.links()) {
    if (link.kind != link_kind) continue;
    std::string fault = LinkFault(link, answers);
    if (!fault.empty()) {
      failures.push_back(
          absl::StrCat(fabric::LinkKindName(link.kind), " ", link.name, ": ", fault));
    }
  }
  return Summarise(type, seconds, total, std::move(failures),
                   total == 0 ? "GW Link test skipped" : pass, noun);
}

// Traffic: an all-to-all in each ILD needs every IPU and IPU-Link of it, so
// one unhealthy IPU or link fails its whole ILD.
TestOutcome TrafficTest(const TestScope& scope) {
  double seconds = 0;
  Answers answers = TestLinksOnAgents(scope, AgentLinkTest::kTraffic, &seconds);
  const fabric::ClusterLayout& layout = scope.links.layout;
  std::vector<std::string> failures;
  for (uint32_t ild = 0; ild < layout.num_ilds(); ++ild) {
    std::string fault;
    for (uint32_t m = 0; m < layout.machines_per_ild() && fault.empty(); ++m) {
      const std::string& agent = scope.agents[ild * layout.machines_per_ild() + m];
      const AgentAnswer& a = answers[agent];
      if (!a.ok) {
        fault = Unanswered(agent, a);
        break;
      }
      for (const auto& ipu : a.ipus) {
        if (!ipu.healthy) {
          fault = absl::StrCat("agent ", agent, " IPU ", ipu.index, " error");
          break;
        }
      }
    }
    for (const fabric::Link& link : scope.links.topology.links()) {
      if (!fault.empty()) break;
      if (link.kind != fabric::LinkKind::kIpuLink || link.ild != ild) continue;
      std::string f = LinkFault(link, answers);
      if (!f.empty()) fault = absl::StrCat("IPU-Link ", link.name, " ", f);
    }
    if (!fault.empty()) failures.push_back(absl::StrCat("ILD ", ild, ": ", fault));
  }
  return Summarise("Traffic", seconds, scope.counts.ilds, std::move(failures),
                   "Traffic test passed", "ILDs");
}

// One log line per test, so the server's log keeps what the caller was shown.
void LogOutcomes(const std::string& cluster_id, const std::vector<TestOutcome>& out) {
  for (const TestOutcome& t : out) {
    spdlog::info("test cluster {}: {} {}/{} in {:.2f}s: {}", cluster_id, t.test_type, t.passed,
                 t.total, t.duration_s, t.summary);
  }
}

}  // namespace

absl::StatusOr<std::vector<TestOutcome>> ClusterTester::Run(const std::string& cluster_id,
                                                            bool force) {
  if (absl::Status s = fabric::ValidateId("cluster_id", cluster_id); !s.ok()) return s;
  absl::StatusOr<int64_t> partitions = CountPartitions(store_, cluster_id);
  if (!partitions.ok()) return partitions.status();
  if (absl::Status s = CheckUndisturbed(cluster_id, *partitions, force); !s.ok()) return s;
  auto loaded = LoadClusterLinks(cluster_links_, store_, cluster_id);
  if (!loaded.ok()) return loaded.status();
  const ClusterLinks& links = **loaded;
  const TestScope scope{registry_, agents_, links, links.layout.cluster().agent_ids,
                        links.topology.Counts()};
  spdlog::info("test cluster {}: {} agents{}", cluster_id, scope.agents.size(),
               *partitions > 0 ? " (forced while partitions exist)" : "");

  PushPlanToAgents(scope, agents_->deadline());
  std::vector<TestOutcome> out;
  out.push_back(VersionTest(scope));
  out.push_back(CablingTest(scope));
  out.push_back(LinkKindTest(scope, AgentLinkTest::kSync, fabric::LinkKind::kSyncLink, "Sync-Link",
                             scope.counts.sync_cables, "Sync Link test passed", "sync cables"));
  out.push_back(LinkKindTest(scope, AgentLinkTest::kTraining, fabric::LinkKind::kIpuLink,
                             "Link-Training", scope.counts.ipu_links, "All Links Passed", "links"));
  out.push_back(TrafficTest(scope));
  out.push_back(LinkKindTest(scope, AgentLinkTest::kGw, fabric::LinkKind::kGwLink, "GW-Link",
                             scope.counts.gw_links, "GW Link test passed", "GW-Link pairs"));
  LogOutcomes(cluster_id, out);
  return out;
}

}  // namespace vipu::server
