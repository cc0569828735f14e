// A training workload described by what it is: the network's shape, the
// batching, the parallel layout and the optimizer. No fitted numbers.
#ifndef VIPU_MODEL_WORKLOAD_H_
#define VIPU_MODEL_WORKLOAD_H_

#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

#include "absl/status/statusor.h"

namespace vipu::model {

// kLayers: a network given layer by layer (TracedLayer), as the program
// that runs it measured it, rather than by a known shape.
enum class ModelFamily { kTransformer, kConvNet, kLayers };

enum class Optimizer { kSgd, kSgdMomentum, kAdam, kLamb };

// The precision the optimizer state is kept in: FP32 moments, an FP16
// first moment beside an FP32 second one (PopTorch's
// enable_half_first_order_momentum), or both in FP16 (PopART's
// lamb_accl_dtype FLOAT16, Paddle's accl1_type and accl2_type).
enum class StatePrecision { kFp32, kFp16FirstMoment, kFp16 };

// The framework that drives the IPUs, for what its documented mechanisms
// change on the host side: whether the next batch is loaded while the IPUs
// run, and how many host round trips a host call makes.
enum class Framework { kTf1, kTf2, kPopTorch, kPopArt };

struct TransformerShape {
  uint32_t hidden = 768;
  uint32_t layers = 12;
  uint32_t heads = 12;
  uint32_t ffn = 0;  // 0: 4 * hidden
  uint32_t vocab = 30522;
  uint32_t max_positions = 512;
  // Decoder (causal LM, GPT-style): the LM head scores every position.
  // Encoder (BERT-style): MLM head on `masked_tokens` positions plus NSP.
  bool decoder = false;
  uint32_t masked_tokens = 20;
};

// A bottleneck ResNet (v1.5): depth 50, 101 or 152.
struct ConvNetShape {
  uint32_t depth = 50;
  uint32_t image_size = 224;
  uint32_t classes = 1000;
};

// One forward matrix product (or convolution lowered to one): rows m,
// reduction k, columns n, repeated `count` times. FLOPs = 2 m k n count.
struct Gemm {
  double m = 0;
  double k = 0;
  double n = 0;
  double count = 1;
};

// One layer of a network given layer by layer, per sample: its matrix
// products (a convolution lowered to one: rows = output positions, k = input
// channels x kernel taps, n = output channels), the bytes its other ops
// read and write, their count, its parameters and the activations it hands
// on. The micro-batch multiplies the rows and bytes.
struct TracedLayer {
  std::string name;
  std::vector<Gemm> products;
  double elementwise_bytes = 0;
  double ops = 0;
  double params = 0;
  double param_tensors = 0;
  double output_bytes = 0;
};

struct Workload {
  std::string name;  // for reports: "bert-large", "transformer", ...
  ModelFamily family = ModelFamily::kTransformer;
  TransformerShape transformer;
  ConvNetShape convnet;
  // kLayers: the layers in order, and the bytes of one sample's input.
  std::vector<TracedLayer> layers;
  double layers_input_bytes_per_sample = 0;
  // False: inference, forward passes only, no gradient reduction and no
  // weight update.
  bool training = true;

  uint32_t seq_len = 128;  // transformers only
  uint32_t micro_batch = 1;
  uint32_t grad_accum = 1;
  uint32_t device_iterations = 1;
  uint32_t replicas = 1;
  uint32_t ipus_per_replica = 1;
  // Pipeline split: encoder/decoder layers (transformers) or residual blocks
  // (convnets) on each IPU of a replica. Empty: balanced automatically.
  std::vector<uint32_t> layers_per_ipu;
  // Transformers: each layer is two pipeline units, its attention block and
  // then its feed-forward block, so a split can end inside a layer (the
  // MLPerf BERT configurations place attention and FFN separately);
  // layers_per_ipu then counts those halves.
  bool half_layer_units = false;

  Optimizer optimizer = Optimizer::kLamb;
  bool optimizer_state_offchip = false;  // state in Streaming Memory
  StatePrecision optimizer_state_precision = StatePrecision::kFp32;
  bool replicated_tensor_sharding = false;  // RTS of weights/optimizer state
  bool recompute = true;                    // recompute activations per layer
  // With recomputation: every layer's input is stashed for each micro-batch
  // in flight (PyTorch BERT's recompute_checkpoint_every_layer), or, when
  // false, only each pipeline stage's input is, and the stage's layers are
  // rebuilt from it one micro-batch at a time (PopART's
  // RecomputationType::Pipeline without per-layer checkpoints, as Graphcore's
  // MLPerf BERT runs). Memory only: the recomputation costs the same time.
  bool checkpoint_every_layer = true;
  // Average sequences packed in one sample (1 = unpacked).
  double packing = 1.0;
  // Rate the host data pipeline can feed, samples/s; 0 = not limiting
  // (generated or cached data).
  double host_loader_samples_per_s = 0;

  // Host side.
  Framework framework = Framework::kPopTorch;
  // Seconds the framework spends on the host in each host call besides
  // the round trips to the IPUs the model counts (its own loop, tensor
  // conversions, callbacks). Measured per application; 0 when unknown.
  double host_call_s = 0;
  // Each replica streams its own samples (true), or one stream is
  // broadcast to every replica of a machine (false).
  bool replicated_input_streams = true;
};

// Presets: bert-base, bert-large, gpt2-small, gpt2-medium, resnet50,
// resnet101, resnet152; the network shape only, batching left at defaults.
absl::StatusOr<Workload> WorkloadPreset(std::string_view name);
std::vector<std::string> WorkloadPresetNames();

// Number of pipeline units the network has: transformer layers, residual
// blocks of a convnet, or the layers of a network given layer by layer.
uint32_t PipelineUnits(const Workload& workload);

absl::StatusOr<Optimizer> ParseOptimizer(std::string_view name);
std::string_view OptimizerName(Optimizer optimizer);

// "tf1", "tf2", "poptorch" or "popart".
absl::StatusOr<Framework> ParseFramework(std::string_view name);
std::string_view FrameworkName(Framework framework);

// What a framework does on the host in one host call.
struct FrameworkHost {
  // Host round trips a host call makes: the run's start and end syncs,
  // plus the read-back of outputs and the write of optimizer parameters
  // when the framework does them in the call itself.
  double round_trips = 2;
  // The next batch is produced between host calls, not while the IPUs run.
  bool loads_between_calls = false;
};
FrameworkHost HostMechanisms(Framework framework);

// Optimizer state per parameter: none for SGD, the momentum, or Adam's and
// LAMB's two moments, each 4 bytes in FP32 and 2 in FP16 (the first moment
// is the momentum).
double OptimizerStateBytes(Optimizer optimizer, StatePrecision precision = StatePrecision::kFp32);

// "fp32", "fp16-first-moment" or "fp16".
absl::StatusOr<StatePrecision> ParseStatePrecision(std::string_view name);
std::string_view StatePrecisionName(StatePrecision precision);

// The memory and optimizer options of a workload in one line, e.g.
// "LAMB, state on chip in FP16, sharded (RTS); recompute", as `ipu-model
// validate` prints them under each run.
std::string TrainingOptionsText(const Workload& workload);

}  // namespace vipu::model

#endif  // VIPU_MODEL_WORKLOAD_H_
