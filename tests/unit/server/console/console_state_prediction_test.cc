// The console's BERT-Large figure for a partition is what `ipu-model
// predict` prints for a system of the partition's shape and the same
// workload: the console calls the model in-process, it keeps no copy. The
// memory count comes with it, and a layout that does not fit gets
// `ipu-model predict`'s refusal in place of a throughput.
#include <sstream>
#include <string>

#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "fabric/pods.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "model/ipu-model/predict_command.h"
#include "server/console/console_state.h"

namespace vipu::server {
namespace {

using ::testing::HasSubstr;
using ::testing::Not;
using ::testing::StartsWith;

// The number after "key": in `json`; -1 when absent.
double NumberOf(const std::string& json, const std::string& key) {
  const std::string marker = "\"" + key + "\":";
  const size_t at = json.find(marker);
  if (at == std::string::npos) return -1;
  const size_t from = at + marker.size();
  double value = -1;
  if (!absl::SimpleAtod(json.substr(from, json.find_first_of(",}", from) - from), &value)) {
    return -1;
  }
  return value;
}

fabric::Partition PartitionOf(uint32_t size, uint32_t num_ilds) {
  fabric::Partition p;
  p.id = "p";
  p.num_ilds = num_ilds;
  p.ipus.resize(size);
  return p;
}

TEST(ConsolePredictionTest, MatchesIpuModelPredictForAWholePod) {
  auto pod = fabric::PodPreset("pod16");
  ASSERT_TRUE(pod.ok());
  const fabric::Cluster cluster = fabric::PodCluster(*pod, "pod16");
  const std::string console =
      BertLargePredictionJson(PartitionOf(16, 1), cluster, fabric::MachineType::kM2000);
  EXPECT_THAT(console, HasSubstr("\"replicas\":4,\"ipus_per_replica\":4"));

  const char* argv[] = {"ipu-model",
                        "predict",
                        "--model",
                        "bert-large",
                        "--system",
                        "pod16",
                        "--micro-batch",
                        "8",
                        "--grad-accum",
                        "512",
                        "--replicas",
                        "4",
                        "--ipus-per-replica",
                        "4",
                        "--layers-per-ipu",
                        "3,7,7,7",
                        "--optimizer",
                        "lamb",
                        "--rts",
                        "--offchip-optimizer-state",
                        "--json"};
  std::ostringstream out, err;
  ASSERT_EQ(model::RunIpuModel(sizeof argv / sizeof argv[0], argv, out, err), 0) << err.str();
  const double cli = NumberOf(out.str(), "step_time_s");
  const double shown = NumberOf(console, "step_time_s");
  ASSERT_GT(cli, 0) << out.str();
  EXPECT_NEAR(shown, cli, cli * 1e-5) << console;
  EXPECT_NEAR(NumberOf(console, "samples_per_sec"), NumberOf(out.str(), "samples_per_sec"),
              NumberOf(out.str(), "samples_per_sec") * 1e-5);

  // The fullest IPU and its count, as ipu-model's memory object has them.
  EXPECT_THAT(console, HasSubstr("\"memory\":{\"fits\":true,\"fullest_ipu\":1,"));
  EXPECT_EQ(NumberOf(console, "capacity_bytes"), NumberOf(out.str(), "capacity_bytes"));
  const size_t fullest = out.str().find("{\"ipu\":1,", out.str().find("\"memory\":"));
  ASSERT_NE(fullest, std::string::npos) << out.str();
  const double needed = NumberOf(out.str().substr(fullest), "total_bytes");
  EXPECT_GT(needed, 0);
  EXPECT_NEAR(NumberOf(console, "needed_bytes"), needed, 0.5);
  EXPECT_LT(needed, NumberOf(console, "capacity_bytes"));
  EXPECT_THAT(console, Not(HasSubstr("\"error\"")));
}

TEST(ConsolePredictionTest, SmallerPartitionsUseTheirOwnShape) {
  auto pod = fabric::PodPreset("pod16");
  ASSERT_TRUE(pod.ok());
  const fabric::Cluster cluster = fabric::PodCluster(*pod, "pod16");
  const std::string eight =
      BertLargePredictionJson(PartitionOf(8, 1), cluster, fabric::MachineType::kM2000);
  EXPECT_THAT(eight, HasSubstr("\"ipus\":8"));
  EXPECT_THAT(eight, HasSubstr("\"replicas\":2,\"ipus_per_replica\":4"));
  EXPECT_THAT(eight, HasSubstr("\"fits\":true"));
  EXPECT_THAT(eight, HasSubstr("\"step_time_s\":"));
}

// BERT-Large whole on one IPU cannot be loaded: no throughput, the
// refusal `ipu-model predict` prints for the same workload instead.
TEST(ConsolePredictionTest, ALayoutThatDoesNotFitIsRefusedAsIpuModelRefusesIt) {
  auto pod = fabric::PodPreset("pod16");
  ASSERT_TRUE(pod.ok());
  const fabric::Cluster cluster = fabric::PodCluster(*pod, "pod16");
  const std::string one =
      BertLargePredictionJson(PartitionOf(1, 1), cluster, fabric::MachineType::kM2000);
  EXPECT_THAT(one, HasSubstr("\"replicas\":1,\"ipus_per_replica\":1"));
  EXPECT_THAT(one, HasSubstr("\"memory\":{\"fits\":false,\"fullest_ipu\":0,"));
  EXPECT_GT(NumberOf(one, "needed_bytes"), NumberOf(one, "capacity_bytes"));
  EXPECT_EQ(NumberOf(one, "capacity_bytes"), 900e6);
  for (const char* key : {"step_time_s", "samples_per_sec", "tokens_per_sec"}) {
    EXPECT_THAT(one, Not(HasSubstr(absl::StrCat("\"", key, "\":")))) << key;
  }

  const char* argv[] = {"ipu-model",
                        "predict",
                        "--model",
                        "bert-large",
                        "--system",
                        "pod16",
                        "--micro-batch",
                        "8",
                        "--grad-accum",
                        "512",
                        "--optimizer",
                        "lamb",
                        "--rts",
                        "--offchip-optimizer-state",
                        "--ipus-per-replica",
                        "1"};
  std::ostringstream out, err;
  ASSERT_EQ(model::RunIpuModel(sizeof argv / sizeof argv[0], argv, out, err), 2) << out.str();
  std::string refusal = err.str();
  ASSERT_THAT(refusal, StartsWith("ipu-model: memory: IPU 0 needs at least "));
  refusal = refusal.substr(std::string("ipu-model: ").size());
  refusal.pop_back();  // the newline
  EXPECT_THAT(one, HasSubstr(absl::StrCat("\"error\":\"", refusal, "\"")));
}

}  // namespace
}  // namespace vipu::server
