// The data plane to one attached GCD, kept open for many calls: the channel
// to the machine holding the GCD's first IPU (its IPUoF endpoint), over
// which an application attaches to its IPUs and runs its steps. A training
// loop calls Run once a step, so the channel is made once, not per call.
//
// Made by IpuofClient::Connect (popdist/ipuof_client.h). Thread safety: Run
// and Attach may be called from several threads at once. A DeviceAttachment
// is used from one thread.
#ifndef VIPU_POPDIST_DEVICE_CONNECTION_H_
#define VIPU_POPDIST_DEVICE_CONNECTION_H_

#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "absl/time/time.h"
#include "grpcpp/security/credentials.h"
#include "vipu_agent.grpc.pb.h"
#include "vipuuser.pb.h"

namespace vipu::popdist::ipuof {

struct WorkloadResult {
  std::vector<double> step_time_s;
  double samples_per_sec = 0;
  uint64_t generation = 0;             // of the partition that ran it
  std::vector<std::string> agent_ids;  // machines that ran it
  // As the machines configured the partition (IRT_*, ST_*, GRT_* values).
  virmgrpc::IpuLinkRoutingType routing = virmgrpc::IRT_UNDEFINED;
  virmgrpc::SyncType sync_type = virmgrpc::ST_UNDEFINED;
  virmgrpc::GatewayRoutingType gw_routing = virmgrpc::GRT_UNDEFINED;
};

// IPUs held by one application until this object goes: its destructor
// cancels the attach call, and the machine frees them. A process that dies
// frees them too, when its connection closes.
class DeviceAttachment {
 public:
  ~DeviceAttachment();
  DeviceAttachment(const DeviceAttachment&) = delete;
  DeviceAttachment& operator=(const DeviceAttachment&) = delete;

  uint64_t generation() const { return generation_; }

 private:
  friend class DeviceConnection;
  DeviceAttachment() = default;

  std::shared_ptr<vipuagent::Agent::Stub> stub_;  // keeps the channel open
  grpc::ClientContext context_;
  std::unique_ptr<grpc::ClientReader<vipuagent::AttachReply>> reader_;
  uint64_t generation_ = 0;
};

class DeviceConnection {
 public:
  // `address` is the machine's host:port; `credentials` how to reach it.
  DeviceConnection(const std::string& address,
                   const std::shared_ptr<grpc::ChannelCredentials>& credentials,
                   std::string partition_id, uint32_t gcd);

  const std::string& address() const { return address_; }

  // Runs `steps` steps of `workload`; errors as IpuofClient::Run's.
  absl::StatusOr<WorkloadResult> Run(const vipuagent::WorkloadSpec& workload, uint32_t steps,
                                     absl::Duration timeout) const;

  // Attaches `owner` to `ipus` of the GCD. FAILED_PRECONDITION naming the
  // holder when one is in use; NOT_FOUND when the machine does not hold the
  // partition; UNAVAILABLE when it does not answer within `timeout`.
  absl::StatusOr<std::unique_ptr<DeviceAttachment>> Attach(const std::vector<uint32_t>& ipus,
                                                           const std::string& owner,
                                                           absl::Duration timeout) const;

 private:
  std::string address_;
  std::string partition_id_;
  uint32_t gcd_ = 0;
  std::shared_ptr<vipuagent::Agent::Stub> stub_;
};

}  // namespace vipu::popdist::ipuof

#endif  // VIPU_POPDIST_DEVICE_CONNECTION_H_
