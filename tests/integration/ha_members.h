// The set-up the highly available control plane tests share: a temporary
// directory, a real etcd cluster in it (tests/etcd_harness.h), an empty
// member configuration file (so the machine's own /etc/vipu configuration
// never applies), a loopback address per vipu-server member, and the members
// themselves as Daemon processes (tests/integration/daemon_process.h) with
// the flags every member takes plus the fixture's own. Each member's role is
// read from the reply metadata of VersionService (wire::kRoleMetadata), in
// plaintext or over the credentials the fixture gives.
//
// In a network lab (PlaceIn), each member and each etcd member is a node of
// its own, so that the links between them can be cut.
//
// The pod, for tests that need one: one vipu-agent process serving four
// machines and given every member (StartAgent), and cluster pod16 with
// allocation default made through the member list (CreatePod). etcd is
// looked into as an operator does, with etcdctl (Etcdctl, LeaderKey).
//
// Ownership: an HaMembers owns the directory, the etcd cluster, the agent
// and the member processes. Destroying it kills the agent and the members,
// stops etcd, and removes the directory unless the test has failed; then it
// keeps the logs and prints where they are. A fixture destroys it after its
// own client threads.
//
// Thread-safety: none. Only the test thread uses an HaMembers.
#ifndef VIPU_TESTS_INTEGRATION_HA_MEMBERS_H_
#define VIPU_TESTS_INTEGRATION_HA_MEMBERS_H_

#include <grpcpp/grpcpp.h>
#include <gtest/gtest.h>
#include <sys/types.h>

#include <chrono>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <memory>
#include <string>
#include <utility>
#include <vector>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "absl/strings/str_split.h"
#include "absl/time/time.h"
#include "tests/etcd_harness.h"
#include "tests/integration/daemon_process.h"
#include "tests/integration/harness.h"
#include "tests/integration/network_lab.h"
#include "version.grpc.pb.h"
#include "vipuuser.grpc.pb.h"
#include "wire/metadata_keys.h"

namespace vipu::testing {

// The vipu-server members of the control plane the HA suites run: a leader
// and one standby.
inline constexpr int kHaMembers = 2;

class HaMembers {
 public:
  // Makes the directory and the empty configuration file, and picks a free
  // loopback address for each of `members` vipu-server members. Starts
  // nothing.
  explicit HaMembers(int members) : dir_(MakeTempDir()), config_(dir_ + "/member.hcl") {
    std::ofstream(config_) << "# test member\n";
    for (int i = 0; i < members; ++i) addresses_.push_back(absl::StrCat("127.0.0.1:", FreePort()));
    members_.resize(members);
  }

  ~HaMembers() {
    agent_.reset();
    members_.clear();
    etcd_.reset();
    if (::testing::Test::HasFailure()) {
      std::fprintf(stderr, "logs kept in %s\n", dir_.c_str());
    } else {
      RemoveTree(dir_);
    }
  }

  HaMembers(const HaMembers&) = delete;
  HaMembers& operator=(const HaMembers&) = delete;

  // Puts member i in node "member<i>" of `lab` and, from LaunchEtcd() on,
  // etcd member i in node "etcd<i>"; the agent and the test's clients stay
  // on the lab's hub. Call before anything starts; `lab` outlives this.
  absl::Status PlaceIn(NetworkLab* lab) {
    lab_ = lab;
    for (int i = 0; i < size(); ++i) {
      absl::StatusOr<std::string> host = lab->AddNode(MemberNode(i));
      if (!host.ok()) return host.status();
      addresses_[i] = absl::StrCat(*host, ":", FreePort());
    }
    return absl::OkStatus();
  }

  // The lab nodes of member i and etcd member i (PlaceIn).
  static std::string MemberNode(int i) { return absl::StrCat("member", i); }
  static std::string EtcdNode(int i) { return absl::StrCat("etcd", i); }

  // Starts an etcd cluster of `etcd_members` members, data and logs in dir().
  absl::Status LaunchEtcd(int etcd_members) {
    EtcdClusterOptions options;
    options.members = etcd_members;
    options.dir = dir_;
    for (int i = 0; lab_ != nullptr && i < etcd_members; ++i) {
      absl::StatusOr<std::string> host = lab_->AddNode(EtcdNode(i));
      if (!host.ok()) return host.status();
      options.hosts.push_back(*host);
      options.netns.push_back(lab_->NetnsPath(EtcdNode(i)));
    }
    absl::StatusOr<std::unique_ptr<EtcdCluster>> etcd = EtcdCluster::Launch(options);
    if (!etcd.ok()) return etcd.status();
    etcd_ = std::move(*etcd);
    return absl::OkStatus();
  }

