// PodSession: attach, run and detach requests of a PopTorch program, answered from the pod.
#include "poptorch/pod_session.h"

#include <cmath>
#include <optional>
#include <utility>
#include <vector>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "absl/strings/str_cat.h"
#include "base/status_macros.h"

namespace vipu::poptorch {
namespace {

using nlohmann::json;

constexpr uint32_t kMaxSteps = 100000;

absl::Status Invalid(const std::string& key, const std::string& why) {
  return absl::InvalidArgumentError(absl::StrCat(key, ": ", why));
}

// A whole number in [min, max] at `key` of `object`, or `fallback` when the
// key is absent.
absl::StatusOr<uint32_t> Count(const json& object, const std::string& key, uint32_t min,
                               uint32_t max, std::optional<uint32_t> fallback = std::nullopt) {
  auto it = object.find(key);
  if (it == object.end()) {
    if (fallback) return *fallback;
    return Invalid(key, "is required");
  }
  if (!it->is_number_integer() || it->get<int64_t>() < static_cast<int64_t>(min) ||
      it->get<int64_t>() > static_cast<int64_t>(max)) {
    return Invalid(
        key, absl::StrCat("must be a whole number in ", min, "..", max, ", got ", it->dump()));
  }
  return static_cast<uint32_t>(it->get<int64_t>());
}

// A finite, non-negative number at `key`, 0 when absent.
absl::StatusOr<double> Size(const json& object, const std::string& key) {
  auto it = object.find(key);
  if (it == object.end()) return 0.0;
  if (!it->is_number() || !std::isfinite(it->get<double>()) || it->get<double>() < 0) {
    return Invalid(key, absl::StrCat("must be a finite number >= 0, got ", it->dump()));
  }
  return it->get<double>();
}

absl::StatusOr<std::string> Text(const json& object, const std::string& key) {
  auto it = object.find(key);
  if (it == object.end()) return std::string();
  if (!it->is_string()) return Invalid(key, absl::StrCat("must be a string, got ", it->dump()));
  return it->get<std::string>();
}

absl::Status AddLayer(const json& layer, size_t index, vipuagent::TracedLayer* out) {
  const std::string where = absl::StrCat("workload.layers[", index, "]");
  if (!layer.is_object()) return Invalid(where, "must be an object");
  ASSIGN_OR_RETURN(std::string name, Text(layer, "name"));
  out->set_name(name);
  auto products = layer.find("products");
  if (products != layer.end()) {
    if (!products->is_array()) return Invalid(where + ".products", "must be a list");
    for (const json& p : *products) {
      if (!p.is_array() || (p.size() != 3 && p.size() != 4)) {
        return Invalid(where + ".products",
                       absl::StrCat("each must be [m, k, n] or [m, k, n, count], got ", p.dump()));
      }
      vipuagent::TracedProduct* product = out->add_products();
      std::vector<double> v;
      for (const json& x : p) {
        if (!x.is_number() || !std::isfinite(x.get<double>()) || x.get<double>() < 0) {
          return Invalid(where + ".products",
                         absl::StrCat("sizes must be finite and >= 0, got ", p.dump()));
        }
        v.push_back(x.get<double>());
      }
      product->set_m(v[0]);
      product->set_k(v[1]);
      product->set_n(v[2]);
      product->set_count(v.size() == 4 ? v[3] : 1);
    }
  }
  ASSIGN_OR_RETURN(double elementwise, Size(layer, "elementwise_bytes"));
  ASSIGN_OR_RETURN(double ops, Size(layer, "ops"));
  ASSIGN_OR_RETURN(double params, Size(layer, "params"));
  ASSIGN_OR_RETURN(double tensors, Size(layer, "param_tensors"));
  ASSIGN_OR_RETURN(double output, Size(layer, "output_bytes"));
  out->set_elementwise_bytes(elementwise);
  out->set_ops(ops);
  out->set_params(params);
  out->set_param_tensors(tensors);
  out->set_output_bytes(output);
  return absl::OkStatus();
}

}  // namespace

absl::StatusOr<vipuagent::WorkloadSpec> WorkloadFromJson(const json& w) {
  if (!w.is_object()) return Invalid("workload", "must be an object");
  vipuagent::WorkloadSpec spec;
  spec.set_model("layers");
  ASSIGN_OR_RETURN(std::string name, Text(w, "name"));
  spec.set_network_name(name);
  auto layers = w.find("layers");
  if (layers == w.end() || !layers->is_array() || layers->empty()) {
    return Invalid("workload.layers", "must be a list of at least one layer");
  }
  for (size_t i = 0; i < layers->size(); ++i) {
    RETURN_IF_ERROR(AddLayer((*layers)[i], i, spec.add_layers()));
  }
  ASSIGN_OR_RETURN(double input, Size(w, "input_bytes_per_sample"));
  spec.set_input_bytes_per_sample(input);
  ASSIGN_OR_RETURN(uint32_t micro_batch, Count(w, "micro_batch", 1, 1u << 20));
  ASSIGN_OR_RETURN(uint32_t accumulation, Count(w, "grad_accum", 1, 1u << 20, 1));
  ASSIGN_OR_RETURN(uint32_t iterations, Count(w, "device_iterations", 1, 1u << 20, 1));
  ASSIGN_OR_RETURN(uint32_t replicas, Count(w, "replicas", 1, 65536, 1));
  ASSIGN_OR_RETURN(uint32_t ipus_per_replica, Count(w, "ipus_per_replica", 1, 64, 1));
  spec.set_micro_batch(micro_batch);
  spec.set_grad_accum(accumulation);
  spec.set_device_iterations(iterations);
  spec.set_replicas(replicas);
  spec.set_ipus_per_replica(ipus_per_replica);
  ASSIGN_OR_RETURN(std::string optimizer, Text(w, "optimizer"));
  spec.set_optimizer(optimizer);
  auto training = w.find("training");
  if (training != w.end() && !training->is_boolean()) {
    return Invalid("workload.training",
                   absl::StrCat("must be true or false, got ", training->dump()));
  }
  spec.set_inference(training != w.end() && !training->get<bool>());
  return spec;
}

PodSession::PodSession(popdist::ipuof::Environment env) : env_(std::move(env)) {}

json PodSession::Handle(const json& request) {
  absl::StatusOr<json> answer = Invalid("op", "must be attach, run or detach");
  if (!request.is_object()) {
    answer = Invalid("request", "must be a JSON object");
  } else if (request.value("op", "") == "attach") {
    answer = Attach(request);
  } else if (request.value("op", "") == "run") {
    answer = Run(request);
  } else if (request.value("op", "") == "detach") {
    attachment_.reset();
    connection_.reset();
    answer = json::object();
  }
  if (!answer.ok()) {
    return {{"ok", false},
            {"code", absl::StatusCodeToString(answer.status().code())},
            {"message", std::string(answer.status().message())}};
  }
  json reply = *std::move(answer);
  reply["ok"] = true;
  return reply;
}

absl::StatusOr<json> PodSession::Attach(const json& request) {
  if (attachment_ != nullptr) {
    return absl::FailedPreconditionError("attach: this program is already attached; detach first");
  }
  ASSIGN_OR_RETURN(uint32_t first, Count(request, "first_ipu", 0, 1023, 0));
  ASSIGN_OR_RETURN(uint32_t count, Count(request, "ipus", 1, 1024));
  ASSIGN_OR_RETURN(std::string owner, Text(request, "owner"));
  ASSIGN_OR_RETURN(popdist::ipuof::IpuofClient client, popdist::ipuof::IpuofClient::Attach(env_));
  const size_t size = client.devices().size();
  if (first + count > size) {
    return absl::FailedPreconditionError(
        absl::StrCat("partition ", client.partition_id(), " GCD ", client.gcd(), " has ", size,
                     " IPU", size == 1 ? "" : "s", "; the program needs ", count,
                     first == 0 ? "" : absl::StrCat(" from IPU ", first)));
  }
  ASSIGN_OR_RETURN(std::unique_ptr<popdist::ipuof::DeviceConnection> connection, client.Connect());
  std::vector<uint32_t> ipus;
  for (uint32_t i = first; i < first + count; ++i) ipus.push_back(i);
  ASSIGN_OR_RETURN(attachment_, connection->Attach(ipus, owner, absl::Seconds(30)));
  connection_ = std::move(connection);
  return json{{"partition", client.partition_id()},
              {"gcd", client.gcd()},
              {"gcd_ipus", size},
              {"source", client.source()},
              {"machine", connection_->address()},
              {"generation", attachment_->generation()}};
}

absl::StatusOr<json> PodSession::Run(const json& request) {
  if (attachment_ == nullptr) {
    return absl::FailedPreconditionError("run: the program is not attached to IPUs");
  }
  ASSIGN_OR_RETURN(uint32_t steps, Count(request, "steps", 1, kMaxSteps, 1));
  auto workload = request.find("workload");
  if (workload == request.end()) return Invalid("workload", "is required");
  ASSIGN_OR_RETURN(vipuagent::WorkloadSpec spec, WorkloadFromJson(*workload));
  ASSIGN_OR_RETURN(popdist::ipuof::WorkloadResult result,
                   connection_->Run(spec, steps, absl::Seconds(30)));
  return json{{"step_time_s", result.step_time_s},
              {"samples_per_sec", result.samples_per_sec},
              {"machines", result.agent_ids},
              {"generation", result.generation}};
}

}  // namespace vipu::poptorch
