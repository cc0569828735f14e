// The names of the attributes an agent reports for its machine and for each
// IPU (vipuagent.Machine details and Ipu attributes), which the server and
// the clients read back and show as they are (`vipu list ipu-attrs`). They
// are the names a Graphcore IPU-Machine reports, so they are part of the
// wire: the agents write them and readers look them up through these
// constants only.
#ifndef VIPU_WIRE_ATTRIBUTE_NAMES_H_
#define VIPU_WIRE_ATTRIBUTE_NAMES_H_

namespace vipu::wire {

// Machine details, in the order an agent reports them.
inline constexpr char kMachinePlatform[] = "Platform";
inline constexpr char kMachineManufacturer[] = "Manufacturer";
inline constexpr char kMachineDiscoveryMode[] = "Discovery Mode";
inline constexpr char kMachineVirmVersion[] = "Virm version";
inline constexpr char kMachineRuntimeVersion[] = "Runtime version";
inline constexpr char kMachineBoardSerialNumber[] = "Board serial number";
inline constexpr char kMachinePartNumber[] = "Part number";
inline constexpr char kMachineGwswVersion[] = "GWSW Version";
inline constexpr char kMachineIpuofServerVersion[] = "IPUoF server version";
inline constexpr char kMachineHdfVersion[] = "HDF Version";
inline constexpr char kMachineHdfHash[] = "HDF Hash";
inline constexpr char kMachineNumIpus[] = "Num of IPUs";

// IPU attributes, sorted by name as an agent reports them.
inline constexpr char kIpuBoardIpuIndex[] = "board ipu index";
inline constexpr char kIpuBoardSerialNumber[] = "board serial number";
inline constexpr char kIpuBoardType[] = "board type";
inline constexpr char kIpuBoardVariant[] = "board variant";
inline constexpr char kIpuClock[] = "clock";
inline constexpr char kIpuDriverVersion[] = "driver version";
inline constexpr char kIpuFirmwareMajorVersion[] = "firmware major version";
inline constexpr char kIpuFirmwareMinorVersion[] = "firmware minor version";
inline constexpr char kIpuFirmwarePatchVersion[] = "firmware patch version";
inline constexpr char kIpuFirmwareVersion[] = "firmware version";
inline constexpr char kIpuHexoptActiveSize[] = "hexopt active size (bytes)";
inline constexpr char kIpuId[] = "id";
inline constexpr char kIpuArchitecture[] = "ipu architecture";
inline constexpr char kIpuErrorState[] = "ipu error state";
inline constexpr char kIpuLinkSpeed[] = "link speed";
inline constexpr char kIpuLinkWidth[] = "link width";
inline constexpr char kIpuNumaNode[] = "numa node";
inline constexpr char kIpuPciId[] = "pci id";
inline constexpr char kIpuRemoteBuffersSupported[] = "remote buffers supported";
inline constexpr char kIpuTarget[] = "target";

}  // namespace vipu::wire

#endif  // VIPU_WIRE_ATTRIBUTE_NAMES_H_
