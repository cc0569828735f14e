// ClusterTester::Run: the `test cluster` tests, fanned out to the cluster's agents and summarised.
#include "server/cluster_tester.h"

#include <future>
#include <map>
#include <set>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "base/mutex.h"
#include "fabric/validation.h"
#include "server/agent_driver.h"
#include "server/cluster_links_loader.h"
#include "server/topology_push.h"
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

}  // namespace

absl::StatusOr<std::vector<TestOutcome>> ClusterTester::Run(const std::string& cluster_id,
                                                            bool force) {
  if (absl::Status s = fabric::ValidateId("cluster_id", cluster_id); !s.ok()) return s;
  int64_t partitions = 0;
  absl::Status s = store_->Read([&](storage::ReadTxn& txn) -> absl::Status {
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
  if (partitions > 0 && !force) {
    return absl::FailedPreconditionError(absl::StrCat(
        "cluster_id: cluster '", cluster_id, "' has ", partitions,
        " partition(s); testing retrains its links and disturbs running jobs: remove them or "
        "use --force"));
  }
  auto loaded = LoadClusterLinks(cluster_links_, store_, cluster_id);
  if (!loaded.ok()) return loaded.status();
  const ClusterLinks* links = loaded->get();
  const std::vector<std::string>& agents = links->layout.cluster().agent_ids;
  const fabric::LinkCounts counts = links->topology.Counts();
  spdlog::info("test cluster {}: {} agents{}", cluster_id, agents.size(),
               partitions > 0 ? " (forced while partitions exist)" : "");

  const absl::Duration deadline = agents_->deadline();
  std::vector<TestOutcome> out;
  // The cabling test compares what each port discovered with the plan: make
  // sure every reachable agent has been told the plan (a fresh registration
  // may not have been yet). An agent that cannot be told fails below.
  for (const std::string& agent : agents) {
    EnsureTopology(agents_, registry_, *links, agent, deadline).IgnoreError();
  }

  // Version: every agent answers with the same component versions.
  double seconds = 0;
  Answers versions;
  std::map<std::string, std::string> version_of;
  vipu::Mutex version_mu;  // for version_of
  versions = FanOut(
      agents,
      [&](const std::string& agent) {
        AgentAnswer a;
        std::optional<AgentAddress> address = AgentAddressOf(*registry_, agent);
        if (!address) {
          a.error = "not connected";
          return a;
        }
        absl::StatusOr<AgentInfo> info = agents_->GetInfoSync(*address);
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
  {
    std::vector<std::string> failures;
    std::string reference;
    for (const std::string& agent : agents) {
      if (versions[agent].ok && reference.empty()) reference = version_of[agent];
    }
    for (const std::string& agent : agents) {
      if (!versions[agent].ok) {
        failures.push_back(Unanswered(agent, versions[agent]));
      } else if (version_of[agent] != reference) {
        failures.push_back(absl::StrCat("agent ", agent, " runs ", version_of[agent]));
      }
    }
    out.push_back(Summarise("Version", seconds, counts.agents, std::move(failures),
                            "All component versions are consistent", "agents"));
  }

  auto test_links = [&](AgentLinkTest kind, double* secs) {
    return FanOut(
        agents,
        [&, kind](const std::string& agent) {
          AgentAnswer a;
          std::optional<AgentAddress> address = AgentAddressOf(*registry_, agent);
          if (!address) {
            a.error = "not connected";
            return a;
          }
          absl::StatusOr<AgentLinkTestResult> result = agents_->TestLinksSync(*address, kind);
          if (!result.ok()) {
            a.error = std::string(result.status().message());
            return a;
          }
          for (AgentLinkHealth& l : result->links) a.ports[l.port] = std::move(l);
          a.ipus = std::move(result->ipus);
          a.ok = true;
          return a;
        },
        secs);
  };

  // Cabling: each cable's ends discovered the expected peer.
  {
    Answers answers = test_links(AgentLinkTest::kCabling, &seconds);
    std::vector<std::string> failures;
    for (const fabric::Link& link : links->topology.links()) {
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
    out.push_back(Summarise("Cabling", seconds, counts.ipu_link_cables, std::move(failures),
                            "All cables connected as expected", "cables"));
  }

  auto link_test = [&](AgentLinkTest kind, fabric::LinkKind link_kind, const std::string& type,
                       uint32_t total, const std::string& pass, const std::string& noun) {
    Answers answers = test_links(kind, &seconds);
    std::vector<std::string> failures;
    for (const fabric::Link& link : links->topology.links()) {
      if (link.kind != link_kind) continue;
      std::string fault = LinkFault(link, answers);
      if (!fault.empty()) {
        failures.push_back(
            absl::StrCat(fabric::LinkKindName(link.kind), " ", link.name, ": ", fault));
      }
    }
    out.push_back(Summarise(type, seconds, total, std::move(failures),
                            total == 0 ? "GW Link test skipped" : pass, noun));
  };
  link_test(AgentLinkTest::kSync, fabric::LinkKind::kSyncLink, "Sync-Link", counts.sync_cables,
            "Sync Link test passed", "sync cables");
  link_test(AgentLinkTest::kTraining, fabric::LinkKind::kIpuLink, "Link-Training", counts.ipu_links,
            "All Links Passed", "links");

  // Traffic: an all-to-all in each ILD needs every IPU and IPU-Link of it.
  {
    Answers answers = test_links(AgentLinkTest::kTraffic, &seconds);
    std::vector<std::string> failures;
    for (uint32_t ild = 0; ild < links->layout.num_ilds(); ++ild) {
      std::string fault;
      for (uint32_t m = 0; m < links->layout.machines_per_ild() && fault.empty(); ++m) {
        const std::string& agent = agents[ild * links->layout.machines_per_ild() + m];
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
      for (const fabric::Link& link : links->topology.links()) {
        if (!fault.empty()) break;
        if (link.kind != fabric::LinkKind::kIpuLink || link.ild != ild) continue;
        std::string f = LinkFault(link, answers);
        if (!f.empty()) fault = absl::StrCat("IPU-Link ", link.name, " ", f);
      }
      if (!fault.empty()) failures.push_back(absl::StrCat("ILD ", ild, ": ", fault));
    }
    out.push_back(Summarise("Traffic", seconds, counts.ilds, std::move(failures),
                            "Traffic test passed", "ILDs"));
  }
  link_test(AgentLinkTest::kGw, fabric::LinkKind::kGwLink, "GW-Link", counts.gw_links,
            "GW Link test passed", "GW-Link pairs");

  for (const TestOutcome& t : out) {
    spdlog::info("test cluster {}: {} {}/{} in {:.2f}s: {}", cluster_id, t.test_type, t.passed,
                 t.total, t.duration_s, t.summary);
  }
  return out;
}

}  // namespace vipu::server
