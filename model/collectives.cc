// Times of ring collectives in an ILD and of the three-phase reduction across GW-Links.
#include "model/collectives.h"

#include <algorithm>
#include <cmath>

namespace vipu::model {

double RingReduceScatterSeconds(double bytes, uint32_t members, double bandwidth_bps,
                                double step_latency_s) {
  if (members <= 1 || bytes <= 0) return 0;
  const double n = members;
  return (n - 1) * step_latency_s + (n - 1) / n * bytes / bandwidth_bps;
}

double RingAllReduceSeconds(double bytes, uint32_t members, double bandwidth_bps,
                            double step_latency_s) {
  return 2 * RingReduceScatterSeconds(bytes, members, bandwidth_bps, step_latency_s);
}

ReplicaLayout LayoutFor(uint32_t replicas, uint32_t ipus_per_replica, const SystemSpec& system) {
  ReplicaLayout layout;
  layout.replicas = replicas;
  layout.ipus_per_replica = ipus_per_replica;
  const uint32_t ipus = replicas * ipus_per_replica;
  const uint32_t per_ild = std::max<uint32_t>(1, system.ipus_per_ild);
  layout.ilds = std::max<uint32_t>(1, (ipus + per_ild - 1) / per_ild);
  // Only a partition holding whole ILDs gets the wrap-around links.
  layout.torus = system.topology == fabric::IldTopology::kTorus && ipus >= per_ild;
  return layout;
}

double IntraIldRingBandwidth(const ReplicaLayout& layout, const SystemSpec& system,
                             const Calibration& cal) {
  const double per_direction = cal.links_per_hop * system.ipu_link_bps * cal.link_efficiency;
  // Replica r's IPU k sits on rung 2r + k/2, column k % 2: the k-th stage
  // groups of a column share its rail links.
  double sharing = std::max(1.0, layout.ipus_per_replica / 2.0);
  // With one IPU per replica the ring runs round the ladder's perimeter;
  // otherwise each group's ring lies in one column, and without the torus
  // wrap it must come back over the same links.
  if (layout.ipus_per_replica > 1 && !layout.torus) sharing *= 2;
  return 2 * per_direction / sharing;  // bidirectional ring pair
}

double CrossIldSyncSeconds(uint32_t ilds, const SystemSpec& system) {
  if (ilds <= 1) return 0;
  const double reach =
      system.cluster_topology == fabric::ClusterTopology::kSwitched ? 1.0 : std::ceil(ilds / 2.0);
  return 2 * reach * system.gw_link_latency_s;
}

double GwLinkPayloadBps(const SystemSpec& system) {
  return system.gw_link_bps_per_machine * system.ethernet_payload_efficiency;
}

double IntraIldRingStepSeconds(const SystemSpec& system, const Calibration& cal) {
  return cal.superstep_s + system.ipu_link_latency_s;
}

double GwRingStepSeconds(uint32_t ilds, const SystemSpec& system) {
  return system.gw_link_latency_s + CrossIldSyncSeconds(ilds, system);
}

CollectiveTime GradientReductionTime(double bytes, const ReplicaLayout& layout,
                                     const SystemSpec& system, const Calibration& cal) {
  CollectiveTime t;
  if (layout.replicas <= 1 || bytes <= 0) return t;
  const double ring_bps = IntraIldRingBandwidth(layout, system, cal);
  if (layout.ilds <= 1) {
    t.ipu_link_s = RingAllReduceSeconds(bytes, layout.replicas, ring_bps,
                                        IntraIldRingStepSeconds(system, cal));
    t.total_s = t.ipu_link_s;
    return t;
  }
  // Three phases: reduce-scatter in each ILD, all-reduce of the shards
  // across ILDs over GW-Links, all-gather in each ILD.
  const uint32_t in_ild = std::max<uint32_t>(1, layout.replicas / layout.ilds);
  const uint32_t across = std::min(layout.ilds, layout.replicas);
  t.ipu_link_s =
      2 * RingReduceScatterSeconds(bytes, in_ild, ring_bps, IntraIldRingStepSeconds(system, cal));
  // Every IPU of a machine holds one shard; the machine's GW-Links carry all.
  const double shard = bytes / in_ild;
  const double machine_bytes = shard * fabric::kIpusPerMachine;
  // The gateway, not the GW-Links' payload rate, sets the pace: its
  // calibrated throughput, never above what the links carry.
  const double gw_bps = std::min(GwLinkPayloadBps(system), cal.gw_effective_bps_per_machine);
  t.gw_link_s =
      RingAllReduceSeconds(machine_bytes, across, gw_bps, GwRingStepSeconds(layout.ilds, system));
  t.total_s = t.ipu_link_s + t.gw_link_s;
  return t;
}

}  // namespace vipu::model