  // The etcd cluster LaunchEtcd() started (its members can be stopped and
  // started again), or null before.
  EtcdCluster* etcd() { return etcd_.get(); }

  // The members' --etcd-lease-ms from the next StartMember() on; 2000 until
  // set.
  void set_lease_ms(int lease_ms) { lease_ms_ = absl::StrCat(lease_ms); }

  // The credentials RoleOf() calls with; plaintext until set.
  void set_credentials(std::shared_ptr<grpc::ChannelCredentials> credentials) {
    credentials_ = std::move(credentials);
  }

  // Starts member i (again, after Kill(i)) on address(i) with the flags of
  // every member followed by `extra_flags`, its output in Log(i). Needs
  // LaunchEtcd() first.
  void StartMember(int i, const std::vector<std::string>& extra_flags) {
    std::vector<std::string> argv = {VIPU_SERVER_BIN, "--etcd-endpoints", etcd_->endpoints(),
                                     "--listen",      addresses_[i],      "--config",
                                     config_,         "--etcd-lease-ms",  lease_ms_};
    // A lab address is not loopback: serving plaintext there is the
    // operator's explicit choice.
    if (lab_ != nullptr) argv.push_back("--insecure");
    argv.insert(argv.end(), extra_flags.begin(), extra_flags.end());
    members_[i] =
        std::make_unique<Daemon>(argv, Log(i), std::map<std::string, std::string>{},
                                 lab_ != nullptr ? lab_->NetnsPath(MemberNode(i)) : std::string());
  }

  // SIGKILL to member i; returns once it is reaped. Started(i) is false then.
  void Kill(int i) { members_[i].reset(); }

  // Whether member i was started and not killed since.
  bool Started(int i) const { return members_[i] != nullptr; }

  // Whether member i's process runs (it was started and has not exited).
  bool Running(int i) { return members_[i] != nullptr && members_[i]->running(); }

  // Member i's process id; it must be Started(i).
  pid_t Pid(int i) const { return members_[i]->pid(); }

  // The role member i states in its reply metadata ("leader", "standby"),
  // "none" when it states none, "" when it does not answer within 2 s.
  std::string RoleOf(int i) const { return Probe(i, wire::kRoleMetadata); }

  // The leader member i names in its reply metadata ("none" while it knows
  // of none), "" when it does not answer within 2 s.
  std::string LeaderNamedBy(int i) const { return Probe(i, wire::kLeaderMetadata); }

  // The index of a started member that says it leads, or -1.
  int Leader() const {
    for (int i = 0; i < size(); ++i) {
      if (Started(i) && RoleOf(i) == "leader") return i;
    }
    return -1;
  }

  // The leader once one says so, or -1 after `timeout`. One probe can time
  // out while a busy leader answers slowly, so a single look is not enough.
  int AwaitLeader(absl::Duration timeout) const {
    int leader = -1;
    WaitFor(
        [&] {
          leader = Leader();
          return leader >= 0;
        },
        timeout);
    return leader;
  }

  // The leader once one says so, every other started member names it, and a
  // call through each of them reaches it; -1 after `timeout`. Naming the
  // leader is not enough: a standby that forwarded a call while the new
  // leader's listeners were still starting refuses calls to it ("does not
  // answer") until its channel's reconnect backoff has passed.
  int AwaitAgreedLeader(absl::Duration timeout) const {
    int leader = -1;
    WaitFor(
        [&] {
          leader = Leader();
          if (leader < 0) return false;
          for (int i = 0; i < size(); ++i) {
            if (i == leader || !Started(i)) continue;
            if (LeaderNamedBy(i) != addresses_[leader] || !ReachesLeader(i)) return false;
          }
          return true;
        },
        timeout);
    return leader;
  }

  // Whether a read through member i reaches a leader: a standby forwards it,
  // and any answer but UNAVAILABLE or a lapsed deadline is the leader's (a
  // refusal of the caller included).
  bool ReachesLeader(int i) const {
    auto stub = virmgrpc::UserService::NewStub(grpc::CreateChannel(addresses_[i], credentials_));
    grpc::ClientContext ctx;
    ctx.set_deadline(std::chrono::system_clock::now() + std::chrono::seconds(2));
    virmgrpc::ListPartitionsRequest req;
    virmgrpc::ListPartitionsReply reply;
    const grpc::StatusCode code = stub->ListPartitions(&ctx, req, &reply).error_code();
    return code != grpc::StatusCode::UNAVAILABLE && code != grpc::StatusCode::DEADLINE_EXCEEDED;
  }

