// Attachments: which application holds which IPUs of a partition's GCD.
#include "agents/attachments.h"

#include <utility>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"

namespace vipu::agents {
namespace {

constexpr size_t kMaxAttachedIpus = 64;

}  // namespace

absl::StatusOr<uint64_t> Attachments::Attach(const Place& place, const std::vector<uint32_t>& ipus,
                                             const std::string& owner) {
  if (ipus.empty() || ipus.size() > kMaxAttachedIpus) {
    return absl::InvalidArgumentError(
        absl::StrCat("ipus: must name 1..", kMaxAttachedIpus, " IPUs, got ", ipus.size()));
  }
  const std::set<uint32_t> wanted(ipus.begin(), ipus.end());
  if (wanted.size() != ipus.size()) {
    return absl::InvalidArgumentError(
        absl::StrCat("ipus: an IPU is named twice (", absl::StrJoin(ipus, ","), ")"));
  }
  vipu::MutexLock lock(&mu_);
  for (const auto& [ticket, held] : by_ticket_) {
    if (!(held.place == place)) continue;
    std::vector<uint32_t> busy;
    for (uint32_t ipu : wanted) {
      if (held.ipus.count(ipu) != 0) busy.push_back(ipu);
    }
    if (!busy.empty()) {
      return absl::FailedPreconditionError(
          absl::StrCat("partition ", place.partition_id, " GCD ", place.gcd, ": IPU",
                       busy.size() == 1 ? " " : "s ", absl::StrJoin(busy, ","),
                       busy.size() == 1 ? " is" : " are", " in use by ",
                       held.owner.empty() ? "another application" : held.owner));
    }
  }
  const uint64_t ticket = next_ticket_++;
  by_ticket_[ticket] = Attachment{place, wanted, owner};
  return ticket;
}

void Attachments::Detach(uint64_t ticket) {
  vipu::MutexLock lock(&mu_);
  by_ticket_.erase(ticket);
}

std::map<uint32_t, std::string> Attachments::AttachedAt(const Place& place) const {
  std::map<uint32_t, std::string> attached;
  vipu::MutexLock lock(&mu_);
  for (const auto& [ticket, held] : by_ticket_) {
    if (!(held.place == place)) continue;
    for (uint32_t ipu : held.ipus) attached[ipu] = held.owner;
  }
  return attached;
}

void Attachments::DetachPartition(const std::string& agent_id, const std::string& partition_id) {
  vipu::MutexLock lock(&mu_);
  for (auto it = by_ticket_.begin(); it != by_ticket_.end();) {
    const Place& p = it->second.place;
    it = p.agent_id == agent_id && p.partition_id == partition_id ? by_ticket_.erase(it)
                                                                  : std::next(it);
  }
}

}  // namespace vipu::agents
