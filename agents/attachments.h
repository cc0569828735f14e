// Which applications are attached to which IPUs of a partition, as the
// IPUoF server of a machine keeps it: an application attaches to IPUs of a
// GCD at the machine holding the GCD's first IPU (agents/agent_service.h,
// Attach), and an IPU belongs to one application at a time. A second
// application asking for an IPU in use is refused, naming the holder, as
// Poplar is refused on a real pod.
//
// Thread safety: every method may be called from any thread.
#ifndef VIPU_AGENTS_ATTACHMENTS_H_
#define VIPU_AGENTS_ATTACHMENTS_H_

#include <cstdint>
#include <map>
#include <set>
#include <string>
#include <tuple>
#include <vector>

#include "absl/base/thread_annotations.h"
#include "absl/status/statusor.h"
#include "base/mutex.h"

namespace vipu::agents {

class Attachments {
 public:
  // Where IPUs are attached: the machine, the partition and its GCD.
  struct Place {
    std::string agent_id;
    std::string partition_id;
    uint32_t gcd = 0;
    bool operator==(const Place& o) const {
      return std::tie(agent_id, partition_id, gcd) == std::tie(o.agent_id, o.partition_id, o.gcd);
    }
  };

  // Attaches `owner` to `ipus` (1..64 distinct indices of the GCD) at
  // `place`; returns the ticket Detach takes. INVALID_ARGUMENT for no IPUs,
  // too many or a repeated one; FAILED_PRECONDITION naming the IPUs in use
  // and their holder when any of them is attached. Nothing is attached on
  // error.
  absl::StatusOr<uint64_t> Attach(const Place& place, const std::vector<uint32_t>& ipus,
                                  const std::string& owner);

  // Frees what `ticket` attached; a ticket already freed is ignored.
  void Detach(uint64_t ticket);

  // The IPUs attached at `place`, by index, with their holders.
  std::map<uint32_t, std::string> AttachedAt(const Place& place) const;

  // Frees everything attached to `partition_id` on `agent_id` (the
  // partition was reset or removed): the IPUs are free for the next program.
  void DetachPartition(const std::string& agent_id, const std::string& partition_id);

 private:
  struct Attachment {
    Place place;
    std::set<uint32_t> ipus;
    std::string owner;
  };

  mutable vipu::Mutex mu_;
  uint64_t next_ticket_ ABSL_GUARDED_BY(mu_) = 1;
  std::map<uint64_t, Attachment> by_ticket_ ABSL_GUARDED_BY(mu_);
};

}  // namespace vipu::agents

#endif  // VIPU_AGENTS_ATTACHMENTS_H_
