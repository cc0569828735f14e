// A partition as an agent holds it: the partition's id, the generation it
// was configured for and the IPUs of the agent's machine it holds. Agents
// report it (GetInfo, Register, heartbeats); the server reads it back.
#ifndef VIPU_FABRIC_HELD_PARTITION_H_
#define VIPU_FABRIC_HELD_PARTITION_H_

#include <cstdint>
#include <string>
#include <vector>

namespace vipu::fabric {

// A plain value; copy it freely.
struct HeldPartition {
  std::string partition_id;
  uint64_t generation = 0;
  std::vector<uint32_t> ipus;  // IPU# on the machine, sorted

  friend bool operator==(const HeldPartition& a, const HeldPartition& b) {
    return a.partition_id == b.partition_id && a.generation == b.generation && a.ipus == b.ipus;
  }
  friend bool operator!=(const HeldPartition& a, const HeldPartition& b) { return !(a == b); }
};

}  // namespace vipu::fabric

#endif  // VIPU_FABRIC_HELD_PARTITION_H_
