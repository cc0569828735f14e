// Where vipu-server keeps its state in etcd: one key per object under a
// prefix, and how each object is written as a value.
#ifndef VIPU_STORAGE_ETCD_ETCD_LAYOUT_H_
#define VIPU_STORAGE_ETCD_ETCD_LAYOUT_H_

#include <string>
#include <string_view>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "fabric/types.h"
#include "storage/store.h"

namespace vipu::storage::etcd {

// The format this binary writes under a prefix. A prefix whose format key
// holds another word, or a newer version, is refused rather than read.
inline constexpr std::string_view kFormatWord = "open-vipu-state";
inline constexpr int kFormatVersion = 1;

// The tables, each a key range under "<prefix>state/".
enum class Table { kAgents, kClusters, kAllocations, kPartitions, kUsers };

// A partition as the store keeps it: the record and whether it is shared
// with every user of its allocation (the mark goes with the partition).
struct PartitionEntry {
  fabric::Partition partition;
  bool shared = false;
};

// The key layout under one prefix. Immutable; thread-safe.
class EtcdLayout {
 public:
  // `prefix` must start and end with '/' ("/vipu/"): checked by
  // ValidatePrefix.
  explicit EtcdLayout(std::string prefix) : prefix_(std::move(prefix)) {}

  // INVALID_ARGUMENT naming the prefix unless it is 2..256 printable
  // characters starting and ending with '/'.
  static absl::Status ValidatePrefix(std::string_view prefix);

  const std::string& prefix() const { return prefix_; }
  // "<prefix>format": the format word and version, "open-vipu-state 1".
  std::string FormatKey() const { return prefix_ + "format"; }
  std::string FormatValue() const;
  // "<prefix>leader": the election of the members (etcd's Election API adds
  // one key per candidate below it).
  std::string ElectionName() const { return prefix_ + "leader"; }
  // "<prefix>commit": the token of the leader's last commit. Every commit
  // requires the token it last saw and sets a new one, so a commit whose
  // answer was lost can be found out, and none can apply after a later one.
  std::string CommitKey() const { return prefix_ + "commit"; }
  // "<prefix>handover": what a leader that stopped on purpose left the next
  // one (server/daemon/handover.h); the next leader reads and deletes it.
  std::string HandoverKey() const { return prefix_ + "handover"; }
  // "<prefix>state/": every object; "<prefix>state/generation": the last
  // generation handed out, in decimal.
  std::string StatePrefix() const { return prefix_ + "state/"; }
  std::string GenerationKey() const { return prefix_ + "state/generation"; }
  std::string Key(Table table, std::string_view id) const;
  // The table and id of a key under StatePrefix(); false for any other key
  // (the generation key included).
  bool ParseKey(std::string_view key, Table* table, std::string* id) const;

  // OK for a format value this binary reads; FAILED_PRECONDITION naming the
  // prefix when the value is another format or a newer version.
  absl::Status CheckFormat(std::string_view value) const;

 private:
  std::string prefix_;
};

// Values: protobuf messages (storage/etcd/records.proto). Decoding fails with
// DATA_LOSS naming the key when the bytes are not a record of that kind.
std::string EncodeAgent(const fabric::Agent& agent);
std::string EncodeCluster(const fabric::Cluster& cluster);
std::string EncodeAllocation(const fabric::Allocation& allocation);
std::string EncodePartition(const PartitionEntry& entry);
std::string EncodeUser(const UserRecord& user);
absl::StatusOr<fabric::Agent> DecodeAgent(std::string_view id, std::string_view bytes);
absl::StatusOr<fabric::Cluster> DecodeCluster(std::string_view id, std::string_view bytes);
absl::StatusOr<fabric::Allocation> DecodeAllocation(std::string_view id, std::string_view bytes);
absl::StatusOr<PartitionEntry> DecodePartition(std::string_view id, std::string_view bytes);
absl::StatusOr<UserRecord> DecodeUser(std::string_view id, std::string_view bytes);

}  // namespace vipu::storage::etcd

#endif  // VIPU_STORAGE_ETCD_ETCD_LAYOUT_H_
