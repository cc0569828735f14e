// Time of the collectives a data-parallel step needs: ring reduce-scatter /
// all-gather / all-reduce over IPU-Links, and the three-phase form that
// crosses GW-Links when a group spans several IPU-Link domains.
#ifndef VIPU_MODEL_COLLECTIVES_H_
#define VIPU_MODEL_COLLECTIVES_H_

#include <cstdint>

#include "model/calibration.h"
#include "model/system_spec.h"

namespace vipu::model {

// A ring of `members` IPUs moving `bytes` in total: (n-1) steps of
// bytes/n each way.
double RingReduceScatterSeconds(double bytes, uint32_t members, double bandwidth_bps,
                                double step_latency_s);
// Reduce-scatter then all-gather.
double RingAllReduceSeconds(double bytes, uint32_t members, double bandwidth_bps,
                            double step_latency_s);

// Where the replicas of one partition sit.
struct ReplicaLayout {
  uint32_t replicas = 1;
  uint32_t ipus_per_replica = 1;
  uint32_t ilds = 1;   // IPU-Link domains the partition spans
  bool torus = false;  // the partition's ILD ring closes (a whole torus ILD)
};

ReplicaLayout LayoutFor(uint32_t replicas, uint32_t ipus_per_replica, const SystemSpec& system);

// Effective ring bandwidth for one group of same-stage IPUs: a
// bidirectional ring pair over the rail links, shared with the other
// stage groups that run on the same ladder column at the same time.
double IntraIldRingBandwidth(const ReplicaLayout& layout, const SystemSpec& system,
                             const Calibration& cal);

// A sync of IPUs in `ilds` IPU-Link domains, which crosses GW-Links: a
// gather to one ILD and the release back, each a GW network step per ILD
// it passes. Looped GW-Links join the ILDs in a ring, so the farthest is
// ilds/2 steps away; switched GW-Links reach every ILD in one step through
// the switch. 0 within one ILD, where the Sync-Links' hardware signal is
// far below the model's resolution.
double CrossIldSyncSeconds(uint32_t ilds, const SystemSpec& system);

// What a machine's two GW-Links can carry of RoCEv2 payload, bytes/s per
// direction: the ceiling of the gateway's effective throughput.
double GwLinkPayloadBps(const SystemSpec& system);

// One step of a ring collective inside an ILD: a compute set (its sync,
// exchange set-up and launch) plus an IPU-Link hop.
double IntraIldRingStepSeconds(const SystemSpec& system, const Calibration& cal);

// One step of the ring across ILDs: a GW network step, then the sync of
// every IPU taking part, which GCL's syncful collectives need before the
// next step.
double GwRingStepSeconds(uint32_t ilds, const SystemSpec& system);

struct CollectiveTime {
  double total_s = 0;
  double ipu_link_s = 0;  // reduce-scatter + all-gather inside ILDs
  double gw_link_s = 0;   // cross-ILD all-reduce of the shards
};

// Gradient reduction of `bytes` per IPU across the replicas of one stage:
// all-reduce, or reduce-scatter + all-gather around a sharded update (the
// same traffic). Three-phase when the partition spans ILDs; the GW-Link
// phase moves at the gateway's effective throughput (Calibration).
CollectiveTime GradientReductionTime(double bytes, const ReplicaLayout& layout,
                                     const SystemSpec& system, const Calibration& cal);

}  // namespace vipu::model

#endif  // VIPU_MODEL_COLLECTIVES_H_
