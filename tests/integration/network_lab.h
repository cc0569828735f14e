// A small network of real Linux network namespaces for fault tests: one
// namespace per node (an etcd member, a vipu-server member), each joined by
// a veth pair to a bridge in the test's own namespace, where the test
// process, its clients and the agent live (kHubAddress). Links between two
// nodes are cut and healed with nftables rules on the bridge (a set of
// address pairs whose packets are dropped, both ways), or made lossy with
// nftables' random numbers; a node's packets are delayed with tc netem. Processes are put into a
// node by Daemon and EtcdCluster, which join the node's namespace (NetnsPath) before exec.
//
// The test's own namespace must be private: tests/integration/in_network_lab.sh
// runs the test program in fresh network and mount namespaces and sets
// VIPU_NETWORK_LAB=1, so nothing here touches the host's network, and the
// named namespaces under /run/netns vanish with the test's mount namespace.
// Create() refuses without that variable, and the test skips with its
// reason.
//
// Ownership: a NetworkLab owns its namespaces and rules and deletes them when
// destroyed; processes started in them must be stopped first. Thread-safety:
// none; only the test thread uses it.
#ifndef VIPU_TESTS_INTEGRATION_NETWORK_LAB_H_
#define VIPU_TESTS_INTEGRATION_NETWORK_LAB_H_

#include <cstdlib>
#include <map>
#include <memory>
#include <string>
#include <utility>
#include <vector>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "tests/integration/harness.h"

namespace vipu::testing {

class NetworkLab {
 public:
  // The bridge's address: the test process, its clients and the agent.
  static constexpr char kHubAddress[] = "10.231.0.1";

  // The bridge and the drop rules, in the test's private namespace.
  // FAILED_PRECONDITION, with the reason a test states when it skips, when
  // the test does not run in a namespace of its own or a tool fails.
  static absl::StatusOr<std::unique_ptr<NetworkLab>> Create() {
    const char* lab = std::getenv("VIPU_NETWORK_LAB");
    if (lab == nullptr || std::string(lab) != "1") {
      return absl::FailedPreconditionError(
          "needs network namespaces of its own: run as root through "
          "tests/integration/in_network_lab.sh (ctest does)");
    }
    std::unique_ptr<NetworkLab> net(new NetworkLab());
    absl::Status made = net->Run({kIp, "link", "add", "vlab0", "type", "bridge"});
    if (made.ok())
      made = net->Run({kIp, "addr", "add", absl::StrCat(kHubAddress, "/24"), "dev", "vlab0"});
    if (made.ok()) made = net->Run({kIp, "link", "set", "vlab0", "up"});
    // The bridge family sees frames between two of its ports, so a rule
    // here cuts two nodes without touching what the hub reaches.
    if (made.ok()) {
      made = net->Nft(
          "add table bridge lab\n"
          "add set bridge lab cut { type ipv4_addr . ipv4_addr; }\n"
          "add set bridge lab lossy { type ipv4_addr . ipv4_addr; }\n"
          "add chain bridge lab links { type filter hook forward priority 0; }\n"
          "add rule bridge lab links ip saddr . ip daddr @cut drop\n");
    }
    if (!made.ok()) return absl::FailedPreconditionError(made.message());
    return net;
  }

  ~NetworkLab() {
    for (const auto& [name, node] : nodes_) {
      // The veth pair first, which goes at once: a namespace is taken down
      // in the background, and its pair with it, so the next lab could
      // find the port's name still taken.
      Run({kIp, "link", "del", node.port}).IgnoreError();
      Run({kIp, "netns", "del", node.netns}).IgnoreError();
    }
    Nft("delete table bridge lab\n").IgnoreError();
    Run({kIp, "link", "del", "vlab0"}).IgnoreError();
    RemoveTree(dir_);
  }

  NetworkLab(const NetworkLab&) = delete;
  NetworkLab& operator=(const NetworkLab&) = delete;

  // Adds node `name` (a namespace with its loopback up and one interface on
  // the bridge) and returns its address.
  absl::StatusOr<std::string> AddNode(const std::string& name) {
    if (nodes_.count(name) != 0) return nodes_[name].address;
    Node node;
    node.netns = absl::StrCat("vlab-", name);
    node.address = absl::StrCat("10.231.0.", 10 + nodes_.size());
    node.port = absl::StrCat("vl-", nodes_.size());
    const std::string& port = node.port;
    for (const std::vector<std::string>& step : std::vector<std::vector<std::string>>{
             {kIp, "netns", "add", node.netns},
             {kIp, "link", "add", port, "type", "veth", "peer", "name", "eth0", "netns",
              node.netns},
             {kIp, "link", "set", port, "master", "vlab0", "up"},
             {kIp, "-n", node.netns, "addr", "add", node.address + "/24", "dev", "eth0"},
             {kIp, "-n", node.netns, "link", "set", "eth0", "up"},
             {kIp, "-n", node.netns, "link", "set", "lo", "up"}}) {
      if (absl::Status s = Run(step); !s.ok()) return s;
    }
    nodes_[name] = node;
    return node.address;
  }

