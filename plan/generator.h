// Synthetic traces with documented distributions, for planning before a
// site has a log of its own and for tests and benchmarks. The same options
// and seed give the same trace. docs/planning.md states the distributions:
//   sizes    2^k IPUs, k = 0..log2(max_ipus), P(k) proportional to 2^(-k/2);
//            one job in ten asks for a size between 2^(k-1) and 2^k
//            (k >= 2) that the replay rounds up;
//   runs     log-uniform between min_run_s and max_run_s, whole seconds;
//   requests run x U(1, 3), rounded up to a whole minute;
//   arrivals a Poisson process whose rate offers `load` of the pod's IPUs:
//            rate = load x pod_ipus / (E[partition size] x E[run]);
//            or, with span_s, jobs / span_s (the load is then what it is);
//   users    u1 .. uN, user i with weight 1/i (Zipf, s = 1).
#ifndef VIPU_PLAN_GENERATOR_H_
#define VIPU_PLAN_GENERATOR_H_

#include <cstdint>
#include <string>

#include "absl/status/statusor.h"
#include "plan/trace.h"

namespace vipu::plan {

struct GeneratorOptions {
  uint64_t jobs = 1000;
  uint32_t pod_ipus = 64;
  uint32_t max_ipus = 0;  // 0: a quarter of the pod (at least 1)
  double load = 0.9;
  double span_s = 0;  // > 0: arrivals spread over this many seconds instead
  double min_run_s = 60;
  double max_run_s = 86400;
  uint32_t users = 20;
  uint64_t seed = 1;
};

// INVALID_ARGUMENT ("generate: ...") for options out of range: no jobs, a
// pod or max size of 0 or not a power of two, load <= 0, run bounds not
// 1 <= min <= max, no users.
absl::StatusOr<Trace> Generate(const GeneratorOptions& options);

// The trace as CSV that `vipu-plan replay` reads without --columns:
// id,user,submit,ipus,duration,requested.
std::string TraceCsv(const Trace& trace);

// The trace as an SWF 2.2 log (one processor per IPU; users numbered from
// their names' digits), with MaxProcs `pod_ipus` in its header.
std::string TraceSwf(const Trace& trace, uint32_t pod_ipus);

}  // namespace vipu::plan

#endif  // VIPU_PLAN_GENERATOR_H_