  // Starts one vipu-agent process serving machines ag1..ag4, given every
  // member; its log is dir()/agent.log.
  void StartAgent() {
    agent_ = std::make_unique<Daemon>(
        std::vector<std::string>{VIPU_AGENT_BIN, "--server", MemberList(), "--agent-ids",
                                 "ag1,ag2,ag3,ag4", "--host",
                                 lab_ != nullptr ? NetworkLab::kHubAddress : "127.0.0.1"},
        dir_ + "/agent.log");
  }

  // Cluster pod16 of the agent's four machines and allocation default,
  // made through the member list once the machines have registered (within
  // 60 s). The error names the command and what it printed.
  absl::Status CreatePod() const {
    CommandResult cluster;
    if (!WaitFor(
            [&] {
              cluster = RunCommand({VIPU_ADMIN_BIN, "--api-host", MemberList(), "create", "cluster",
                                    "pod16", "--agents", "ag1,ag2,ag3,ag4"});
              return cluster.exit_code == 0;
            },
            absl::Seconds(60))) {
      return absl::UnavailableError(absl::StrCat("create cluster: ", cluster.out, cluster.err));
    }
    CommandResult allocation = RunCommand({VIPU_ADMIN_BIN, "--api-host", MemberList(), "create",
                                           "allocation", "default", "--cluster", "pod16"});
    if (allocation.exit_code != 0) {
      return absl::UnavailableError(
          absl::StrCat("create allocation: ", allocation.out, allocation.err));
    }
    return absl::OkStatus();
  }

  // etcdctl (API v3) with `args`, given every etcd member.
  CommandResult Etcdctl(const std::vector<std::string>& args) const {
    const std::string etcdctl =
        (std::filesystem::path(EtcdCluster::Binary()).parent_path() / "etcdctl").string();
    std::vector<std::string> argv = {etcdctl, "--endpoints", etcd_->endpoints()};
    argv.insert(argv.end(), args.begin(), args.end());
    return RunCommand(argv, {{"ETCDCTL_API", "3"}});
  }

  // The leader's key in the election under the default prefix (the oldest
  // candidate's), or "" when etcd holds none or does not answer.
  std::string LeaderKey() const {
    CommandResult r = Etcdctl({"get", "/vipu/leader/", "--prefix", "--sort-by=CREATE",
                               "--order=ASCEND", "--limit=1", "--keys-only"});
    if (r.exit_code != 0) return "";
    return r.out.substr(0, r.out.find('\n'));
  }

  // "h1:p1,h2:p2": every member, as clients and agents are given them.
  std::string MemberList() const { return absl::StrJoin(addresses_, ","); }

  int size() const { return static_cast<int>(addresses_.size()); }
  // The directory of everything's files and logs.
  const std::string& dir() const { return dir_; }
  // Member i's gRPC address ("127.0.0.1:P"), fixed for the object's life.
  const std::string& address(int i) const { return addresses_[i]; }
  const std::vector<std::string>& addresses() const { return addresses_; }
  // Member i's log file, kept across restarts.
  std::string Log(int i) const { return absl::StrCat(dir_, "/member", i, ".log"); }

 private:
  // Metadata `key` of member i's GetVersion reply; "none" when absent, ""
  // when it does not answer within 2 s.
  std::string Probe(int i, const char* key) const {
    auto stub = virmgrpc::VersionService::NewStub(grpc::CreateChannel(addresses_[i], credentials_));
    grpc::ClientContext ctx;
    ctx.set_deadline(std::chrono::system_clock::now() + std::chrono::seconds(2));
    virmgrpc::VersionRequest req;
    virmgrpc::VersionReply reply;
    if (!stub->GetVersion(&ctx, req, &reply).ok()) return "";
    auto it = ctx.GetServerInitialMetadata().find(key);
    if (it == ctx.GetServerInitialMetadata().end()) return "none";
    return std::string(it->second.data(), it->second.size());
  }

  std::string dir_, config_;
  NetworkLab* lab_ = nullptr;
  std::string lease_ms_ = "2000";
  std::unique_ptr<EtcdCluster> etcd_;
  std::unique_ptr<Daemon> agent_;
  std::vector<std::string> addresses_;
  std::vector<std::unique_ptr<Daemon>> members_;
  std::shared_ptr<grpc::ChannelCredentials> credentials_ = grpc::InsecureChannelCredentials();
};

}  // namespace vipu::testing

#endif  // VIPU_TESTS_INTEGRATION_HA_MEMBERS_H_
