// poptorch-pod's requests: a workload in JSON becomes the wire's layers
// exactly; each malformed key is refused naming it; a session refuses what
// needs an attachment before it has one, and an unknown request.
#include "poptorch/pod_session.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <string>

namespace vipu::poptorch {
namespace {

using nlohmann::json;
using ::testing::HasSubstr;

json Mlp() {
  return json::parse(R"({"name":"mlp","micro_batch":8,"grad_accum":2,"device_iterations":3,
    "replicas":4,"ipus_per_replica":1,"optimizer":"adam","training":false,
    "input_bytes_per_sample":3136,
    "layers":[{"name":"fc1","products":[[1,784,256],[1,256,10,2]],"params":200960,
               "param_tensors":2,"elementwise_bytes":2048,"ops":2,"output_bytes":512}]})");
}

TEST(PodSessionTest, AWorkloadBecomesTheWiresLayers) {
  absl::StatusOr<vipuagent::WorkloadSpec> spec = WorkloadFromJson(Mlp());
  ASSERT_TRUE(spec.ok()) << spec.status();
  EXPECT_EQ(spec->model(), "layers");
  EXPECT_EQ(spec->network_name(), "mlp");
  EXPECT_EQ(spec->micro_batch(), 8u);
  EXPECT_EQ(spec->grad_accum(), 2u);
  EXPECT_EQ(spec->device_iterations(), 3u);
  EXPECT_EQ(spec->replicas(), 4u);
  EXPECT_EQ(spec->optimizer(), "adam");
  EXPECT_TRUE(spec->inference());
  EXPECT_EQ(spec->input_bytes_per_sample(), 3136);
  ASSERT_EQ(spec->layers_size(), 1);
  const vipuagent::TracedLayer& fc = spec->layers(0);
  EXPECT_EQ(fc.name(), "fc1");
  ASSERT_EQ(fc.products_size(), 2);
  EXPECT_EQ(fc.products(0).k(), 784);
  EXPECT_EQ(fc.products(0).count(), 1);
  EXPECT_EQ(fc.products(1).count(), 2);
  EXPECT_EQ(fc.params(), 200960);
  EXPECT_EQ(fc.output_bytes(), 512);
}

TEST(PodSessionTest, EachMalformedKeyIsRefusedNamingIt) {
  const struct {
    const char* path;  // a JSON pointer into the workload
    json value;
    const char* named;
  } cases[] = {
      {"/micro_batch", 0, "micro_batch"},
      {"/micro_batch", "8", "micro_batch"},
      {"/grad_accum", -1, "grad_accum"},
      {"/replicas", 70000, "replicas"},
      {"/ipus_per_replica", 65, "ipus_per_replica"},
      {"/optimizer", 3, "optimizer"},
      {"/training", "yes", "workload.training"},
      {"/input_bytes_per_sample", -1, "input_bytes_per_sample"},
      {"/layers", json::array(), "workload.layers"},
      {"/layers/0", 5, "workload.layers[0]"},
      {"/layers/0/products", 5, "workload.layers[0].products"},
      {"/layers/0/products/0", json::array({1, 2}), "workload.layers[0].products"},
      {"/layers/0/products/0/1", -784, "workload.layers[0].products"},
      {"/layers/0/params", "many", "params"},
      {"/layers/0/name", 1, "name"},
  };
  for (const auto& c : cases) {
    json w = Mlp();
    w[json::json_pointer(c.path)] = c.value;
    absl::StatusOr<vipuagent::WorkloadSpec> spec = WorkloadFromJson(w);
    ASSERT_FALSE(spec.ok()) << c.path;
    EXPECT_TRUE(absl::IsInvalidArgument(spec.status())) << c.path;
    EXPECT_THAT(spec.status().message(), HasSubstr(c.named)) << c.path;
  }
  json w = Mlp();
  w.erase("micro_batch");
  EXPECT_THAT(WorkloadFromJson(w).status().message(), HasSubstr("micro_batch: is required"));
  EXPECT_FALSE(WorkloadFromJson(json::array()).ok());
}

TEST(PodSessionTest, ASessionRefusesWhatNeedsAnAttachmentAndUnknownRequests) {
  PodSession session({});
  json run = session.Handle({{"op", "run"}, {"steps", 1}, {"workload", Mlp()}});
  EXPECT_EQ(run["ok"], false);
  EXPECT_EQ(run["code"], "FAILED_PRECONDITION");
  EXPECT_THAT(run["message"].get<std::string>(), HasSubstr("not attached"));
  json unknown = session.Handle({{"op", "compile"}});
  EXPECT_EQ(unknown["code"], "INVALID_ARGUMENT");
  EXPECT_THAT(unknown["message"].get<std::string>(), HasSubstr("op:"));
  EXPECT_EQ(session.Handle(json::array())["code"], "INVALID_ARGUMENT");
  // With nothing in the environment there is no GCD to attach to.
  json attach = session.Handle({{"op", "attach"}, {"ipus", 1}});
  EXPECT_EQ(attach["ok"], false);
  EXPECT_EQ(attach["code"], "FAILED_PRECONDITION") << attach.dump();
  json bad = session.Handle({{"op", "attach"}, {"ipus", 0}});
  EXPECT_EQ(bad["code"], "INVALID_ARGUMENT");
  EXPECT_THAT(bad["message"].get<std::string>(), HasSubstr("ipus"));
  EXPECT_EQ(session.Handle({{"op", "detach"}})["ok"], true);
}

}  // namespace
}  // namespace vipu::poptorch
