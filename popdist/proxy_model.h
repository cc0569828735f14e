// The model the sample application really trains, so that the loss and the
// accuracies it prints are learned rather than made up. BERT's own weights
// are far beyond what a simulated pod computes, so the sample trains a small
// stand-in with the same two heads: a softmax classifier over generated
// "tokens" (the masked-LM head) and a logistic classifier over the same
// features (the next-sentence head).
//
// Training is data-parallel the way popdist runs it: every replica draws its
// own samples of a step from a generator keyed by (seed, step, replica,
// sample), each instance sums the gradients of its replicas, the instances
// all-reduce the sums, and every instance applies the same update. The
// global batch, and so the trained weights, do not depend on how many
// instances share the replicas (up to the order of floating-point sums).
#ifndef VIPU_POPDIST_PROXY_MODEL_H_
#define VIPU_POPDIST_PROXY_MODEL_H_

#include <cstddef>
#include <cstdint>
#include <vector>

namespace vipu::popdist::sample {

struct ProxyModelOptions {
  uint32_t features = 32;
  uint32_t classes = 16;
  uint64_t seed = 1;
  double learning_rate = 1.0;
  // Standard deviation of the noise around each class centre; larger is
  // harder to learn.
  double noise = 2.0;
};

// The sums of one step over some replicas' samples, packed in one vector so
// that a single all-reduce combines every instance's share: the gradient of
// each parameter, then the loss sums, the counts of correct predictions and
// the number of samples. A value; not thread-safe.
class StepSums {
 public:
  StepSums() = default;
  explicit StepSums(size_t num_params) : values_(num_params + kSlots, 0.0) {}

  // The buffer to all-reduce in place.
  double* data() { return values_.data(); }
  const double* data() const { return values_.data(); }
  size_t size() const { return values_.size(); }

  double samples() const { return At(kSamples); }
  // Means over the samples; 0 when there are none.
  double mlm_loss() const { return Mean(kMlmLoss); }
  double nsp_loss() const { return Mean(kNspLoss); }
  double mlm_accuracy() const { return Mean(kMlmCorrect); }
  double nsp_accuracy() const { return Mean(kNspCorrect); }

 private:
  friend class ProxyModel;
  enum Slot { kMlmLoss, kNspLoss, kMlmCorrect, kNspCorrect, kSamples, kSlots };
  double At(Slot s) const { return values_.empty() ? 0.0 : values_[values_.size() - kSlots + s]; }
  double& Ref(Slot s) { return values_[values_.size() - kSlots + s]; }
  double Mean(Slot s) const { return samples() > 0 ? At(s) / samples() : 0.0; }

  std::vector<double> values_;
};

// Not thread-safe; each instance owns one and keeps it in step with the
// others by applying the same all-reduced sums.
class ProxyModel {
 public:
  // Options are taken as given; zero features or classes give a model with
  // nothing to learn (callers use the defaults).
  explicit ProxyModel(const ProxyModelOptions& options);

  size_t num_params() const { return weights_.size(); }
  double learning_rate() const { return options_.learning_rate; }

  // Forward and backward pass over `samples_per_replica` generated samples
  // of each replica in [first_replica, first_replica + replicas) at `step`,
  // with the current weights. Does not change the model.
  StepSums Accumulate(uint64_t step, uint32_t first_replica, uint32_t replicas,
                      uint32_t samples_per_replica) const;

  // One SGD update with the mean gradient of `global` (the sums of every
  // replica of the step). A step without samples changes nothing.
  void Apply(const StepSums& global);

 private:
  // One generated sample: its features, its class and its binary label.
  void Sample(uint64_t step, uint32_t replica, uint32_t index, std::vector<double>* x,
              uint32_t* label, bool* next) const;

  ProxyModelOptions options_;
  std::vector<double> centres_;     // classes x features
  std::vector<double> nsp_normal_;  // features: the hidden boundary of the binary task
  // Softmax weights (classes x features), its biases (classes), then the
  // logistic weights (features) and its bias.
  std::vector<double> weights_;
};

}  // namespace vipu::popdist::sample

#endif  // VIPU_POPDIST_PROXY_MODEL_H_
