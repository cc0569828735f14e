// `ipu-model predict` end to end through RunIpuModel: output shapes and
// exit code 2 with a one-line error for every invalid flag value.
#include "model/ipu-model/predict_command.h"

#include <algorithm>
#include <ostream>
#include <sstream>
#include <string>
#include <vector>

#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "nlohmann/json.hpp"

namespace vipu::model {
namespace {

using ::testing::HasSubstr;
using ::testing::Not;
using ::testing::StartsWith;

struct Result {
  int code = -1;
  std::string out;
  std::string err;
};

Result RunCli(std::vector<std::string> args) {
  args.insert(args.begin(), "ipu-model");
  std::vector<const char*> argv;
  for (const std::string& a : args) argv.push_back(a.c_str());
  std::ostringstream out, err;
  Result r;
  r.code = RunIpuModel(static_cast<int>(argv.size()), argv.data(), out, err);
  r.out = out.str();
  r.err = err.str();
  return r;
}

const std::vector<std::string> kBertLargePod64 = {"predict",
                                                  "--model",
                                                  "bert-large",
                                                  "--system",
                                                  "bow-pod64",
                                                  "--micro-batch",
                                                  "8",
                                                  "--grad-accum",
                                                  "512",
                                                  "--replicas",
                                                  "16",
                                                  "--ipus-per-replica",
                                                  "4",
                                                  "--layers-per-ipu",
                                                  "3,7,7,7",
                                                  "--optimizer",
                                                  "lamb",
                                                  "--rts",
                                                  "--offchip-optimizer-state",
                                                  "--json"};

TEST(ModelPredictCommandTest, JsonHasTheAdvertisedFields) {
  const Result r = RunCli(kBertLargePod64);
  ASSERT_EQ(r.code, kExitOk) << r.err;
  EXPECT_EQ(r.err, "");
  const nlohmann::json j = nlohmann::json::parse(r.out);
  for (const char* key : {"step_time_s", "samples_per_sec", "sequences_per_sec", "tokens_per_sec",
                          "samples_per_step", "layers_per_ipu", "beat_s", "collectives_s",
                          "weight_update_s", "host_io_s", "communication_fraction", "stages"}) {
    EXPECT_TRUE(j.contains(key)) << key;
  }
  EXPECT_EQ(j["samples_per_step"], 65536);
  EXPECT_EQ(j["layers_per_ipu"], nlohmann::json::array({3, 7, 7, 7}));
  EXPECT_FALSE(j["layers_auto_balanced"].get<bool>());
  ASSERT_EQ(j["stages"].size(), 4u);
  for (const auto& stage : j["stages"]) {
    for (const char* key :
         {"ipu", "layers", "compute_s", "exchange_s", "collectives_s", "weight_update_s", "host_s",
          "idle_s", "matmul_s", "attention_s", "elementwise_s"}) {
      EXPECT_TRUE(stage.contains(key)) << key;
    }
    EXPECT_GT(stage["compute_s"].get<double>(), 0);
  }
  EXPECT_NEAR(j["samples_per_sec"].get<double>() * j["step_time_s"].get<double>(), 65536, 1e-3);
}

TEST(ModelPredictCommandTest, JsonSaysWhatMemoryEachIpuNeeds) {
  const Result r = RunCli(kBertLargePod64);
  ASSERT_EQ(r.code, kExitOk) << r.err;
  const nlohmann::json memory = nlohmann::json::parse(r.out)["memory"];
  EXPECT_TRUE(memory["fits"].get<bool>());
  EXPECT_EQ(memory["capacity_bytes"].get<double>(), 900e6);
  EXPECT_THAT(memory["not_counted"].get<std::string>(), HasSubstr("code"));
  ASSERT_EQ(memory["ipus"].size(), 4u);
  for (const auto& ipu : memory["ipus"]) {
    const double sum = ipu["weights_bytes"].get<double>() + ipu["gradients_bytes"].get<double>() +
                       ipu["optimizer_bytes"].get<double>() +
                       ipu["activations_bytes"].get<double>();
    EXPECT_NEAR(ipu["total_bytes"].get<double>(), sum, 1);
    EXPECT_LE(sum, 900e6);
    // Off chip: no optimizer state on the IPUs.
    EXPECT_EQ(ipu["optimizer_bytes"].get<double>(), 0);
  }
}

// A whole BERT-Large on one IPU: its weights and gradients alone are more
// than the IPU holds, so no step time is given.
TEST(ModelPredictCommandTest, ALayoutThatCannotFitIsRefusedNamingTheIpu) {
  const Result r =
      RunCli({"predict", "--model", "bert-large", "--system", "pod64", "--ipus-per-replica", "1"});
  EXPECT_EQ(r.code, kExitUsage);
  EXPECT_EQ(r.out, "");
  EXPECT_THAT(r.err, StartsWith("ipu-model: memory: IPU 0 needs at least "));
  EXPECT_THAT(r.err, HasSubstr(" MB, more than its 900.0 MB (weights "));
  EXPECT_EQ(r.err.find('\n'), r.err.size() - 1) << r.err;
}

// What a run does not give comes from the model's published configuration,
// and the output names it; what it gives is its own. A model with no
// published configuration says so.
TEST(ModelPredictCommandTest, UngivenOptionsTakeThePublishedConfigurationAndSaySo) {
  Result r = RunCli({"predict", "--model", "bert-large", "--system", "pod64", "--json"});
  ASSERT_EQ(r.code, kExitOk) << r.err;
  nlohmann::json j = nlohmann::json::parse(r.out);
  EXPECT_EQ(j["workload"]["micro_batch"], 8);
  EXPECT_EQ(j["workload"]["ipus_per_replica"], 4);
  EXPECT_EQ(j["layers_per_ipu"], nlohmann::json::parse("[3,7,7,7]"));
  EXPECT_EQ(j["workload"]["optimizer"], "lamb");
  EXPECT_TRUE(j["workload"]["optimizer_state_offchip"].get<bool>());
  EXPECT_EQ(j["workload"]["optimizer_state_precision"], "fp32");
  EXPECT_TRUE(j["workload"]["replicated_tensor_sharding"].get<bool>());
  EXPECT_THAT(j["assumed"].get<std::string>(), HasSubstr("`pretrain_large_128`"));
  EXPECT_THAT(j["assumed"].get<std::string>(), HasSubstr("micro-batch 8, 4 IPUs a replica"));

  r = RunCli({"predict", "--model", "bert-large", "--system", "pod64", "--micro-batch", "4",
              "--onchip-optimizer-state", "--no-rts", "--optimizer-state-precision", "fp16",
              "--json"});
  ASSERT_EQ(r.code, kExitOk) << r.err;
  j = nlohmann::json::parse(r.out);
  EXPECT_EQ(j["workload"]["micro_batch"], 4);
  EXPECT_FALSE(j["workload"]["optimizer_state_offchip"].get<bool>());
  EXPECT_FALSE(j["workload"]["replicated_tensor_sharding"].get<bool>());
  EXPECT_EQ(j["workload"]["optimizer_state_precision"], "fp16");
  EXPECT_THAT(j["assumed"].get<std::string>(), Not(HasSubstr("micro-batch")));
  EXPECT_THAT(j["assumed"].get<std::string>(), Not(HasSubstr("RTS")));

  r = RunCli({"predict", "--model", "bert-large", "--system", "pod64"});
  ASSERT_EQ(r.code, kExitOk) << r.err;
  EXPECT_THAT(r.out, HasSubstr("\nassumed        Graphcore's `pretrain_large_128`"));

  r = RunCli({"predict", "--model", "gpt2-small", "--system", "pod16", "--ipus-per-replica", "4"});
  ASSERT_EQ(r.code, kExitOk) << r.err;
  EXPECT_THAT(r.out, HasSubstr("assumed        no published configuration for gpt2-small"));
}

// Half layers place attention and FFN blocks apart, as Graphcore's MLPerf
// BERT does; they are shown as halves.
TEST(ModelPredictCommandTest, HalfLayersSplitAttentionAndFfn) {
  const Result r =
      RunCli({"predict", "--model", "bert-large", "--system", "bow-pod16", "--replicas", "2",
              "--ipus-per-replica", "8", "--micro-batch", "3", "--grad-accum", "256", "--seq-len",
              "512", "--packing", "2", "--layers-per-ipu", "0.5,3,3.5,3,3.5,3.5,3.5,3.5"});
  ASSERT_EQ(r.code, kExitOk) << r.err;
  EXPECT_THAT(r.out, HasSubstr("layers per IPU: 0.5,3,3.5,3,3.5,3.5,3.5,3.5 (given, attention and "
                               "FFN apart)"));
}

// The help says each option's default and why.
TEST(ModelPredictCommandTest, HelpGivesEachDefaultAndWhy) {
  const Result r = RunCli({"predict", "--help"});
  ASSERT_EQ(r.code, kExitOk);
  for (const char* flag :
       {"--micro-batch", "--ipus-per-replica", "--layers-per-ipu", "--optimizer",
        "--offchip-optimizer-state", "--onchip-optimizer-state", "--optimizer-state-precision",
        "--rts", "--no-rts", "--recompute", "--no-recompute"}) {
    EXPECT_THAT(r.out, HasSubstr(flag));
  }
  EXPECT_THAT(r.out, HasSubstr("published configuration"));
  EXPECT_THAT(r.out, HasSubstr("default fp32"));
}

TEST(ModelPredictCommandTest, PackingMultipliesSequences) {
  std::vector<std::string> args = kBertLargePod64;
  args.insert(args.end(), {"--packing", "2"});
  const Result r = RunCli(args);
  ASSERT_EQ(r.code, kExitOk) << r.err;
  const nlohmann::json j = nlohmann::json::parse(r.out);
  // The JSON carries nine significant digits of each.
  EXPECT_NEAR(j["sequences_per_sec"].get<double>(), 2 * j["samples_per_sec"].get<double>(),
              1e-8 * j["sequences_per_sec"].get<double>());
}

TEST(ModelPredictCommandTest, TextSummaryIsReadable) {
  const Result r =
      RunCli({"predict", "--model", "bert-base", "--system", "bow-pod4", "--micro-batch", "32",
              "--grad-accum", "2048", "--ipus-per-replica", "4"});
  ASSERT_EQ(r.code, kExitOk) << r.err;
  EXPECT_THAT(r.out, StartsWith("bert-base on bow-pod4: 1 replica x 4 IPUs"));
  EXPECT_THAT(r.out, HasSubstr("step time"));
  EXPECT_THAT(r.out, HasSubstr("samples/s"));
  EXPECT_THAT(r.out, HasSubstr("(balanced)"));
  EXPECT_THAT(r.out, HasSubstr("embedding, mlm+nsp heads"));
  EXPECT_THAT(r.out, HasSubstr("memory         IPU "));
  EXPECT_THAT(r.out, HasSubstr("must hold what is not counted:\n"));
}

TEST(ModelPredictCommandTest, CustomTransformerAndConvNet) {
  Result r = RunCli({"predict",
                     "--model",
                     "transformer",
                     "--hidden",
                     "512",
                     "--layers",
                     "8",
                     "--heads",
                     "8",
                     "--vocab",
                     "32000",
                     "--decoder",
                     "--seq-len",
                     "256",
                     "--system",
                     "pod16",
                     "--ipus-per-replica",
                     "2",
                     "--replicas",
                     "8",
                     "--json"});
  ASSERT_EQ(r.code, kExitOk) << r.err;
  nlohmann::json j = nlohmann::json::parse(r.out);
  EXPECT_EQ(j["workload"]["decoder"], true);
  EXPECT_EQ(j["workload"]["hidden"], 512);
  r = RunCli({"predict", "--model", "resnet50", "--system", "bow-pod16", "--micro-batch", "16",
              "--grad-accum", "64", "--replicas", "16", "--json"});
  ASSERT_EQ(r.code, kExitOk) << r.err;
  j = nlohmann::json::parse(r.out);
  EXPECT_EQ(j["workload"]["family"], "convnet");
  EXPECT_EQ(j["tokens_per_sec"], 0);
}

TEST(ModelPredictCommandTest, RepeatReportsPredictionTime) {
  std::vector<std::string> args = kBertLargePod64;
  args.insert(args.end(), {"--repeat", "10"});
  const Result r = RunCli(args);
  ASSERT_EQ(r.code, kExitOk) << r.err;
  const nlohmann::json j = nlohmann::json::parse(r.out);
  EXPECT_EQ(j["repeat"], 10);
  EXPECT_GT(j["mean_prediction_time_us"].get<double>(), 0);
}

TEST(ModelPredictCommandTest, HelpExitsZero) {
  const Result r = RunCli({"predict", "--help"});
  EXPECT_EQ(r.code, kExitOk);
  EXPECT_THAT(r.out, HasSubstr("--layers-per-ipu"));
}

struct BadFlags {
  std::string name;
  std::vector<std::string> args;  // appended to a valid bert-base command
  std::string mention;            // the error names this field or flag
};

void PrintTo(const BadFlags& c, std::ostream* os) { *os << c.name; }

class ModelPredictCommandErrorTest : public ::testing::TestWithParam<BadFlags> {};

TEST_P(ModelPredictCommandErrorTest, OneLineErrorAndExitTwo) {
  const BadFlags& c = GetParam();
  std::vector<std::string> args = {"predict"};
  // A valid model and system unless the case brings its own.
  auto has = [&](const char* flag) {
    return std::find(c.args.begin(), c.args.end(), flag) != c.args.end();
  };
  if (!has("--model")) args.insert(args.end(), {"--model", "bert-base"});
  if (!has("--system")) args.insert(args.end(), {"--system", "bow-pod16"});
  args.insert(args.end(), c.args.begin(), c.args.end());
  const Result r = RunCli(args);
  EXPECT_EQ(r.code, kExitUsage) << r.out;
  EXPECT_EQ(r.out, "");
  EXPECT_THAT(r.err, StartsWith("ipu-model: "));
  ASSERT_FALSE(r.err.empty());
  EXPECT_EQ(r.err.find('\n'), r.err.size() - 1) << r.err;  // exactly one line
  EXPECT_THAT(r.err, HasSubstr(c.mention));
}

INSTANTIATE_TEST_SUITE_P(
    Flags, ModelPredictCommandErrorTest,
    ::testing::ValuesIn(std::vector<BadFlags>{
        {"UnknownModel", {"--model", "vgg16"}, "model: unknown model"},
        {"UnknownSystem", {"--system", "pod32"}, "system: unknown system"},
        {"MicroBatchZero", {"--micro-batch", "0"}, "micro_batch: must be at least 1"},
        {"MicroBatchNegative", {"--micro-batch=-3"}, "micro_batch: must be between"},
        {"MicroBatchNotANumber", {"--micro-batch", "many"}, "--micro-batch"},
        {"GradAccumZero", {"--grad-accum", "0"}, "grad_accum: must be at least 1"},
        {"GradAccumNegative", {"--grad-accum=-1"}, "grad_accum: must be between"},
        {"DeviceIterationsZero", {"--device-iterations", "0"}, "device_iterations"},
        {"ReplicasZero", {"--replicas", "0"}, "replicas: must be at least 1"},
        {"ReplicasTooMany", {"--replicas", "17"}, "replicas: 17 replicas x 4 IPUs"},
        {"IpusPerReplicaZero", {"--ipus-per-replica", "0"}, "ipus_per_replica: must be a power"},
        {"IpusPerReplicaNotPowerOfTwo", {"--ipus-per-replica", "6"}, "ipus_per_replica"},
        {"IpusPerReplicaTooMany", {"--ipus-per-replica", "32"}, "replicas:"},
        {"LayersPerIpuWrongCount",
         {"--ipus-per-replica", "4", "--layers-per-ipu", "6,6"},
         "layers_per_ipu: needs one entry per IPU"},
        {"LayersPerIpuWrongSum",
         {"--ipus-per-replica", "4", "--layers-per-ipu", "1,4,4,4"},
         "layers_per_ipu: must add up"},
        {"LayersPerIpuNotNumbers",
         {"--ipus-per-replica", "2", "--layers-per-ipu", "6,x"},
         "layers_per_ipu: must be a comma list"},
        {"LayersPerIpuNegative",
         {"--ipus-per-replica", "2", "--layers-per-ipu", "-6,18"},
         "layers_per_ipu"},
        {"LayersPerIpuQuarter",
         {"--ipus-per-replica", "2", "--layers-per-ipu", "5.75,6.25"},
         "layers_per_ipu: must be a comma list"},
        {"LayersPerIpuHalfWithoutNumber",
         {"--ipus-per-replica", "2", "--layers-per-ipu", ".5,11.5"},
         "layers_per_ipu: must be a comma list"},
        {"LayersPerIpuHalvesWrongSum",
         {"--ipus-per-replica", "2", "--layers-per-ipu", "5.5,6"},
         "layers_per_ipu: must add up to the model's 24"},
        {"LayersPerIpuHalvesOnConvNet",
         {"--model", "resnet50", "--ipus-per-replica", "2", "--layers-per-ipu", "7.5,8.5"},
         "layers_per_ipu: half layers apply to transformer models only"},
        {"StatePrecisionUnknown",
         {"--optimizer-state-precision", "bf16"},
         "optimizer_state_precision: must be one of fp32, fp16-first-moment, fp16"},
        {"StateOnAndOffChip",
         {"--offchip-optimizer-state", "--onchip-optimizer-state"},
         "optimizer_state: --offchip-optimizer-state and --onchip-optimizer-state are exclusive"},
        {"RtsAndNoRts", {"--rts", "--no-rts"}, "rts: --rts and --no-rts are exclusive"},
        {"StageInputsWithoutRecompute",
         {"--no-recompute", "--checkpoint-stage-inputs-only"},
         "checkpoint_stage_inputs_only: applies with recomputation only"},
        {"PackingBelowOne", {"--packing", "0.9"}, "packing: must be a finite number >= 1"},
        {"PackingNotANumber", {"--packing", "lots"}, "--packing"},
        {"OptimizerUnknown", {"--optimizer", "rmsprop"}, "optimizer: must be one of"},
        {"SeqLenZero", {"--seq-len", "0"}, "seq_len: must be at least 1"},
        {"SeqLenTooLong", {"--seq-len", "4096"}, "seq_len: must not exceed"},
        {"HiddenZero", {"--hidden", "0"}, "hidden: must be at least 1"},
        {"LayersZero", {"--layers", "0"}, "layers: must be at least 1"},
        {"HeadsZero", {"--heads", "0"}, "heads: must be at least 1"},
        {"HeadsNotDividing", {"--heads", "5"}, "heads: must divide hidden"},
        {"VocabZero", {"--vocab", "0"}, "vocab: must be at least 1"},
        {"FfnZero", {"--ffn", "0"}, "ffn: must be at least 1"},
        {"MaskedTokensTooMany", {"--masked-tokens", "500"}, "masked_tokens"},
        {"DecoderOnPreset", {"--decoder"}, "decoder: applies to --model transformer only"},
        {"ImageSizeOnTransformer", {"--image-size", "224"}, "image_size: applies to conv"},
        {"ClassesOnTransformer", {"--classes", "10"}, "classes: applies to conv"},
        {"CustomWithoutHidden",
         {"--model", "transformer", "--layers", "2", "--heads", "2"},
         "hidden: required with --model transformer"},
        {"CustomWithoutLayers",
         {"--model", "transformer", "--hidden", "64", "--heads", "2"},
         "layers: required"},
        {"CustomWithoutHeads",
         {"--model", "transformer", "--hidden", "64", "--layers", "2"},
         "heads: required"},
        {"HiddenOnConvNet", {"--model", "resnet50", "--hidden", "768"}, "hidden: applies to trans"},
        {"ImageSizeTooSmall", {"--model", "resnet50", "--image-size", "16"}, "image_size"},
        {"ClassesZero", {"--model", "resnet50", "--classes", "0"}, "classes: must be at least 1"},
        {"RecomputeBothWays", {"--recompute", "--no-recompute"}, "recompute:"},
        {"LoaderRateNegative", {"--host-loader-rate=-5"}, "host_loader_rate"},
        {"RepeatNegative", {"--repeat=-1"}, "repeat: must be >= 0"},
        {"UnknownFlag", {"--turbo"}, "--turbo"},
        {"RoutingUnknown", {"--routing", "fast"}, "routing: "},
        {"RoutingEmpty", {"--routing", ""}, "routing: "},
        {"RoutingUndefined", {"--routing", "IRT_UNDEFINED"}, "routing: "},
        {"RingSwncOnMeshIlds", {"--routing", "ringswnc"}, "routing: RINGSWNC uses the wrap links"},
        {"FrameworkUnknown", {"--framework", "jax"}, "framework: must be one of"},
        {"HostCallNegative", {"--host-call-ms=-1"}, "host_call_ms: must be a finite number >= 0"},
    }),
    [](const ::testing::TestParamInfo<BadFlags>& info) { return info.param.name; });

// On a whole torus ILD, RINGSWNC (the default there) closes the collective
// rings with the wrap links; any other routing leaves them unused, so the
// gradient reduction of a pipelined model takes longer. The output says so,
// and that the sync type is not modelled.
TEST(ModelPredictCommandTest, RoutingChangesTheCollectivesOnAWholeTorusIld) {
  auto collectives = [](std::vector<std::string> extra) {
    std::vector<std::string> args = kBertLargePod64;
    args.insert(args.end(), extra.begin(), extra.end());
    const Result r = RunCli(args);
    EXPECT_EQ(r.code, kExitOk) << r.err;
    return nlohmann::json::parse(r.out);
  };
  const nlohmann::json standard = collectives({});
  const nlohmann::json ring = collectives({"--routing", "ring-swnc"});
  const nlohmann::json dnc = collectives({"--routing", "dnc"});
  const nlohmann::json btnc = collectives({"--routing", "BTNC"});
  EXPECT_EQ(standard["routing"], "default");
  EXPECT_TRUE(standard["wrap_links"].get<bool>());
  EXPECT_EQ(ring["routing"], "RINGSWNC");
  EXPECT_DOUBLE_EQ(ring["collectives_s"].get<double>(), standard["collectives_s"].get<double>());
  EXPECT_EQ(dnc["routing"], "DNC");
  EXPECT_FALSE(dnc["wrap_links"].get<bool>());
  EXPECT_GT(dnc["collectives_s"].get<double>(), 1.5 * ring["collectives_s"].get<double>());
  EXPECT_GT(dnc["step_time_s"].get<double>(), ring["step_time_s"].get<double>());
  EXPECT_DOUBLE_EQ(btnc["collectives_s"].get<double>(), dnc["collectives_s"].get<double>());
  EXPECT_EQ(dnc["sync_type"], "not modelled");

  std::vector<std::string> text = kBertLargePod64;
  text.pop_back();  // --json
  text.insert(text.end(), {"--routing", "swnc"});
  const Result r = RunCli(text);
  ASSERT_EQ(r.code, kExitOk) << r.err;
  EXPECT_THAT(r.out, HasSubstr("routing        SWNC: wrap links not used"));
  EXPECT_THAT(r.out, HasSubstr("sync type      not modelled"));
}

TEST(ModelPredictCommandTest, MissingRequiredFlagsAndSubcommand) {
  for (const std::vector<std::string>& args :
       {std::vector<std::string>{"predict", "--system", "pod4"},
        std::vector<std::string>{"predict", "--model", "bert-base"}, std::vector<std::string>{}}) {
    const Result r = RunCli(args);
    EXPECT_EQ(r.code, kExitUsage);
    EXPECT_THAT(r.err, StartsWith("ipu-model: "));
    EXPECT_EQ(r.err.find('\n'), r.err.size() - 1) << r.err;
  }
}

TEST(ModelPredictCommandTest, FrameworkAndHostCallReachTheWorkload) {
  std::vector<std::string> args = kBertLargePod64;
  args.insert(args.end(), {"--framework", "tf2", "--host-call-ms", "2.5", "--broadcast-inputs"});
  const Result r = RunCli(args);
  ASSERT_EQ(r.code, kExitOk) << r.err;
  const nlohmann::json j = nlohmann::json::parse(r.out);
  EXPECT_EQ(j["workload"]["framework"], "tf2");
  EXPECT_DOUBLE_EQ(j["workload"]["host_call_s"].get<double>(), 0.0025);
  EXPECT_FALSE(j["workload"]["replicated_input_streams"].get<bool>());
  EXPECT_NEAR(j["host_overhead_s"].get<double>(), j["host_round_trips_s"].get<double>() + 0.0025,
              1e-12);
  const Result plain = RunCli(kBertLargePod64);
  EXPECT_EQ(nlohmann::json::parse(plain.out)["workload"]["framework"], "poptorch");
}

TEST(ModelPredictCommandTest, ValidateTabulatesEveryPublishedResult) {
  const Result r = RunCli({"validate"});
  ASSERT_EQ(r.code, kExitOk) << r.err;
  EXPECT_THAT(r.out, StartsWith("role"));
  EXPECT_THAT(r.out, HasSubstr("calibration BERT-Base pretrain_base_128_pod4"));
  EXPECT_THAT(r.out, HasSubstr("validation  ResNet-50 v1.5"));
  EXPECT_THAT(r.out, HasSubstr("source: "));
  EXPECT_THAT(r.out, HasSubstr("validation rows: "));
  EXPECT_THAT(r.out, HasSubstr("median |error| "));
  // Every row says its memory and optimizer options; the run across ILDs
  // that calibrates the gateway is named, with its check against the line.
  EXPECT_THAT(r.out, HasSubstr("options: lamb, state off chip in fp32, sharded (RTS); recompute"));
  EXPECT_THAT(r.out, HasSubstr("options: lamb, state on chip in fp16, sharded (RTS)"));
  EXPECT_THAT(r.out, HasSubstr("calibration ResNet-50 v1.5, 256 IPUs"));
  EXPECT_THAT(r.out, HasSubstr("calibration across ILDs: ResNet-50 v1.5, 256 IPUs"));
  EXPECT_THAT(r.out, HasSubstr("of the line payload rate: physically possible"));
  const Result j = RunCli({"validate", "--json"});
  ASSERT_EQ(j.code, kExitOk) << j.err;
  const nlohmann::json doc = nlohmann::json::parse(j.out);
  ASSERT_GE(doc["rows"].size(), 4u);
  EXPECT_EQ(doc["rows"][0]["role"], "calibration");
  for (const auto& row : doc["rows"]) {
    EXPECT_NEAR(row["error"].get<double>(),
                row["predicted"].get<double>() / row["published"].get<double>() - 1, 1e-6);
  }
  EXPECT_GT(doc["validation"]["rows"].get<int>(), 0);
}

}  // namespace
}  // namespace vipu::model
