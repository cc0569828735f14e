// Automatic pipeline split: contiguous runs of layers per IPU that make the
// slowest IPU as fast as possible.
#ifndef VIPU_MODEL_LAYER_BALANCE_H_
#define VIPU_MODEL_LAYER_BALANCE_H_

#include <cstdint>
#include <vector>

namespace vipu::model {

// `unit_seconds[i]` is the time of layer i; `first_extra_s` and
// `last_extra_s` are fixed work pinned to the first and last IPU (embedding,
// heads). Returns the number of layers on each of `ipus` IPUs. Among splits
// with the same bottleneck, later IPUs take as many layers as they can so
// the IPU holding the embedding keeps the fewest. `ipus` must be >= 1.
std::vector<uint32_t> BalanceLayers(const std::vector<double>& unit_seconds, double first_extra_s,
                                    double last_extra_s, uint32_t ipus);

}  // namespace vipu::model

#endif  // VIPU_MODEL_LAYER_BALANCE_H_
