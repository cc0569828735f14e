// SystemSpec of a pod: chip speed, memory, link bandwidths and latencies; by preset name.
#include "model/system_spec.h"

#include <algorithm>

#include "base/status_macros.h"

namespace vipu::model {
namespace {

constexpr double kGc200ClockHz = 1.325e9;  // implied by 249.7 TFLOPS
constexpr double kBowClockHz = 1.85e9;
constexpr double kFp16FlopsPerTileCycle = 128;
constexpr double kSramBytes = 900e6;
// 47.5 TB/s on a GC200 is 24.4 bytes per tile per cycle; Bow keeps the
// per-cycle width and gains the clock.
constexpr double kSramBytesPerTileCycle = 47.5e12 / (1472 * kGc200ClockHz);
// The AMP's groupings (poplibs' ConvVertexType: 16 FP16 weights per conv
// unit; 16 conv units per tile with FP16 partials on the Mk2 IPU) and the
// cycles per position that give the datasheet peak: 16 x 16 MACs every 4
// cycles is 128 FLOP a cycle.
constexpr double kAmpInputChannels = 16;
constexpr double kAmpOutputChannels = 16;
constexpr double kAmpCyclesPerPosition =
    kAmpInputChannels * kAmpOutputChannels * 2 / kFp16FlopsPerTileCycle;
// Six hardware threads per tile (8832 per IPU / 1472 tiles).
constexpr uint32_t kWorkerThreads = 6;
// IPU-Exchange, 8 TB/s on a GC200: 4.1 bytes per tile per cycle, which Bow
// keeps per cycle.
constexpr double kExchangeBytesPerTileCycle = 8e12 / (1472 * kGc200ClockHz);
// 128 Gbit/s per direction per IPU-Link (PCIe Gen4 x8 class SerDes).
constexpr double kIpuLinkBps = 16e9;
// poplibs' IPU model: 15 ns per sync hop; a neighbour hop is ~2 hops each way.
constexpr double kIpuLinkLatencyS = 60e-9;
// Two 100 GbE GW-Links per machine.
constexpr double kGwLinkBpsPerMachine = 2 * 12.5e9;
// One step of a collective across a network of RDMA NICs: 9.6 us, NCCL's
// network step in its tuning tables (anchors.md, simulator targets).
constexpr double kGwLinkLatencyS = 9.6e-6;
// One 100 GbE RoCE host link per machine (the shipped default).
constexpr double kHostLinkBpsPerMachine = 12.5e9;
// PCIe Gen4 x8 between each IPU and its gateway.
constexpr double kStreamingBpsPerIpu = 16e9;
// RoCEv2 on 100 GbE with 4096-byte payloads: each packet also carries the
// Ethernet header and FCS (18), IPv4 (20), UDP (8), the InfiniBand
// transport header (12) and ICRC (4), and takes preamble and inter-frame
// gap (20) on the wire.
constexpr double kRocePayload = 4096;
constexpr double kEthernetPayloadEfficiency =
    kRocePayload / (kRocePayload + 18 + 20 + 8 + 12 + 4 + 20);
// PCIe Gen4: 128b/130b line code; 256-byte TLP payloads behind a 24-byte
// header, sequence number, LCRC and framing.
constexpr double kPciePayloadEfficiency = (128.0 / 130.0) * 256 / (256 + 24);

}  // namespace

SystemSpec SystemSpecFromPod(const fabric::PodSpec& pod) {
  SystemSpec spec;
  spec.name = pod.name;
  spec.machine_type = pod.machine_type;
  spec.num_machines = pod.num_machines;
  spec.num_ipus = pod.num_machines * fabric::kIpusPerMachine;
  spec.num_ilds = std::max<uint32_t>(1, pod.num_ilds);
  spec.ipus_per_ild = spec.num_ipus / spec.num_ilds;
  spec.topology = pod.topology;
  spec.cluster_topology = pod.cluster_topology;
  spec.clock_hz = pod.machine_type == fabric::MachineType::kBow ? kBowClockHz : kGc200ClockHz;
  spec.peak_fp16_flops = spec.tiles_per_ipu * kFp16FlopsPerTileCycle * spec.clock_hz;
  spec.sram_bytes = kSramBytes;
  spec.sram_bandwidth_bps = spec.tiles_per_ipu * kSramBytesPerTileCycle * spec.clock_hz;
  spec.amp_input_channels = kAmpInputChannels;
  spec.amp_output_channels = kAmpOutputChannels;
  spec.amp_cycles_per_position = kAmpCyclesPerPosition;
  spec.worker_threads = kWorkerThreads;
  spec.exchange_bytes_per_tile_cycle = kExchangeBytesPerTileCycle;
  spec.ipu_link_bps = kIpuLinkBps;
  spec.ipu_link_latency_s = kIpuLinkLatencyS;
  spec.gw_link_bps_per_machine = kGwLinkBpsPerMachine;
  spec.gw_link_latency_s = kGwLinkLatencyS;
  spec.host_link_bps_per_machine = kHostLinkBpsPerMachine;
  spec.streaming_memory_bps_per_ipu = kStreamingBpsPerIpu;
  spec.ethernet_payload_efficiency = kEthernetPayloadEfficiency;
  spec.pcie_payload_efficiency = kPciePayloadEfficiency;
  return spec;
}

absl::StatusOr<SystemSpec> SystemSpecForPreset(std::string_view name) {
  ASSIGN_OR_RETURN(fabric::PodSpec pod, fabric::PodPreset(name));
  return SystemSpecFromPod(pod);
}

}  // namespace vipu::model
