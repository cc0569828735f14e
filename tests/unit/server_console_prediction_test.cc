// The console's BERT-Large figure for a partition is what `ipu-model
// predict` prints for a system of the partition's shape and the same
// workload: the console calls the model in-process, it keeps no copy.
#include <sstream>
#include <string>

#include "absl/strings/numbers.h"
#include "fabric/pods.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "model/ipu-model/predict_command.h"
#include "server/console/console_state.h"

namespace vipu::server::console {
namespace {

using ::testing::HasSubstr;

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
  ASSERT_EQ(fabric::model::RunIpuModel(sizeof argv / sizeof argv[0], argv, out, err), 0)
      << err.str();
  const double cli = NumberOf(out.str(), "step_time_s");
  const double shown = NumberOf(console, "step_time_s");
  ASSERT_GT(cli, 0) << out.str();
  EXPECT_NEAR(shown, cli, cli * 1e-5) << console;
  EXPECT_NEAR(NumberOf(console, "samples_per_sec"), NumberOf(out.str(), "samples_per_sec"),
              NumberOf(out.str(), "samples_per_sec") * 1e-5);
}

TEST(ConsolePredictionTest, SmallerPartitionsUseTheirOwnShape) {
  auto pod = fabric::PodPreset("pod16");
  ASSERT_TRUE(pod.ok());
  const fabric::Cluster cluster = fabric::PodCluster(*pod, "pod16");
  const std::string eight =
      BertLargePredictionJson(PartitionOf(8, 1), cluster, fabric::MachineType::kM2000);
  EXPECT_THAT(eight, HasSubstr("\"ipus\":8"));
  EXPECT_THAT(eight, HasSubstr("\"replicas\":2,\"ipus_per_replica\":4"));
  const std::string one =
      BertLargePredictionJson(PartitionOf(1, 1), cluster, fabric::MachineType::kM2000);
  EXPECT_THAT(one, HasSubstr("\"replicas\":1,\"ipus_per_replica\":1"));
  // Either a figure or the model's own refusal, never nothing.
  EXPECT_TRUE(one.find("\"step_time_s\":") != std::string::npos ||
              one.find("\"error\":") != std::string::npos)
      << one;
}

}  // namespace
}  // namespace vipu::server::console
