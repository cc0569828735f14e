// Model speed: wall time of one model::PredictStep (the agents call it for
// every RunWorkload, `ipu-model predict` once per run) for BERT-Large on each
// pod size, with the pipeline split given and with it balanced automatically.
// Every call is timed on its own; reports p50/p99/p999 and the max.
//
//   model_speed_bench [--calls 20000] [--pods pod4,pod16,pod64,pod128,pod256] [--json]
#include <CLI/CLI.hpp>
#include <algorithm>
#include <chrono>
#include <cstdio>
#include <string>
#include <vector>

#include "absl/strings/str_split.h"
#include "model/step_predictor.h"
#include "model/system_spec.h"
#include "model/workload.h"

namespace {

namespace model = vipu::model;
using Clock = std::chrono::steady_clock;

double At(const std::vector<double>& sorted, double p) {
  return sorted[std::min(sorted.size() - 1,
                         static_cast<size_t>(p * static_cast<double>(sorted.size())))];
}

// BERT-Large phase-1 pre-training as the public BERT-Large recipe runs it: 4
// IPUs per replica (embedding and heads on IPU 0, hence 3,7,7,7), one replica
// per 4 IPUs of the pod, LAMB with replicated tensor sharding.
model::Workload BertLarge(uint32_t ipus, bool auto_balanced) {
  model::Workload w = *model::WorkloadPreset("bert-large");
  w.seq_len = 128;
  w.micro_batch = 8;
  w.grad_accum = 512;
  w.ipus_per_replica = 4;
  w.replicas = ipus / 4;
  if (!auto_balanced) w.layers_per_ipu = {3, 7, 7, 7};
  w.optimizer = model::Optimizer::kLamb;
  w.replicated_tensor_sharding = true;
  w.optimizer_state_offchip = true;
  return w;
}

}  // namespace

int main(int argc, char** argv) {
  int calls = 20000;
  std::string pods = "pod4,pod16,pod64,pod128,pod256";
  bool json = false;
  CLI::App app{"model::PredictStep speed"};
  app.add_option("--calls", calls, "timed calls per case")
      ->check(CLI::Range(10, 10000000))
      ->capture_default_str();
  app.add_option("--pods", pods, "comma list of pod presets")->capture_default_str();
  app.add_flag("--json", json, "one JSON object per line instead of the table");
  CLI11_PARSE(app, argc, argv);

  if (!json) {
    std::printf(
        "| pod | workload | split | step time (model) | p50 us | p99 us | p999 us | max us |\n"
        "|---|---|---|---|---|---|---|---|\n");
  }
  for (const std::string& pod : std::vector<std::string>(absl::StrSplit(pods, ','))) {
    auto system = model::SystemSpecForPreset(pod);
    if (!system.ok()) {
      std::fprintf(stderr, "--pods: %s\n", std::string(system.status().message()).c_str());
      return 2;
    }
    for (bool auto_balanced : {false, true}) {
      const model::Workload w = BertLarge(system->num_ipus, auto_balanced);
      auto first = model::PredictStep(w, *system);
      if (!first.ok()) {
        std::fprintf(stderr, "%s: %s\n", pod.c_str(),
                     std::string(first.status().message()).c_str());
        return 1;
      }
      std::vector<double> us;
      us.reserve(calls);
      double sink = 0;
      for (int i = 0; i < calls / 10; ++i) sink += model::PredictStep(w, *system)->step_time_s;
      for (int i = 0; i < calls; ++i) {
        const auto t0 = Clock::now();
        auto p = model::PredictStep(w, *system);
        const auto t1 = Clock::now();
        sink += p->step_time_s;  // keeps the call from being optimised away
        us.push_back(std::chrono::duration<double, std::micro>(t1 - t0).count());
      }
      if (sink <= 0) return 1;
      std::sort(us.begin(), us.end());
      const char* split = auto_balanced ? "auto" : "3,7,7,7";
      if (json) {
        std::printf(
            "{\"pod\":\"%s\",\"workload\":\"bert-large\",\"replicas\":%u,\"ipus_per_replica\":4,"
            "\"split\":\"%s\",\"step_time_s\":%.6f,\"calls\":%d,\"p50_us\":%.2f,\"p99_us\":%.2f,"
            "\"p999_us\":%.2f,\"max_us\":%.2f}\n",
            pod.c_str(), w.replicas, split, first->step_time_s, calls, At(us, 0.5), At(us, 0.99),
            At(us, 0.999), us.back());
      } else {
        std::printf("| %s | bert-large, %u x 4 IPUs | %s | %.1f ms | %.1f | %.1f | %.1f | %.1f |\n",
                    pod.c_str(), w.replicas, split, first->step_time_s * 1e3, At(us, 0.5),
                    At(us, 0.99), At(us, 0.999), us.back());
      }
      std::fflush(stdout);
    }
  }
  return 0;
}
