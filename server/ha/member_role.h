// What a member of a highly available control plane is right now: leader or
// standby, and who leads.
#ifndef VIPU_SERVER_HA_MEMBER_ROLE_H_
#define VIPU_SERVER_HA_MEMBER_ROLE_H_

#include <optional>
#include <string>

#include "absl/base/thread_annotations.h"
#include "base/mutex.h"
#include "server/ha/member_addresses.h"

namespace vipu::server {

// Written by the member's election loop, read by every call it serves (the
// role metadata, the forwarder, metrics, the console). Thread-safe.
class MemberRole {
 public:
  explicit MemberRole(MemberAddresses self) : self_(std::move(self)) {}

  const MemberAddresses& self() const { return self_; }
  bool leader() const {
    MutexLock lock(&mu_);
    return leader_;
  }
  // The leader's addresses, this member's own while it leads; nullopt while
  // nobody is known to lead.
  std::optional<MemberAddresses> current_leader() const {
    MutexLock lock(&mu_);
    return current_;
  }
  // "leader" or "standby".
  std::string role_name() const { return leader() ? "leader" : "standby"; }
  // The leader's user address, or "none".
  std::string leader_name() const {
    std::optional<MemberAddresses> l = current_leader();
    return l ? l->user : "none";
  }

  void BecomeLeader() {
    MutexLock lock(&mu_);
    leader_ = true;
    current_ = self_;
  }
  void SetLeader(std::optional<MemberAddresses> leader) {
    MutexLock lock(&mu_);
    if (!leader_) current_ = std::move(leader);
  }

  // Why this member cannot learn from etcd who leads, in words for a
  // refusal ("etcd at http://h:p does not answer: ..."); "" while it can.
  std::string etcd_problem() const {
    MutexLock lock(&mu_);
    return etcd_problem_;
  }
  void SetEtcdProblem(std::string problem) {
    MutexLock lock(&mu_);
    etcd_problem_ = std::move(problem);
  }

 private:
  const MemberAddresses self_;
  mutable Mutex mu_;
  bool leader_ ABSL_GUARDED_BY(mu_) = false;
  std::optional<MemberAddresses> current_ ABSL_GUARDED_BY(mu_);
  std::string etcd_problem_ ABSL_GUARDED_BY(mu_);
};

}  // namespace vipu::server

#endif  // VIPU_SERVER_HA_MEMBER_ROLE_H_
