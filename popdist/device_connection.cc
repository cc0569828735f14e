// DeviceConnection: the kept channel to a GCD's first machine, its attach call and its runs.
#include "popdist/device_connection.h"

#include <grpcpp/grpcpp.h>

#include <future>
#include <utility>

#include "absl/strings/str_cat.h"
#include "wire/status.h"

namespace vipu::popdist::ipuof {

DeviceAttachment::~DeviceAttachment() {
  context_.TryCancel();
  if (reader_ != nullptr) reader_->Finish().ok();
}

DeviceConnection::DeviceConnection(const std::string& address,
                                   const std::shared_ptr<grpc::ChannelCredentials>& credentials,
                                   std::string partition_id, uint32_t gcd)
    : address_(address),
      partition_id_(std::move(partition_id)),
      gcd_(gcd),
      stub_(vipuagent::Agent::NewStub(grpc::CreateChannel(address, credentials))) {}

absl::StatusOr<WorkloadResult> DeviceConnection::Run(const vipuagent::WorkloadSpec& workload,
                                                     uint32_t steps, absl::Duration timeout) const {
  grpc::ClientContext ctx;
  ctx.set_deadline(absl::ToChronoTime(absl::Now() + timeout));
  vipuagent::RunWorkloadRequest request;
  // The data plane addresses a machine by its endpoint, not by agent id.
  request.set_partition_id(partition_id_);
  *request.mutable_workload() = workload;
  request.set_steps(steps);
  vipuagent::RunWorkloadReply reply;
  grpc::Status s = stub_->RunWorkload(&ctx, request, &reply);
  if (!s.ok()) return wire::FromGrpc(s);
  if (static_cast<uint32_t>(reply.step_time_s_size()) != steps) {
    return absl::DataLossError(absl::StrCat("RunWorkload: the machine at ", address_, " answered ",
                                            reply.step_time_s_size(), " step times for ", steps,
                                            " steps"));
  }
  WorkloadResult result;
  result.step_time_s.assign(reply.step_time_s().begin(), reply.step_time_s().end());
  result.samples_per_sec = reply.samples_per_sec();
  result.generation = reply.generation();
  result.agent_ids.assign(reply.agent_ids().begin(), reply.agent_ids().end());
  result.routing = reply.ipulink_routing_type();
  result.sync_type = reply.sync_type();
  result.gw_routing = reply.gw_routing_type();
  return result;
}

absl::StatusOr<std::unique_ptr<DeviceAttachment>> DeviceConnection::Attach(
    const std::vector<uint32_t>& ipus, const std::string& owner, absl::Duration timeout) const {
  vipuagent::AttachRequest request;
  request.set_partition_id(partition_id_);
  request.set_gcd(gcd_);
  for (uint32_t ipu : ipus) request.add_ipus(ipu);
  request.set_owner(owner);
  std::unique_ptr<DeviceAttachment> attachment(new DeviceAttachment());
  attachment->stub_ = stub_;
  attachment->reader_ = stub_->Attach(&attachment->context_, request);
  // The call stays open while attached, so it has no deadline of its own:
  // the first answer is awaited here, and the call cancelled if it is late.
  vipuagent::AttachReply reply;
  std::future<bool> first =
      std::async(std::launch::async, [&] { return attachment->reader_->Read(&reply); });
  if (first.wait_for(absl::ToChronoSeconds(timeout)) != std::future_status::ready) {
    attachment->context_.TryCancel();
    first.wait();
    attachment->reader_->Finish().ok();
    attachment->reader_.reset();
    return absl::UnavailableError(absl::StrCat("attach: the machine at ", address_,
                                               " did not answer within ",
                                               absl::FormatDuration(timeout)));
  }
  if (!first.get()) {
    grpc::Status refused = attachment->reader_->Finish();
    attachment->reader_.reset();
    if (refused.ok()) {
      return absl::UnavailableError(
          absl::StrCat("attach: the machine at ", address_, " ended the call without an answer"));
    }
    return wire::FromGrpc(refused);
  }
  attachment->generation_ = reply.generation();
  return attachment;
}

}  // namespace vipu::popdist::ipuof
