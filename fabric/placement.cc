// Place: aligned IPU blocks for a partition, best fit in one ILD or one segment in each ILD.
#include "fabric/placement.h"

#include <algorithm>
#include <array>
#include <bitset>
#include <map>
#include <optional>
#include <utility>

#include "absl/status/status.h"
#include "absl/strings/str_cat.h"
#include "base/status_macros.h"
#include "fabric/validation.h"

namespace vipu::fabric {
namespace {

// An ILD has at most 64 IPUs, so one bit per topology id fits a word and every
// block test is a mask operation: placement is linear in the number of ILDs.
static_assert(kMaxIpusPerIld <= 64, "ILD bitmap is a uint64_t");

uint64_t BlockMask(uint32_t start, uint32_t size) {
  const uint64_t ones = size >= 64 ? ~uint64_t{0} : ((uint64_t{1} << size) - 1);
  return ones << start;
}

uint32_t CeilPowerOfTwo(uint32_t n) {
  uint32_t p = 1;
  while (p < n) p *= 2;
  return p;
}

int Popcount(uint64_t x) { return static_cast<int>(std::bitset<64>(x).count()); }

// How full the aligned blocks enclosing a candidate are, smallest enclosing
// block first (2x, 4x, ... up to the ILD). Larger is better: filling the most
// used neighbourhood first keeps large aligned blocks free (buddy allocation).
// Positions past the end of a non-power-of-two ILD count as used.
using Score = std::array<uint32_t, 7>;

Score ScoreBlock(uint64_t free, uint32_t start, uint32_t size, uint32_t ild_span) {
  Score score{};
  size_t level = 0;
  for (uint32_t block = size * 2; block <= ild_span; block *= 2) {
    const uint32_t enclosing = start & ~(block - 1);
    score[level++] = block - static_cast<uint32_t>(Popcount(free & BlockMask(enclosing, block)));
  }
  return score;
}

struct Candidate {
  uint32_t start = 0;
  Score score{};
};

// Best aligned free block of `size` in one ILD; ties go to the lowest offset.
std::optional<Candidate> BestInIld(uint64_t free, uint32_t size, uint32_t ipus_per_ild,
                                   uint32_t ild_span) {
  std::optional<Candidate> best;
  for (uint32_t start = 0; start + size <= ipus_per_ild; start += size) {
    const uint64_t mask = BlockMask(start, size);
    if ((free & mask) != mask) continue;
    Candidate c{start, ScoreBlock(free, start, size, ild_span)};
    if (!best || c.score > best->score) best = c;
  }
  return best;
}

std::string Where(const ClusterLayout& layout, uint32_t ild, uint32_t topology_id) {
  const IpuRef ipu = layout.IpuAt(ild, topology_id);
  return absl::StrCat("(ild ", ild, ", topology id ", topology_id, ": agent ", ipu.agent_id,
                      " IPU ", ipu.ipu, ")");
}

// Number of ILDs the partition spans and the IPUs each contributes.
struct Shape {
  uint32_t num_ilds = 1;
  uint32_t segment = 0;
};

absl::StatusOr<Shape> ShapeFor(const ClusterLayout& layout, uint32_t size, uint32_t num_ilds) {
  if (!IsPowerOfTwo(size)) {
    return absl::InvalidArgumentError(absl::StrCat("size: must be a power of two, got ", size));
  }
  const uint32_t ild_ipus = layout.ipus_per_ild();
  Shape shape;
  if (num_ilds == 0) {
    // As few ILDs as possible: the smallest power of two whose segments fit.
    while (size / shape.num_ilds > ild_ipus) shape.num_ilds *= 2;
  } else {
    if (!IsPowerOfTwo(num_ilds)) {
      return absl::InvalidArgumentError(
          absl::StrCat("num_ilds: must be a power of two, got ", num_ilds));
    }
    if (num_ilds > size) {
      return absl::InvalidArgumentError(
          absl::StrCat("num_ilds: cannot exceed the size ", size, ", got ", num_ilds));
    }
    shape.num_ilds = num_ilds;
    if (size / num_ilds > ild_ipus) {
      return absl::InvalidArgumentError(absl::StrCat(
          "num_ilds: ", num_ilds, " ILD(s) give segments of ", size / num_ilds,
          " IPUs, more than the ", ild_ipus, " IPUs of an ILD of cluster ", layout.cluster().id));
    }
  }
  RETURN_IF_ERROR(CheckIldCount(layout, size, shape.num_ilds, num_ilds != 0, "num_ilds"));
  shape.segment = size / shape.num_ilds;
  return shape;
}

std::vector<PartitionIpu> Emit(const ClusterLayout& layout, uint32_t first_ild,
                               const std::vector<uint32_t>& starts, uint32_t segment) {
  std::vector<PartitionIpu> ipus;
  ipus.reserve(starts.size() * segment);
  for (uint32_t s = 0; s < starts.size(); ++s) {
    for (uint32_t r = 0; r < segment; ++r) {
      PartitionIpu p;
      p.ild = first_ild + s;
      p.ild_routing = s;
      p.topology_id = starts[s] + r;
      p.routing_id = r;
      p.ipu = layout.IpuAt(p.ild, p.topology_id);
      ipus.push_back(std::move(p));
    }
  }
  return ipus;
}

bool Has(const std::vector<uint64_t>& masks, uint32_t ild, uint32_t topology_id) {
  return ild < masks.size() && ((masks[ild] >> topology_id) & 1) != 0;
}

absl::StatusOr<std::vector<PartitionIpu>> PlaceExplicit(const ClusterLayout& layout,
                                                        const IldMasks& masks,
                                                        const PlacementRequest& request) {
  const uint32_t size = request.size;
  if (!IsPowerOfTwo(size)) {
    return absl::InvalidArgumentError(absl::StrCat("size: must be a power of two, got ", size));
  }
  if (request.explicit_ipus.size() != size) {
    return absl::InvalidArgumentError(absl::StrCat("ipus: ", request.explicit_ipus.size(),
                                                   " IPUs listed for a partition of size ", size));
  }
  std::map<uint32_t, std::vector<uint32_t>> by_ild;
  for (const PartitionIpu& p : request.explicit_ipus) {
    if (p.ild >= layout.num_ilds() || p.topology_id >= layout.ipus_per_ild()) {
      return absl::InvalidArgumentError(
          absl::StrCat("ipus: (ild ", p.ild, ", topology id ", p.topology_id,
                       ") is outside cluster ", layout.cluster().id, " (", layout.num_ilds(),
                       " ILD(s) of ", layout.ipus_per_ild(), " IPUs)"));
    }
    by_ild[p.ild].push_back(p.topology_id);
  }
  const uint32_t num_ilds = static_cast<uint32_t>(by_ild.size());
  if (!IsPowerOfTwo(num_ilds)) {
    return absl::InvalidArgumentError(
        absl::StrCat("ipus: must span a power-of-two number of ILDs, got ", num_ilds));
  }
  if (request.num_ilds != 0 && request.num_ilds != num_ilds) {
    return absl::InvalidArgumentError(absl::StrCat(
        "num_ilds: is ", request.num_ilds, " but the listed ipus span ", num_ilds, " ILD(s)"));
  }
  const uint32_t first_ild = by_ild.begin()->first;
  if (by_ild.rbegin()->first - first_ild != num_ilds - 1) {
    return absl::InvalidArgumentError(
        absl::StrCat("ipus: the ILDs of a partition must be consecutive, got ILDs ", first_ild,
                     "..", by_ild.rbegin()->first, " for ", num_ilds, " ILDs"));
  }
  const uint32_t segment = size / num_ilds;
  std::vector<uint32_t> starts;
  for (auto& [ild, ids] : by_ild) {
    std::sort(ids.begin(), ids.end());
    const auto dup = std::adjacent_find(ids.begin(), ids.end());
    if (dup != ids.end()) {
      return absl::InvalidArgumentError(
          absl::StrCat("ipus: ", Where(layout, ild, *dup), " is listed more than once"));
    }
    if (ids.size() != segment) {
      return absl::InvalidArgumentError(
          absl::StrCat("ipus: every ILD must hold the same number of IPUs (", segment, "); ILD ",
                       ild, " holds ", ids.size()));
    }
    if (ids.front() % segment != 0 || ids.back() - ids.front() != segment - 1) {
      return absl::InvalidArgumentError(
          absl::StrCat("ipus: topology ids ", ids.front(), "..", ids.back(), " in ILD ", ild,
                       " are not an aligned block of ", segment, " (start must be a multiple of ",
                       segment, ", ids consecutive)"));
    }
    if (!starts.empty() && ids.front() != starts.front()) {
      return absl::InvalidArgumentError(absl::StrCat(
          "ipus: the segment in ILD ", ild, " starts at topology id ", ids.front(),
          ", the first at ", starts.front(),
          "; segments must sit at the same topology ids in every ILD (GW-Links join only the "
          "same machine of neighbouring ILDs)"));
    }
    starts.push_back(ids.front());
  }
  std::vector<PartitionIpu> ipus = Emit(layout, first_ild, starts, segment);
  for (const PartitionIpu& p : ipus) {
    if (!Has(masks.allowed, p.ild, p.topology_id)) {
      return absl::InvalidArgumentError(absl::StrCat("ipus: ", Where(layout, p.ild, p.topology_id),
                                                     " is outside the allocation"));
    }
  }
  for (const PartitionIpu& p : ipus) {
    if (Has(masks.used, p.ild, p.topology_id)) {
      return absl::ResourceExhaustedError(
          absl::StrCat(Where(layout, p.ild, p.topology_id), " is already in use"));
    }
  }
  return ipus;
}

}  // namespace

IldMasks MasksOf(const ClusterLayout& layout, const std::vector<bool>& allowed_machines,
                 const std::set<IpuRef>& used) {
  IldMasks masks;
  masks.allowed.assign(layout.num_ilds(), 0);
  masks.used.assign(layout.num_ilds(), 0);
  const uint32_t machines = layout.machines_per_ild();
  const size_t n = std::min<size_t>(allowed_machines.size(), layout.num_ilds() * machines);
  for (size_t i = 0; i < n; ++i) {
    if (!allowed_machines[i]) continue;
    masks.allowed[i / machines] |=
        BlockMask(static_cast<uint32_t>(i % machines) * kIpusPerMachine, kIpusPerMachine);
  }
  // `used` is ordered by agent: one sorted sweep, one search per machine.
  SortedAgentCursor cursor(layout);
  const std::string* agent = nullptr;
  std::optional<uint32_t> index;
  for (const IpuRef& ipu : used) {
    if (agent == nullptr || *agent != ipu.agent_id) {
      agent = &ipu.agent_id;
      index = cursor.Find(ipu.agent_id);
    }
    if (!index || ipu.ipu >= kIpusPerMachine) continue;
    const auto [ild, topology_id] = layout.PositionAt(*index, ipu.ipu);
    masks.used[ild] |= uint64_t{1} << topology_id;
  }
  return masks;
}

absl::StatusOr<std::vector<PartitionIpu>> Place(const ClusterLayout& layout,
                                                const std::set<std::string>& allowed_agents,
                                                const std::set<IpuRef>& used,
                                                const PlacementRequest& request) {
  std::vector<bool> allowed(layout.cluster().agent_ids.size(), false);
  for (const std::string& agent : allowed_agents) {
    if (auto index = layout.MachineIndex(agent)) allowed[*index] = true;
  }
  return Place(layout, MasksOf(layout, allowed, used), request);
}

absl::StatusOr<std::vector<PartitionIpu>> Place(const ClusterLayout& layout, const IldMasks& masks,
                                                const PlacementRequest& request) {
  if (masks.allowed.size() != layout.num_ilds() || masks.used.size() != layout.num_ilds()) {
    return absl::InvalidArgumentError(absl::StrCat("masks: need one per ILD (", layout.num_ilds(),
                                                   "), got ", masks.allowed.size(), " allowed and ",
                                                   masks.used.size(), " used"));
  }
  if (!request.explicit_ipus.empty()) return PlaceExplicit(layout, masks, request);
  ASSIGN_OR_RETURN(Shape shape, ShapeFor(layout, request.size, request.num_ilds));

  // Free IPUs per ILD: on an allowed agent and not used.
  std::vector<uint64_t> free(layout.num_ilds(), 0);
  for (uint32_t ild = 0; ild < layout.num_ilds(); ++ild) {
    free[ild] = masks.allowed[ild] & ~masks.used[ild];
  }

  const uint32_t span = CeilPowerOfTwo(layout.ipus_per_ild());
  if (shape.num_ilds == 1) {
    std::optional<uint32_t> best_ild;
    std::optional<Candidate> best;
    for (uint32_t ild = 0; ild < layout.num_ilds(); ++ild) {
      std::optional<Candidate> c = BestInIld(free[ild], shape.segment, layout.ipus_per_ild(), span);
      if (c && (!best || c->score > best->score)) {
        best = c;
        best_ild = ild;
      }
    }
    if (!best) {
      return absl::ResourceExhaustedError(absl::StrCat("no ILD of cluster ", layout.cluster().id,
                                                       " has a free aligned block of ",
                                                       request.size, " IPUs"));
    }
    return Emit(layout, *best_ild, {best->start}, shape.segment);
  }

  // Across ILDs the segments sit at the same topology ids in each of
  // num_ilds consecutive ILDs: a GW-Link joins a machine to the same machine
  // of the next ILD, so only aligned segments own the GW-Links between them.
  // The window and offset whose segments sit in the most used
  // neighbourhoods win.
  std::optional<std::pair<uint32_t, uint32_t>> best;  // (first ILD, start)
  Score best_score{};
  for (uint32_t first = 0; first + shape.num_ilds <= layout.num_ilds(); ++first) {
    for (uint32_t start = 0; start + shape.segment <= layout.ipus_per_ild();
         start += shape.segment) {
      const uint64_t mask = BlockMask(start, shape.segment);
      Score total{};
      bool fits = true;
      for (uint32_t i = 0; i < shape.num_ilds && fits; ++i) {
        const uint64_t f = free[first + i];
        if ((f & mask) != mask) {
          fits = false;
          break;
        }
        const Score score = ScoreBlock(f, start, shape.segment, span);
        for (size_t l = 0; l < total.size(); ++l) total[l] += score[l];
      }
      if (fits && (!best || total > best_score)) {
        best = std::make_pair(first, start);
        best_score = total;
      }
    }
  }
  if (!best) {
    return absl::ResourceExhaustedError(absl::StrCat(
        "no ", shape.num_ilds, " consecutive ILDs of cluster ", layout.cluster().id,
        " have a free aligned block of ", shape.segment,
        " IPUs at the same topology ids in each (GW-Links join only the same machine of "
        "neighbouring ILDs)"));
  }
  return Emit(layout, best->first, std::vector<uint32_t>(shape.num_ilds, best->second),
              shape.segment);
}

}  // namespace vipu::fabric
