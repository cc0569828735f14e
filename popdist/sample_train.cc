// popdist_sample_train: a BERT pre-training run as Graphcore's BERT logs it,
// on the partition poprun prepared. It attaches to its GCD with the IPUoF
// client (popdist/ipuof_client.h: IPUOF_VIPU_API_*, IPUOF_CONFIG_PATH or
// ~/.ipuof.conf.d/; on a secure pod with vipu's VIPU_CLI_API_* credentials,
// which poprun passes on), places pipeline stages on IPUs and trains. Two kinds of
// numbers come out, and the log says which is which:
//  - learned: the loss and accuracies, of a small stand-in for BERT's heads
//    (popdist/proxy_model.h) trained data-parallel on generated data, its
//    gradients all-reduced across the instances with popdist's collectives;
//  - modelled: step times and throughput, from the machines holding the
//    GCD's IPUs (RunWorkload answers with the compute and link model), or
//    with --offline from the same model in-process. Times are modelled, not
//    slept, unless --pace.
// Compilation is not modelled; the executable cache is kept (an entry is
// written on a miss and found on the next run) but takes no time.
#include <unistd.h>

#include <chrono>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <functional>
#include <optional>
#include <string>
#include <thread>
#include <vector>

#include "CLI/CLI.hpp"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "absl/strings/str_join.h"
#include "fabric/enum_names.h"
#include "model/network_work.h"
#include "model/step_predictor.h"
#include "model/system_spec.h"
#include "model/workload.h"
#include "popdist/backend.h"
#include "popdist/collectives.h"
#include "popdist/context.h"
#include "popdist/ipuof_client.h"
#include "popdist/proxy_model.h"
#include "popdist/workload_spec.h"

namespace {

namespace model = vipu::fabric::model;

struct Config {
  const char* name;
  const char* preset;
  uint32_t micro_batch, grad_accum, replicas;
  std::vector<uint32_t> split;
  const char* system;
};

const std::vector<Config>& Configs() {
  static const auto* configs = new std::vector<Config>{
      {"pretrain_base_128_pod4", "bert-base", 32, 2048, 1, {0, 4, 4, 4}, "bow-pod4"},
      {"pretrain_large_128_POD64", "bert-large", 8, 512, 16, {3, 7, 7, 7}, "bow-pod64"},
      {"pretrain_large_128_pod16", "bert-large", 8, 2040, 4, {3, 7, 7, 7}, "bow-pod16"},
  };
  return *configs;
}

std::string Env(const char* name) {
  const char* v = std::getenv(name);
  return v == nullptr ? "" : v;
}

// True when every instance is; a failing instance says why itself, the
// others learn that one failed, so all stop together instead of hanging in
// the next collective.
bool AllInstancesOk(bool ok) {
  int64_t failed = ok ? 0 : 1;
  if (popdist::isBackendInitialized()) popdist::collectives::allReduceSum(&failed, 1);
  return failed == 0;
}

// The device of a reconfigurable partition's GCD that holds this
// instance's `needed` IPUs: under poprun the one popdist names, else the
// first device of that many IPUs.
absl::StatusOr<vipu::ipuof::IpuofClient> SubDeviceFor(const vipu::ipuof::IpuofClient& gcd,
                                                      uint32_t needed, uint32_t ipus_per_replica) {
  if (popdist::isPopdistEnvSet()) {
    try {
      return gcd.Device(popdist::getDeviceId(ipus_per_replica));
    } catch (const popdist::popdist_error& e) {
      return absl::FailedPreconditionError(e.what());
    }
  }
  if (needed == 1) return gcd.Device(0);
  for (const vipu::fabric::SubDevice& d : gcd.sub_devices()) {
    if (d.count == needed) return gcd.Device(d.id);
  }
  return absl::NotFoundError(absl::StrCat("no device of ", needed, " IPUs in GCD ", gcd.gcd(),
                                          " of partition ", gcd.partition_id()));
}

std::string CacheKey(const model::Workload& w, const std::string& system) {
  std::string text = absl::StrCat(
      w.name, "|", w.seq_len, "|", w.micro_batch, "|", w.grad_accum, "|", w.device_iterations, "|",
      w.replicas, "|", w.ipus_per_replica, "|", system, "|", Env("POPLAR_TARGET_OPTIONS"));
  for (uint32_t l : w.layers_per_ipu) absl::StrAppend(&text, ",", l);
  return absl::StrFormat("%016x", std::hash<std::string>()(text));
}

std::string Clock(double seconds) {
  const long s = std::lround(seconds);
  return absl::StrFormat("%02d:%02d", s / 60, s % 60);
}

void Pace(bool pace, double seconds) {
  if (pace) std::this_thread::sleep_for(std::chrono::duration<double>(seconds));
}

}  // namespace