  // The path a process opens to join node `name`'s namespace (setns).
  std::string NetnsPath(const std::string& name) const {
    return "/run/netns/" + nodes_.at(name).netns;
  }
  const std::string& AddressOf(const std::string& name) const { return nodes_.at(name).address; }

  // Drops every packet between nodes a and b, both ways, until Heal.
  absl::Status Cut(const std::string& a, const std::string& b) { return Pairs("add", "cut", a, b); }
  absl::Status Heal(const std::string& a, const std::string& b) {
    return Pairs("delete", "cut", a, b);
  }
  // Drops `percent` of the packets between a and b, each way, at random.
  // One loss rate per lab: the first call sets it.
  absl::Status Lossy(const std::string& a, const std::string& b, int percent) {
    if (!loss_rule_) {
      absl::Status s = Nft(absl::StrCat("add rule bridge lab links ip saddr . ip daddr @lossy ",
                                        "numgen random mod 100 < ", percent, " drop\n"));
      if (!s.ok()) return s;
      loss_rule_ = true;
    }
    return Pairs("add", "lossy", a, b);
  }
  absl::Status Lossless(const std::string& a, const std::string& b) {
    return Pairs("delete", "lossy", a, b);
  }

  // Adds `ms` to every packet node `name` sends (tc netem on its
  // interface); 0 takes the delay away. FAILED_PRECONDITION, saying why,
  // when the kernel has no netem.
  absl::Status Delay(const std::string& name, int ms) {
    const std::string& netns = nodes_.at(name).netns;
    if (ms == 0) return Run({kTc, "-n", netns, "qdisc", "del", "dev", "eth0", "root"});
    CommandResult r = RunCommand({kTc, "-n", netns, "qdisc", "replace", "dev", "eth0", "root",
                                  "netem", "delay", absl::StrCat(ms, "ms")});
    if (r.exit_code == 0) return absl::OkStatus();
    if (r.err.find("qdisc kind is unknown") != std::string::npos) {
      return absl::FailedPreconditionError(absl::StrCat(
          "this kernel has no netem queueing discipline (CONFIG_NET_SCH_NETEM), so no delay "
          "can be added: tc said ",
          r.err));
    }
    return absl::InternalError(absl::StrCat("tc netem: ", r.err));
  }

 private:
  static constexpr char kIp[] = "/usr/sbin/ip";
  static constexpr char kTc[] = "/usr/sbin/tc";

  struct Node {
    std::string netns, address, port;
  };

  NetworkLab() = default;

  absl::Status Pairs(const std::string& verb, const std::string& set, const std::string& a,
                     const std::string& b) {
    const std::string x = AddressOf(a), y = AddressOf(b);
    return Nft(absl::StrCat(verb, " element bridge lab ", set, " { ", x, " . ", y, ", ", y, " . ",
                            x, " }\n"));
  }

  // nft with a script on its standard input (-f of a file keeps the
  // braces and semicolons away from any shell).
  absl::Status Nft(const std::string& script) {
    const std::string file = absl::StrCat(dir_, "/rules.nft");
    {
      FILE* f = std::fopen(file.c_str(), "w");
      if (f == nullptr) return absl::InternalError("cannot write " + file);
      std::fputs(script.c_str(), f);
      std::fclose(f);
    }
    return Run({"/usr/sbin/nft", "-f", file});
  }

  static absl::Status Run(const std::vector<std::string>& argv) {
    CommandResult r = RunCommand(argv);
    if (r.exit_code == 0) return absl::OkStatus();
    return absl::InternalError(
        absl::StrCat(absl::StrJoin(argv, " "), " exited ", r.exit_code, ": ", r.err, r.out));
  }

  std::string dir_ = MakeTempDir();
  std::map<std::string, Node> nodes_;
  bool loss_rule_ = false;
};

}  // namespace vipu::testing

#endif  // VIPU_TESTS_INTEGRATION_NETWORK_LAB_H_
