// ProxyModel: the small two-headed classifier the sample application trains data-parallel.
#include "popdist/proxy_model.h"

#include <algorithm>
#include <cmath>
#include <random>

namespace vipu::popdist::sample {
namespace {

uint64_t Mix(uint64_t x) {
  x += 0x9e3779b97f4a7c15ULL;
  x = (x ^ (x >> 30)) * 0xbf58476d1ce4e5b9ULL;
  x = (x ^ (x >> 27)) * 0x94d049bb133111ebULL;
  return x ^ (x >> 31);
}

// log(1 + e^z) without overflow.
double Softplus(double z) { return z > 0 ? z + std::log1p(std::exp(-z)) : std::log1p(std::exp(z)); }

}  // namespace

ProxyModel::ProxyModel(const ProxyModelOptions& options) : options_(options) {
  const uint32_t d = options_.features, k = options_.classes;
  std::mt19937_64 rng(Mix(options_.seed));
  std::normal_distribution<double> normal;
  centres_.resize(static_cast<size_t>(k) * d);
  for (double& c : centres_) c = normal(rng);
  nsp_normal_.resize(d);
  for (double& n : nsp_normal_) n = normal(rng);
  weights_.assign(static_cast<size_t>(k) * d + k + d + 1, 0.0);
}

void ProxyModel::Sample(uint64_t step, uint32_t replica, uint32_t index, std::vector<double>* x,
                        uint32_t* label, bool* next) const {
  const uint32_t d = options_.features;
  std::mt19937_64 rng(Mix(Mix(Mix(options_.seed ^ step) ^ replica) ^ index));
  std::normal_distribution<double> normal;
  *label = static_cast<uint32_t>(rng() % options_.classes);
  // Features are scaled by 1/sqrt(d) so that one learning rate suits any
  // width.
  const double scale = 1.0 / std::sqrt(static_cast<double>(d));
  double projection = 0;
  for (uint32_t j = 0; j < d; ++j) {
    (*x)[j] = scale * (centres_[*label * d + j] + options_.noise * normal(rng));
    projection += nsp_normal_[j] * (*x)[j];
  }
  // The binary task is a linear boundary with a little label noise, so its
  // accuracy stays below 100 %.
  *next = projection + 0.1 * normal(rng) > 0;
}

StepSums ProxyModel::Accumulate(uint64_t step, uint32_t first_replica, uint32_t replicas,
                                uint32_t samples_per_replica) const {
  const uint32_t d = options_.features, k = options_.classes;
  const size_t bias = static_cast<size_t>(k) * d, nsp = bias + k, nsp_bias = nsp + d;
  StepSums sums(weights_.size());
  double* grad = sums.data();
  std::vector<double> x(d), logits(k);
  for (uint32_t r = first_replica; r < first_replica + replicas; ++r) {
    for (uint32_t i = 0; i < samples_per_replica; ++i) {
      uint32_t label = 0;
      bool next = false;
      Sample(step, r, i, &x, &label, &next);
      // Softmax head.
      for (uint32_t c = 0; c < k; ++c) {
        double z = weights_[bias + c];
        for (uint32_t j = 0; j < d; ++j) z += weights_[c * d + j] * x[j];
        logits[c] = z;
      }
      const uint32_t predicted =
          static_cast<uint32_t>(std::max_element(logits.begin(), logits.end()) - logits.begin());
      const double top = logits[predicted];
      const double label_margin = logits[label] - top;
      double norm = 0;
      for (double& z : logits) norm += (z = std::exp(z - top));
      for (uint32_t c = 0; c < k; ++c) {
        const double error = logits[c] / norm - (c == label ? 1.0 : 0.0);
        for (uint32_t j = 0; j < d; ++j) grad[c * d + j] += error * x[j];
        grad[bias + c] += error;
      }
      sums.Ref(StepSums::kMlmLoss) += std::log(norm) - label_margin;
      sums.Ref(StepSums::kMlmCorrect) += predicted == label ? 1 : 0;
      // Logistic head.
      double z = weights_[nsp_bias];
      for (uint32_t j = 0; j < d; ++j) z += weights_[nsp + j] * x[j];
      const double y = next ? 1.0 : 0.0;
      const double error = 1.0 / (1.0 + std::exp(-z)) - y;
      for (uint32_t j = 0; j < d; ++j) grad[nsp + j] += error * x[j];
      grad[nsp_bias] += error;
      sums.Ref(StepSums::kNspLoss) += Softplus(z) - y * z;
      sums.Ref(StepSums::kNspCorrect) += (z > 0) == next ? 1 : 0;
      sums.Ref(StepSums::kSamples) += 1;
    }
  }
  return sums;
}

void ProxyModel::Apply(const StepSums& global) {
  const double n = global.samples();
  if (n <= 0) return;
  const double rate = options_.learning_rate / n;
  for (size_t p = 0; p < weights_.size(); ++p) weights_[p] -= rate * global.values_[p];
}

}  // namespace vipu::popdist::sample
