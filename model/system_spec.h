// What the model needs to know about a pod: chip speed, memory and the
// bandwidths and latencies of its links. Built from a fabric PodSpec.
#ifndef VIPU_MODEL_SYSTEM_SPEC_H_
#define VIPU_MODEL_SYSTEM_SPEC_H_

#include <cstdint>
#include <string>
#include <string_view>

#include "absl/status/statusor.h"
#include "fabric/pods.h"
#include "fabric/types.h"

namespace vipu::model {

struct SystemSpec {
  std::string name;  // "bow-pod64", ...
  fabric::MachineType machine_type = fabric::MachineType::kM2000;
  uint32_t num_machines = 0;
  uint32_t num_ipus = 0;
  uint32_t num_ilds = 1;
  uint32_t ipus_per_ild = 0;
  fabric::IldTopology topology = fabric::IldTopology::kTorus;
  fabric::ClusterTopology cluster_topology = fabric::ClusterTopology::kLooped;

  // Chip.
  uint32_t tiles_per_ipu = 1472;
  double clock_hz = 0;            // 1.325e9 GC200, 1.85e9 Bow
  double peak_fp16_flops = 0;     // per IPU: 128 FLOP/tile/cycle
  double sram_bytes = 0;          // In-Processor-Memory per IPU
  double sram_bandwidth_bps = 0;  // bytes/s per IPU, scales with clock
  // The AMP of a tile: every amp_cycles_per_position it multiplies one
  // position's amp_input_channels inputs by an amp_input_channels x
  // amp_output_channels block of FP16 weights.
  double amp_input_channels = 16;
  double amp_output_channels = 16;
  double amp_cycles_per_position = 4;
  uint32_t worker_threads = 6;               // hardware threads sharing a tile's issue
  double exchange_bytes_per_tile_cycle = 0;  // what one tile can receive a cycle

  // Links (bytes/s are raw, per direction).
  uint32_t ipu_links_per_ipu = 10;
  double ipu_link_bps = 0;             // one IPU-Link
  double ipu_link_latency_s = 0;       // one hop incl. sync
  double gw_link_bps_per_machine = 0;  // both GW-Links of a machine
  // One network step across GW-Links: send, deliver and acknowledge.
  double gw_link_latency_s = 0;
  double host_link_bps_per_machine = 0;     // RoCE host link(s) of a machine
  double streaming_memory_bps_per_ipu = 0;  // IPU <-> gateway DDR (PCIe Gen4 x8)
  // Payload share of the raw rate once framing is paid: RoCEv2 packets on
  // 100 GbE (GW-Links, host links) and PCIe Gen4 TLPs (Streaming Memory).
  double ethernet_payload_efficiency = 0;
  double pcie_payload_efficiency = 0;
};

// The spec of a preset pod: its chip and link figures (docs/model.md).
SystemSpec SystemSpecFromPod(const fabric::PodSpec& pod);

// SystemSpecFromPod(PodPreset(name)); INVALID_ARGUMENT for unknown names.
absl::StatusOr<SystemSpec> SystemSpecForPreset(std::string_view name);

}  // namespace vipu::model

#endif  // VIPU_MODEL_SYSTEM_SPEC_H_