int main(int argc, char** argv) {
  CLI::App app{"BERT pre-training sample for poprun/popdist (modelled times)"};
  std::string config_name = "pretrain_base_128_pod4", system;
  uint32_t steps = 1, device_iterations = 1;
  uint64_t seed = 1;
  bool pace = false, offline = false;
  app.add_option("--config", config_name,
                 "pretrain_base_128_pod4, pretrain_large_128_POD64, "
                 "pretrain_large_128_pod16");
  app.add_option("--training-steps", steps, "steps to train")->check(CLI::Range(1u, 100000u));
  app.add_option("--device-iterations", device_iterations)->check(CLI::Range(1u, 1000u));
  app.add_option("--dataset", "generated data only")->default_val("generated");
  app.add_option("--seed", seed, "seed of the generated data of the learned stand-in model")
      ->check(CLI::Range(uint64_t{0}, uint64_t{1} << 62));
  app.add_flag("--pace", pace, "wait the modelled times in real time");
  auto* offline_flag = app.add_flag(
      "--offline", offline, "no partition: step times from the in-process model, not the machines");
  app.add_option("--system", system,
                 "pod preset the --offline model assumes (default: the config's)")
      ->needs(offline_flag);
  CLI11_PARSE(app, argc, argv);

  const Config* config = nullptr;
  for (const Config& c : Configs()) {
    if (config_name == c.name) config = &c;
  }
  if (config == nullptr) {
    std::fprintf(stderr, "--config: unknown configuration, got %s\n", config_name.c_str());
    return 2;
  }
  if (system.empty()) system = config->system;
  auto spec = model::SystemSpecForPreset(system);
  if (!spec.ok()) {
    std::fprintf(stderr, "--system: %s\n", std::string(spec.status().message()).c_str());
    return 2;
  }
  model::Workload w = *model::WorkloadPreset(config->preset);
  w.seq_len = 128;
  w.micro_batch = config->micro_batch;
  w.grad_accum = config->grad_accum;
  w.device_iterations = device_iterations;
  w.replicas = config->replicas;
  w.ipus_per_replica = static_cast<uint32_t>(config->split.size());
  w.layers_per_ipu = config->split;
  w.optimizer = model::Optimizer::kLamb;
  w.optimizer_state_offchip = true;
  w.replicated_tensor_sharding = true;

  std::printf("Using config: %s\n", config->name);
  const bool distributed = popdist::isPopdistEnvSet();
  if (distributed) {
    if (popdist::getNumTotalReplicas() != w.replicas) {
      std::printf("The number of replicas is overridden by PopRun. The new value is %u.\n",
                  popdist::getNumTotalReplicas());
    }
    w.replicas = popdist::getNumTotalReplicas();
    if (!popdist::checkNumIpusPerReplica(w.ipus_per_replica)) {
      std::fprintf(stderr, "poprun --ipus-per-replica (%u) does not match the config (%u)\n",
                   popdist::getNumIpusPerReplica(), w.ipus_per_replica);
      return 2;
    }
    if (popdist::getNumInstances() > 1) popdist::init();
  }
  // The workload as the machines receive it: the whole data-parallel job,
  // because a step's gradient reduction spans every replica of the
  // partition; each instance then counts its own share of the samples.
  absl::StatusOr<vipuagent::WorkloadSpec> wire = vipu::ipuof::ToWorkloadSpec(w);
  if (!wire.ok()) {
    std::fprintf(stderr, "%s\n", std::string(wire.status().message()).c_str());
    return 2;
  }

  // Attach to this instance's GCD (poprun sets IPUOF_VIPU_API_GCD_ID).
  std::optional<vipu::ipuof::IpuofClient> client;
  bool attached = true;
  if (!offline) {
    absl::StatusOr<vipu::ipuof::IpuofClient> c =
        vipu::ipuof::IpuofClient::Attach(vipu::ipuof::ProcessEnvironment());
    const uint32_t needed = popdist::getNumLocalReplicas() * w.ipus_per_replica;
    if (!c.ok()) {
      std::fprintf(stderr, "IPUoF: cannot attach: %s (--offline trains without a partition)\n",
                   std::string(c.status().message()).c_str());
      attached = false;
    } else if (c->devices().size() < needed) {
      std::fprintf(stderr, "IPUoF: GCD %u of partition %s has %zu IPUs; this instance needs %u\n",
                   c->gcd(), c->partition_id().c_str(), c->devices().size(), needed);
      attached = false;
    } else if (!c->sub_devices().empty() && needed < c->devices().size()) {
      // A reconfigurable partition: take just this instance's IPUs, the
      // device Poplar would number for them.
      absl::StatusOr<vipu::ipuof::IpuofClient> device =
          SubDeviceFor(*c, needed, w.ipus_per_replica);
      if (!device.ok()) {
        std::fprintf(stderr, "IPUoF: %s\n", std::string(device.status().message()).c_str());
        attached = false;
      } else {
        std::printf("Attached to partition %s GCD %u device %u: %zu of its %zu IPUs\n",
                    c->partition_id().c_str(), c->gcd(), *device->device_id(),
                    device->devices().size(), c->devices().size());
        client = std::move(*device);
      }
    } else {
      std::printf("Attached to partition %s GCD %u: %zu IPUs\n", c->partition_id().c_str(),
                  c->gcd(), c->devices().size());
      client = std::move(*c);
    }
  } else {
    std::printf("Offline: no partition; step times from the in-process model of %s\n",
                system.c_str());
  }
  if (!AllInstancesOk(attached)) return 3;

  const char* rule = "-----------------------------------------------------------";
  std::printf("%s\n-------------------- Device Allocation --------------------\n", rule);
  std::printf("Embedding  --> IPU 0\n");
  uint32_t layer = 0;
  for (uint32_t ipu = 0; ipu < w.layers_per_ipu.size(); ++ipu) {
    for (uint32_t i = 0; i < w.layers_per_ipu[ipu]; ++i, ++layer) {
      std::printf("%-10s --> IPU %u\n", absl::StrCat("Encoder ", layer).c_str(), ipu);
    }
  }
  std::printf("Pooler     --> IPU 0\nClassifier --> IPU 0\n%s\n", rule);
  std::printf("---------- Compilation/Loading from Cache Started ---------\n");

  // The executable cache poprun exports (--executable-cache-path).
  const std::string cache_dir = Env("POPART_CACHE_DIR");
  const std::string key = CacheKey(w, offline ? system : "partition");
  const std::string entry = cache_dir.empty() ? "" : cache_dir + "/" + key + ".popef";
  if (!entry.empty() && std::filesystem::exists(entry)) {
    std::printf("Loading executable from cache: %s\n", entry.c_str());
  } else {
    std::printf("Graph compilation: 100%%|██████████| 100/100 (compile: not modelled)\n");
    if (!entry.empty()) {
      const std::string tmp = absl::StrCat(entry, ".", ::getpid());
      std::ofstream(tmp) << key << "\n";
      std::filesystem::rename(tmp, entry);
      std::printf("Saved executable to cache: %s\n", entry.c_str());
    }
  }
  std::printf("Compiled/Loaded model (compile: not modelled)\n");
  std::printf("%s\n--------------------- Training Started --------------------\n", rule);

  // Step times: from the machines, in one RunWorkload for the whole run, or
  // one per step with --pace so that a fault injected mid-run stops it.
  const uint64_t samples_per_step =
      static_cast<uint64_t>(w.micro_batch) * w.grad_accum * w.device_iterations * w.replicas;
  const uint64_t local_samples = samples_per_step / popdist::getNumInstances();
  // poprun's --vipu-server-timeout (checked by Attach); 120 s otherwise.
  const int timeout_s = std::atoi(Env("IPUOF_VIPU_API_TIMEOUT").c_str());
  const absl::Duration run_timeout = absl::Seconds(timeout_s > 0 ? timeout_s : 120);
  // The learned numbers: every instance trains the replicas it holds and
  // all-reduces the sums, so all of them apply the same update.
  vipu::sample::ProxyModelOptions proxy_options;
  proxy_options.seed = seed;
  vipu::sample::ProxyModel proxy(proxy_options);
  const uint32_t first_replica = distributed ? popdist::getReplicaIndexOffset() : 0;
  const uint32_t local_replicas = distributed ? popdist::getNumLocalReplicas() : w.replicas;
  std::printf(
      "Learned: loss and accuracy of a %zu-parameter stand-in for the MLM and NSP heads, trained "
      "data-parallel on generated data (%u samples per replica per step, %u replicas, gradients "
      "all-reduced across %u instances)\n",
      proxy.num_params(), w.micro_batch, w.replicas, popdist::getNumInstances());
  std::printf("Modelled: step times and throughput (%s); compile: not modelled\n",
              client ? "the partition's IPU-Machines" : "the in-process model");
  std::vector<double> planned;  // step times not yet trained
  bool machines_named = false;
  double total_time = 0;
  for (uint32_t step = 0; step < steps; ++step) {
    bool ok = true;
    if (planned.empty()) {
      const uint32_t chunk = pace ? 1 : steps - step;
      if (client) {
        absl::StatusOr<vipu::ipuof::WorkloadResult> run = client->Run(*wire, chunk, run_timeout);
        if (!run.ok()) {
          std::fprintf(stderr, "Step %u: partition %s failed: %s\n", step,
                       client->partition_id().c_str(), std::string(run.status().message()).c_str());
          ok = false;
        } else {
          if (!machines_named) {
            std::printf("Steps run on %zu IPU-Machines of partition %s (generation %llu): %s\n",
                        run->agent_ids.size(), client->partition_id().c_str(),
                        static_cast<unsigned long long>(run->generation),
                        absl::StrJoin(run->agent_ids, ",").c_str());
            std::printf(
                "Partition %s as its machines configured it: routing %s, GW routing %s, sync "
                "type %s\n",
                client->partition_id().c_str(),
                vipu::fabric::TableName(static_cast<vipu::fabric::RoutingType>(run->routing))
                    .c_str(),
                vipu::fabric::TableName(static_cast<vipu::fabric::GwRoutingType>(run->gw_routing))
                    .c_str(),
                vipu::fabric::CliName(static_cast<vipu::fabric::SyncType>(run->sync_type)).c_str());
            machines_named = true;
          }
          planned.assign(run->step_time_s.rbegin(), run->step_time_s.rend());
        }
      } else {
        absl::StatusOr<model::StepPrediction> p = model::PredictStep(w, *spec);
        if (!p.ok()) {
          std::fprintf(stderr, "model: %s\n", std::string(p.status().message()).c_str());
          ok = false;
        } else {
          planned.assign(chunk, p->step_time_s);
        }
      }
    }
    if (!AllInstancesOk(ok)) {
      if (ok) std::fprintf(stderr, "Step %u: another instance failed; stopping\n", step);
      return 4;
    }
    double step_time = planned.back();
    planned.pop_back();
    int64_t samples = static_cast<int64_t>(local_samples);
    // The global step ends with the slowest instance and counts the samples
    // of all of them.
    if (popdist::isBackendInitialized()) {
      std::vector<double> times(popdist::getNumInstances());
      popdist::collectives::allGather(&step_time, times.data(), 1, popdist::Type::kDouble);
      for (double t : times) step_time = std::max(step_time, t);
      popdist::collectives::allReduceSum(&samples, 1);
    }
    Pace(pace, step_time);
    total_time += step_time;
    vipu::sample::StepSums sums =
        proxy.Accumulate(step, first_replica, local_replicas, w.micro_batch);
    if (popdist::isBackendInitialized()) {
      popdist::collectives::allReduceSum(sums.data(), sums.size());
    }
    proxy.Apply(sums);
    const double mlm = sums.mlm_loss(), nsp = sums.nsp_loss();
    std::printf(
        "Step: %u / %u - LR: %.2e - total loss: %.3f - mlm_loss: %.3f - nsp_loss: %.3f - "
        "mlm_acc: %.3f %% - nsp_acc: %.3f %%:   0%%|          | %u/%u [%s<?, ?it/s, throughput: "
        "%.1f samples/sec]\n",
        step, steps - 1, proxy.learning_rate(), mlm + nsp, mlm, nsp, 100 * sums.mlm_accuracy(),
        100 * sums.nsp_accuracy(), step, steps, Clock(total_time).c_str(),
        static_cast<double>(samples) / step_time);
  }
  std::printf("%s\n-------------------- Training Metrics ---------------------\n", rule);
  std::printf("global_batch_size: %llu\ndevice_iterations: %u\ntraining_steps: %u\n",
              static_cast<unsigned long long>(samples_per_step / w.device_iterations),
              w.device_iterations, steps);
  std::printf("Training time: %.3f secs\n%s\n", total_time, rule);
  return 0;
}
