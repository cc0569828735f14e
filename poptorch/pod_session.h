// The pod's side of a PopTorch program: one application's attachment to
// the IPUs of its GCD and the steps it runs there. The Python package
// (poptorch/python/poptorch/_pod.py) speaks to it through poptorch-pod, one
// JSON request a line, so the gRPC, TLS and IPUoF attach code stays the one
// the C++ tools use (popdist/ipuof_client.h).
//
// Requests and answers (every answer has "ok"; a refusal has "code", the
// gRPC code's name, and "message", the pod's words):
//   {"op":"attach","first_ipu":F,"ipus":N,"owner":"pid 7 on host-a"}
//       attaches IPUs F..F+N-1 of the GCD the environment names
//       (IPUOF_VIPU_API_*, IPUOF_CONFIG_PATH, ~/.ipuof.conf.d/); answers
//       partition, gcd, gcd_ipus, source, machine, generation.
//   {"op":"run","steps":S,"workload":{...}}
//       S steps of a network given layer by layer on the attached IPUs;
//       answers step_time_s (a list), samples_per_sec, machines.
//   {"op":"detach"}
//       frees the IPUs; attach may follow.
//
// Thread safety: not thread-safe; one session serves one program.
#ifndef VIPU_POPTORCH_POD_SESSION_H_
#define VIPU_POPTORCH_POD_SESSION_H_

#include <memory>
#include <string>

#include "absl/status/statusor.h"
#include "nlohmann/json.hpp"
#include "popdist/device_connection.h"
#include "popdist/ipuof_client.h"
#include "vipu_agent.pb.h"

namespace vipu::poptorch {

class PodSession {
 public:
  // `env` is where the IPUoF attach settings are read (the process's, in
  // poptorch-pod).
  explicit PodSession(popdist::ipuof::Environment env);

  // One request; the answer, or the refusal with the pod's words.
  nlohmann::json Handle(const nlohmann::json& request);

 private:
  absl::StatusOr<nlohmann::json> Attach(const nlohmann::json& request);
  absl::StatusOr<nlohmann::json> Run(const nlohmann::json& request);

  popdist::ipuof::Environment env_;
  std::unique_ptr<popdist::ipuof::DeviceConnection> connection_;
  std::unique_ptr<popdist::ipuof::DeviceAttachment> attachment_;
};

// The wire form of a workload request's "workload" object; INVALID_ARGUMENT
// naming the key for a missing or malformed value.
absl::StatusOr<vipuagent::WorkloadSpec> WorkloadFromJson(const nlohmann::json& workload);

}  // namespace vipu::poptorch

#endif  // VIPU_POPTORCH_POD_SESSION_H_
