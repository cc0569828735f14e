// Per-micro-batch work of transformer and ResNet networks, unit by unit, from their shapes.
#include "model/network_work.h"

#include <cmath>
#include <utility>

#include "absl/strings/str_cat.h"

namespace vipu::model {
namespace {

// An element-wise "touch" reads and writes one value.
constexpr double kBytesPerTouch = 2 * kBytesPerValue;

// A matrix product (m, k, n), repeated `groups` times: its forward pass and
// the backward pass's input gradient (m, n, k) and weight gradient, which
// reduces over the m rows: k positions of n outputs.
void AddMatMul(UnitWork& u, double m, double k, double n, double groups = 1,
               bool attention = false) {
  Product fwd;
  fwd.positions = m;
  fwd.in_channels = k;
  fwd.out_channels = n;
  fwd.groups = groups;
  fwd.attention = attention;
  u.forward.push_back(fwd);
  Product dgrad = fwd;
  dgrad.in_channels = n;
  dgrad.out_channels = k;
  u.backward.push_back(dgrad);
  Product wgrad = fwd;
  wgrad.positions = k;
  wgrad.in_channels = m;
  wgrad.out_channels = n;
  u.backward.push_back(wgrad);
}

// Attention of `pairs` (heads x sequences) of length s: scores Q K^T over
// the head dimension, then probabilities x values. Backward: the value and
// probability gradients, then the query and key gradients.
void AddAttention(UnitWork& u, double s, double head_dim, double pairs) {
  auto product = [&](double in, double out) {
    Product p;
    p.positions = s;
    p.in_channels = in;
    p.out_channels = out;
    p.groups = pairs;
    p.attention = true;
    return p;
  };
  u.forward.push_back(product(head_dim, s));   // Q K^T
  u.forward.push_back(product(s, head_dim));   // P V
  u.backward.push_back(product(head_dim, s));  // dO V^T
  u.backward.push_back(product(s, head_dim));  // P^T dO
  u.backward.push_back(product(s, head_dim));  // dS K
  u.backward.push_back(product(s, head_dim));  // dS^T Q
}

UnitWork TransformerLayer(const Workload& w, uint32_t index) {
  const TransformerShape& t = w.transformer;
  const double h = t.hidden;
  const double ffn = t.ffn ? t.ffn : 4.0 * t.hidden;
  const double s = w.seq_len;
  const double tokens = static_cast<double>(w.micro_batch) * s;
  const double head_dim = h / t.heads;
  UnitWork u;
  u.name = absl::StrCat(t.decoder ? "decoder " : "encoder ", index);
  u.gemms = {{tokens, h, 3 * h}, {tokens, h, h}, {tokens, h, ffn}, {tokens, ffn, h}};
  for (const Gemm& g : u.gemms) AddMatMul(u, g.m, g.k, g.n);
  // Per head and sequence: scores s x s over head_dim, then weights x values.
  u.attention_flops = 2.0 * 2.0 * s * s * head_dim * t.heads * w.micro_batch;
  const double pairs = static_cast<double>(t.heads) * w.micro_batch;
  AddAttention(u, s, head_dim, pairs);
  // Touches per token: biases, dropouts and residuals on the hidden state,
  // two layer norms, GELU on the FFN width, and on each score: scale/mask,
  // softmax (three passes) and dropout.
  const double touches_per_token = 9 * h + 8 * h + 3 * ffn + 7.0 * t.heads * s;
  u.elementwise_bytes = tokens * touches_per_token * kBytesPerTouch;
  // Two layer norms (3 each), the softmax (5), four bias adds, three
  // dropouts, two residual adds, the score scale and mask, and GELU.
  u.ops = 2 * 3 + 5 + 4 + 3 + 2 + 1 + 1;
  u.params = 4 * h * h + 2 * h * ffn + 9 * h + ffn;
  u.param_tensors = 16;
  u.output_bytes = tokens * h * kBytesPerValue;
  // Per token: the layer input (QKV weight gradient); Q, K and V (score and
  // value gradients); the attention output (projection weight gradient);
  // the FFN input; the GELU output (second FFN weight gradient); and the
  // attention probabilities, one per head and key position.
  u.saved_bytes = tokens * (6 * h + ffn + static_cast<double>(t.heads) * s) * kBytesPerValue;
  u.recomputed = w.recompute;
  return u;
}

// A layer as two pipeline units: the attention block (the QKV and output
// projections, the attention products, the first layer norm) and the
// feed-forward block (the two FFN products, GELU, the second layer norm).
// Their products, traffic, ops, parameters and saved activations add up to
// the whole layer's; each hands the hidden state on.
std::pair<UnitWork, UnitWork> SplitLayer(const Workload& w, const UnitWork& layer) {
  const TransformerShape& t = w.transformer;
  const double h = t.hidden;
  const double ffn = t.ffn ? t.ffn : 4.0 * t.hidden;
  const double s = w.seq_len;
  const double tokens = static_cast<double>(w.micro_batch) * s;
  UnitWork att;
  UnitWork ff;
  att.name = layer.name + " attention";
  ff.name = layer.name + " ffn";
  att.gemms = {layer.gemms[0], layer.gemms[1]};
  ff.gemms = {layer.gemms[2], layer.gemms[3]};
  // AddMatMul puts one forward and two backward products per GEMM, in
  // order; the attention products follow them.
  att.forward = {layer.forward[0], layer.forward[1]};
  ff.forward = {layer.forward[2], layer.forward[3]};
  att.forward.insert(att.forward.end(), layer.forward.begin() + 4, layer.forward.end());
  att.backward.assign(layer.backward.begin(), layer.backward.begin() + 4);
  ff.backward.assign(layer.backward.begin() + 4, layer.backward.begin() + 8);
  att.backward.insert(att.backward.end(), layer.backward.begin() + 8, layer.backward.end());
  att.attention_flops = layer.attention_flops;
  // Each block has its bias, dropout, residual and layer norm on the
  // hidden state; the scores' passes belong to attention, GELU to the FFN.
  att.elementwise_bytes = tokens * (8.5 * h + 7.0 * t.heads * s) * kBytesPerTouch;
  ff.elementwise_bytes = tokens * (8.5 * h + 3 * ffn) * kBytesPerTouch;
  // Attention: a layer norm (3), the softmax (5), two bias adds, two
  // dropouts, a residual add, the score scale and mask. FFN: a layer norm
  // (3), two bias adds, a dropout, a residual add and GELU.
  att.ops = 3 + 5 + 2 + 2 + 1 + 1;
  ff.ops = layer.ops - att.ops;
  att.params = 4 * h * h + 4 * h + 2 * h;
  ff.params = layer.params - att.params;
  att.param_tensors = 10;
  ff.param_tensors = layer.param_tensors - att.param_tensors;
  att.output_bytes = ff.output_bytes = layer.output_bytes;
  // Attention: its input, Q, K, V, its output and the probabilities; FFN:
  // its input and the GELU output.
  att.saved_bytes = tokens * (5 * h + static_cast<double>(t.heads) * s) * kBytesPerValue;
  ff.saved_bytes = layer.saved_bytes - att.saved_bytes;
  att.recomputed = ff.recomputed = layer.recomputed;
  return {att, ff};
}

void BuildTransformer(const Workload& w, NetworkWork& net) {
  const TransformerShape& t = w.transformer;
  const double h = t.hidden;
  const double v = t.vocab;
  const double mb = w.micro_batch;
  const double tokens = mb * w.seq_len;
  for (uint32_t i = 0; i < t.layers; ++i) {
    UnitWork layer = TransformerLayer(w, i);
    if (!w.half_layer_units) {
      net.units.push_back(std::move(layer));
      continue;
    }
    auto [att, ff] = SplitLayer(w, layer);
    net.units.push_back(std::move(att));
    net.units.push_back(std::move(ff));
  }

  UnitWork& emb = net.first;
  emb.name = "embedding";
  // Word + position (+ segment) lookups, sum, layer norm, dropout.
  emb.elementwise_bytes = tokens * 10 * h * kBytesPerTouch;
  // Three lookups, two adds, the layer norm (3) and dropout.
  emb.ops = 3 + 2 + 3 + 1;
  emb.params = (v + t.max_positions + 2) * h + 2 * h;
  emb.param_tensors = 5;
  emb.output_bytes = tokens * h * kBytesPerValue;

  UnitWork& head = net.head;
  net.head_on_first_ipu = true;  // weights tied with the word embedding
  if (t.decoder) {
    head.name = "lm head";
    head.gemms = {{tokens, h, v}};
    head.elementwise_bytes = tokens * (4 * v + 4 * h) * kBytesPerTouch;
    // The final layer norm (3) and the softmax cross-entropy (5 + 1).
    head.ops = 3 + 6;
    head.params = 2 * h;  // final layer norm; projection is the embedding
    head.param_tensors = 2;
    head.saved_bytes = tokens * h * kBytesPerValue;  // the projection's input
    for (const Gemm& g : head.gemms) AddMatMul(head, g.m, g.k, g.n);
  } else {
    const double masked = mb * t.masked_tokens;
    head.name = "mlm+nsp heads";
    head.gemms = {{masked, h, h}, {masked, h, v}, {mb, h, h}, {mb, h, 2}};
    head.elementwise_bytes = masked * (4 * v + 8 * h) * kBytesPerTouch;
    // The masked-position gather, the transform's GELU and layer norm (3),
    // four bias adds, the pooler's tanh and two softmax cross-entropies.
    head.ops = 1 + 1 + 3 + 4 + 1 + 2 * 6;
    head.params = h * h + 3 * h + v + h * h + h + 2 * h + 2;
    head.param_tensors = 8;
    // The inputs of the two MLM products and of the two NSP ones.
    head.saved_bytes = 2 * (masked + mb) * h * kBytesPerValue;
    for (const Gemm& g : head.gemms) AddMatMul(head, g.m, g.k, g.n);
  }
  // Token ids, positions, segments, attention mask (int32) and labels.
  const double label_values = t.decoder ? w.seq_len : 2.0 * t.masked_tokens + 1;
  net.input_bytes_per_sample = (4.0 * w.seq_len + label_values) * 4;
}

// One convolution with batch-norm, on an `in_hw` square input.
struct ConvSpec {
  double in_ch, out_ch, kernel, stride, in_hw;
};

// `input_kept` when another convolution of the unit already keeps the same
// input (a block's projection shortcut reads the block input too).
// `network_input` for the stem, whose input is the image: no input
// gradient is computed for it.
void AddConv(const ConvSpec& c, double mb, UnitWork& u, double bn_relu_touches,
             bool input_kept = false, bool network_input = false) {
  const double out_hw = std::ceil(c.in_hw / c.stride);
  const double rows = mb * out_hw * out_hw;
  const double taps = c.kernel * c.kernel;
  u.gemms.push_back({rows, c.in_ch * taps, c.out_ch});
  Product fwd;
  fwd.positions = rows;
  fwd.in_channels = c.in_ch;
  fwd.out_channels = c.out_ch;
  fwd.kernel_positions = taps;
  fwd.input_stride = c.stride;
  u.forward.push_back(fwd);
  if (!network_input) {
    // The input gradient: a convolution back onto the input map, in which
    // each input position gathers taps / stride^2 kernel taps on average
    // (a 1x1 stride-2 kernel reaches a quarter of the positions).
    Product dgrad;
    dgrad.positions = mb * c.in_hw * c.in_hw;
    dgrad.in_channels = c.out_ch;
    dgrad.out_channels = c.in_ch;
    dgrad.kernel_positions = taps / (c.stride * c.stride);
    if (dgrad.kernel_positions < 1) {
      dgrad.positions *= dgrad.kernel_positions;
      dgrad.kernel_positions = 1;
    }
    u.backward.push_back(dgrad);
  }
  // The weight gradient reduces over the batch and output map: for each
  // input channel and tap, out_ch sums. The output gradient it multiplies
  // is the same for every tap.
  Product wgrad;
  wgrad.positions = c.in_ch;
  wgrad.in_channels = rows;
  wgrad.out_channels = c.out_ch;
  wgrad.kernel_positions = taps;
  wgrad.input_stride = c.stride;
  wgrad.weights_per_kernel_position = false;
  u.backward.push_back(wgrad);
  u.elementwise_bytes += rows * c.out_ch * bn_relu_touches * kBytesPerTouch;
  u.params += c.in_ch * c.out_ch * c.kernel * c.kernel + 2 * c.out_ch;
  u.param_tensors += 3;
  // The weight gradient reads the input map (not its im2col expansion).
  if (!input_kept) u.saved_bytes += mb * c.in_hw * c.in_hw * c.in_ch * kBytesPerValue;
}

void BuildResNet(const Workload& w, NetworkWork& net) {
  const ConvNetShape& cn = w.convnet;
  const double mb = w.micro_batch;
  const double img = cn.image_size;
  std::vector<uint32_t> blocks = {3, 4, 6, 3};
  if (cn.depth == 101) blocks = {3, 4, 23, 3};
  if (cn.depth == 152) blocks = {3, 8, 36, 3};

  UnitWork& stem = net.first;
  stem.name = "stem";
  AddConv({3, 64, 7, 2, img}, mb, stem, 4, /*input_kept=*/false, /*network_input=*/true);
  const double stem_hw = std::ceil(img / 2);
  const double pool_hw = std::ceil(stem_hw / 2);
  stem.elementwise_bytes += mb * pool_hw * pool_hw * 64 * 3 * kBytesPerTouch;  // max-pool
  // Batch norm (3), ReLU and the max-pool.
  stem.ops = 3 + 1 + 1;
  stem.output_bytes = mb * pool_hw * pool_hw * 64 * kBytesPerValue;

  double in_ch = 64;
  double hw = pool_hw;
  for (size_t stage = 0; stage < blocks.size(); ++stage) {
    const double mid = 64.0 * (1 << stage);
    for (uint32_t b = 0; b < blocks[stage]; ++b) {
      const double stride = (stage > 0 && b == 0) ? 2 : 1;
      const double out_hw = std::ceil(hw / stride);
      UnitWork u;
      u.name = absl::StrCat("block ", stage + 1, ".", b + 1);
      // v1.5 bottleneck: stride on the 3x3; BN+ReLU after a and b; BN, add
      // and ReLU after c.
      AddConv({in_ch, mid, 1, 1, hw}, mb, u, 4);
      AddConv({mid, mid, 3, stride, hw}, mb, u, 4);
      AddConv({mid, 4 * mid, 1, 1, out_hw}, mb, u, 5);
      // Three batch norms (3 each), three ReLUs and the residual add.
      u.ops = 3 * 3 + 3 + 1;
      if (b == 0) {
        AddConv({in_ch, 4 * mid, 1, stride, hw}, mb, u, 3, /*input_kept=*/true);
        u.ops += 3;  // the shortcut's batch norm
      }
      u.output_bytes = mb * out_hw * out_hw * 4 * mid * kBytesPerValue;
      u.recomputed = w.recompute;
      net.units.push_back(std::move(u));
      in_ch = 4 * mid;
      hw = out_hw;
    }
  }

  UnitWork& head = net.head;
  net.head_on_first_ipu = false;
  head.name = "pool+fc";
  head.gemms = {{mb, in_ch, static_cast<double>(cn.classes)}};
  AddMatMul(head, mb, in_ch, cn.classes);
  head.elementwise_bytes = mb * (hw * hw * in_ch + 4.0 * cn.classes) * kBytesPerTouch;
  // The average pool (a reduction, 2), the bias add and the softmax
  // cross-entropy (5 + 1).
  head.ops = 2 + 1 + 6;
  head.params = in_ch * cn.classes + cn.classes;
  head.param_tensors = 2;
  head.saved_bytes = mb * in_ch * kBytesPerValue;  // the pooled features, the FC's input
  // uint8 RGB image and an int32 label.
  net.input_bytes_per_sample = img * img * 3 + 4;
}

// A network given layer by layer: each layer is a pipeline unit; its
// products' rows and its bytes scale with the micro-batch. Inference keeps
// the forward products alone. Nothing precedes or follows the layers.
void BuildLayers(const Workload& w, NetworkWork& net) {
  const double mb = w.micro_batch;
  for (const TracedLayer& layer : w.layers) {
    UnitWork u;
    u.name = layer.name;
    for (const Gemm& p : layer.products) {
      u.gemms.push_back({mb * p.m, p.k, p.n, p.count});
      AddMatMul(u, mb * p.m, p.k, p.n, p.count);
    }
    if (!w.training) u.backward.clear();
    u.forward_only = !w.training;
    u.elementwise_bytes = mb * layer.elementwise_bytes;
    u.ops = layer.ops;
    u.params = layer.params;
    u.param_tensors = layer.param_tensors;
    u.output_bytes = mb * layer.output_bytes;
    u.saved_bytes = w.training ? u.output_bytes : 0;
    u.recomputed = w.training && w.recompute;
    net.units.push_back(std::move(u));
  }
  net.first.name = "input";
  net.first.forward_only = !w.training;
  net.head.name = "output";
  net.head.forward_only = !w.training;
  net.head_on_first_ipu = false;
  net.input_bytes_per_sample = w.layers_input_bytes_per_sample;
}

}  // namespace

double GemmFlops(const std::vector<Gemm>& gemms) {
  double flops = 0;
  for (const Gemm& g : gemms) flops += 2 * g.m * g.k * g.n * g.count;
  return flops;
}

NetworkWork BuildNetworkWork(const Workload& workload) {
  NetworkWork net;
  if (workload.family == ModelFamily::kTransformer) {
    BuildTransformer(workload, net);
  } else if (workload.family == ModelFamily::kLayers) {
    BuildLayers(workload, net);
  } else {
    BuildResNet(workload, net);
  }
  double flops = GemmFlops(net.first.gemms) + GemmFlops(net.head.gemms) +
                 net.first.attention_flops + net.head.attention_flops;
  for (const UnitWork& u : net.units) flops += GemmFlops(u.gemms) + u.attention_flops;
  net.forward_flops_per_sample = workload.micro_batch ? flops / workload.micro_batch : 0;
  return net;
}

}  // namespace vipu::model
