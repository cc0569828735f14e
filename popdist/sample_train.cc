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
#include "popdist/report.h"
#include "popdist/workload_spec.h"

namespace {

namespace model = vipu::model;

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
absl::StatusOr<vipu::popdist::ipuof::IpuofClient> SubDeviceFor(
    const vipu::popdist::ipuof::IpuofClient& gcd, uint32_t needed, uint32_t ipus_per_replica) {
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

constexpr char kRule[] = "-----------------------------------------------------------";

struct Flags {
  std::string config_name = "pretrain_base_128_pod4";
  std::string system;  // empty: the config's
  uint32_t steps = 1;
  uint32_t device_iterations = 1;
  uint64_t seed = 1;
  bool pace = false;
  bool offline = false;
};

void AddFlags(CLI::App& app, Flags& flags) {
  app.add_option("--config", flags.config_name,
                 "pretrain_base_128_pod4, pretrain_large_128_POD64, "
                 "pretrain_large_128_pod16");
  app.add_option("--training-steps", flags.steps, "steps to train")->check(CLI::Range(1u, 100000u));
  app.add_option("--device-iterations", flags.device_iterations)->check(CLI::Range(1u, 1000u));
  app.add_option("--dataset", "generated data only")->default_val("generated");
  app.add_option("--seed", flags.seed, "seed of the generated data of the learned stand-in model")
      ->check(CLI::Range(uint64_t{0}, uint64_t{1} << 62));
  app.add_flag("--pace", flags.pace, "wait the modelled times in real time");
  auto* offline_flag =
      app.add_flag("--offline", flags.offline,
                   "no partition: step times from the in-process model, not the machines");
  app.add_option("--system", flags.system,
                 "pod preset the --offline model assumes (default: the config's)")
      ->needs(offline_flag);
}

const Config* FindConfig(const std::string& name) {
  const Config* config = nullptr;
  for (const Config& c : Configs()) {
    if (name == c.name) config = &c;
  }
  return config;
}

// BERT at sequence length 128, pipelined as the config splits it, with LAMB
// whose state is off-chip and sharded across the replicas.
model::Workload WorkloadFor(const Config& config, uint32_t device_iterations) {
  model::Workload w = *model::WorkloadPreset(config.preset);
  w.seq_len = 128;
  w.micro_batch = config.micro_batch;
  w.grad_accum = config.grad_accum;
  w.device_iterations = device_iterations;
  w.replicas = config.replicas;
  w.ipus_per_replica = static_cast<uint32_t>(config.split.size());
  w.layers_per_ipu = config.split;
  w.optimizer = model::Optimizer::kLamb;
  w.optimizer_state_offchip = true;
  w.replicated_tensor_sharding = true;
  return w;
}

// Under poprun: its replica count wins over the config's, and the instances
// join popdist's collectives. False (said on stderr) when poprun's IPUs per
// replica do not fit the config's pipeline.
bool JoinPoprun(model::Workload& w) {
  if (popdist::getNumTotalReplicas() != w.replicas) {
    std::printf("The number of replicas is overridden by PopRun. The new value is %u.\n",
                popdist::getNumTotalReplicas());
  }
  w.replicas = popdist::getNumTotalReplicas();
  if (!popdist::checkNumIpusPerReplica(w.ipus_per_replica)) {
    std::fprintf(stderr, "poprun --ipus-per-replica (%u) does not match the config (%u)\n",
                 popdist::getNumIpusPerReplica(), w.ipus_per_replica);
    return false;
  }
  if (popdist::getNumInstances() > 1) popdist::init();
  return true;
}

// Attaches to this instance's GCD (poprun sets IPUOF_VIPU_API_GCD_ID), or
// to just this instance's IPUs of it; false (said on stderr) when it cannot.
bool AttachToGcd(const model::Workload& w,
                 std::optional<vipu::popdist::ipuof::IpuofClient>* client) {
  absl::StatusOr<vipu::popdist::ipuof::IpuofClient> c =
      vipu::popdist::ipuof::IpuofClient::Attach(vipu::popdist::ipuof::ProcessEnvironment());
  const uint32_t needed = popdist::getNumLocalReplicas() * w.ipus_per_replica;
  if (!c.ok()) {
    std::fprintf(stderr, "IPUoF: cannot attach: %s (--offline trains without a partition)\n",
                 std::string(c.status().message()).c_str());
    return false;
  }
  if (c->devices().size() < needed) {
    std::fprintf(stderr, "IPUoF: GCD %u of partition %s has %zu IPUs; this instance needs %u\n",
                 c->gcd(), c->partition_id().c_str(), c->devices().size(), needed);
    return false;
  }
  if (c->sub_devices().empty() || needed >= c->devices().size()) {
    std::printf("Attached to partition %s GCD %u: %zu IPUs\n", c->partition_id().c_str(), c->gcd(),
                c->devices().size());
    *client = std::move(*c);
    return true;
  }
  // A reconfigurable partition: take just this instance's IPUs, the device
  // Poplar would number for them.
  absl::StatusOr<vipu::popdist::ipuof::IpuofClient> device =
      SubDeviceFor(*c, needed, w.ipus_per_replica);
  if (!device.ok()) {
    std::fprintf(stderr, "IPUoF: %s\n", std::string(device.status().message()).c_str());
    return false;
  }
  std::printf("Attached to partition %s GCD %u device %u: %zu of its %zu IPUs\n",
              c->partition_id().c_str(), c->gcd(), *device->device_id(), device->devices().size(),
              c->devices().size());
  *client = std::move(*device);
  return true;
}

void PrintDeviceAllocation(const model::Workload& w) {
  std::printf("%s\n-------------------- Device Allocation --------------------\n", kRule);
  std::printf("Embedding  --> IPU 0\n");
  uint32_t layer = 0;
  for (uint32_t ipu = 0; ipu < w.layers_per_ipu.size(); ++ipu) {
    for (uint32_t i = 0; i < w.layers_per_ipu[ipu]; ++i, ++layer) {
      std::printf("%-10s --> IPU %u\n", absl::StrCat("Encoder ", layer).c_str(), ipu);
    }
  }
  std::printf("Pooler     --> IPU 0\nClassifier --> IPU 0\n%s\n", kRule);
}

// The executable cache poprun exports (--executable-cache-path): the entry
// of `key` is found, or written after the (unmodelled) compilation.
void LoadOrCompile(const std::string& key) {
  std::printf("---------- Compilation/Loading from Cache Started ---------\n");
  const std::string cache_dir = Env("POPART_CACHE_DIR");
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
}

// The training loop. Step times come from the machines, in one RunWorkload
// for the whole run or one per step with --pace so that a fault injected
// mid-run stops it, or with --offline from the in-process model. The learned
// numbers: every instance trains the replicas it holds and all-reduces the
// sums, so all of them apply the same update.
class Trainer {
 public:
  Trainer(const Flags& flags, bool distributed, const model::Workload& w,
          const model::SystemSpec& spec, const vipuagent::WorkloadSpec& wire,
          std::optional<vipu::popdist::ipuof::IpuofClient> client)
      : flags_(flags),
        w_(w),
        spec_(spec),
        wire_(wire),
        client_(std::move(client)),
        samples_per_step_(static_cast<uint64_t>(w.micro_batch) * w.grad_accum *
                          w.device_iterations * w.replicas),
        local_samples_(samples_per_step_ / popdist::getNumInstances()),
        run_timeout_(RunTimeout()),
        proxy_(ProxyOptions(flags.seed)),
        first_replica_(distributed ? popdist::getReplicaIndexOffset() : 0),
        local_replicas_(distributed ? popdist::getNumLocalReplicas() : w.replicas) {}

  // Trains every step, prints the metrics and writes the run report poprun's
  // --autoreport-dir asks for; the exit code.
  int Run() {
    const auto start = std::chrono::steady_clock::now();
    PrintHeader();
    for (uint32_t step = 0; step < flags_.steps; ++step) {
      const bool ok = !planned_.empty() || PlanSteps(step);
      if (!AllInstancesOk(ok)) {
        if (ok) std::fprintf(stderr, "Step %u: another instance failed; stopping\n", step);
        return 4;
      }
      TrainStep(step);
    }
    std::printf("%s\n-------------------- Training Metrics ---------------------\n", kRule);
    std::printf("global_batch_size: %llu\ndevice_iterations: %u\ntraining_steps: %u\n",
                static_cast<unsigned long long>(samples_per_step_ / w_.device_iterations),
                w_.device_iterations, flags_.steps);
    // The modelled time is what the pod would take; the wall-clock time is
    // what this simulation took, which is not slept unless --pace.
    const double elapsed =
        std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
    std::printf("Training time: %.3f secs (modelled)\nElapsed: %.3f secs (wall clock)\n%s\n",
                total_time_, elapsed, kRule);
    return WriteReport(elapsed);
  }

 private:
  // poprun's --vipu-server-timeout (checked by Attach); 120 s otherwise.
  static absl::Duration RunTimeout() {
    const int timeout_s = std::atoi(Env("IPUOF_VIPU_API_TIMEOUT").c_str());
    return absl::Seconds(timeout_s > 0 ? timeout_s : 120);
  }

  static vipu::popdist::sample::ProxyModelOptions ProxyOptions(uint64_t seed) {
    vipu::popdist::sample::ProxyModelOptions options;
    options.seed = seed;
    return options;
  }

  // Which numbers are learned and which modelled.
  void PrintHeader() const {
    std::printf(
        "Learned: loss and accuracy of a %zu-parameter stand-in for the MLM and NSP heads, "
        "trained data-parallel on generated data (%u samples per replica per step, %u replicas, "
        "gradients all-reduced across %u instances)\n",
        proxy_.num_params(), w_.micro_batch, w_.replicas, popdist::getNumInstances());
    std::printf("Modelled: step times and throughput (%s); compile: not modelled\n",
                client_ ? "the partition's IPU-Machines" : "the in-process model");
  }

  // Plans the times of the next steps from `step` on; false (said on
  // stderr) when the machines or the model fail.
  bool PlanSteps(uint32_t step) {
    const uint32_t chunk = flags_.pace ? 1 : flags_.steps - step;
    if (client_) return PlanFromMachines(step, chunk);
    absl::StatusOr<model::StepPrediction> p = model::PredictStep(w_, spec_);
    if (!p.ok()) {
      std::fprintf(stderr, "model: %s\n", std::string(p.status().message()).c_str());
      return false;
    }
    planned_.assign(chunk, p->step_time_s);
    return true;
  }

  bool PlanFromMachines(uint32_t step, uint32_t chunk) {
    absl::StatusOr<vipu::popdist::ipuof::WorkloadResult> run =
        client_->Run(wire_, chunk, run_timeout_);
    if (!run.ok()) {
      std::fprintf(stderr, "Step %u: partition %s failed: %s\n", step,
                   client_->partition_id().c_str(), std::string(run.status().message()).c_str());
      return false;
    }
    if (!machines_named_) {
      DescribeMachines(*run);
      machines_named_ = true;
      first_run_ = *run;
    }
    planned_.assign(run->step_time_s.rbegin(), run->step_time_s.rend());
    return true;
  }

  // The run report of poprun's --autoreport-dir (popdist/report.h): 0, or 5
  // (said on stderr) when it cannot be written. The machines answer with
  // step times only, so the per-IPU parts of a step come from the
  // in-process model of the config's system, and the report names that
  // source.
  int WriteReport(double elapsed_s) const {
    if (!popdist::isAutoReportEnabled()) return 0;
    popdist::RunReport report;
    if (client_) {
      namespace fabric = vipu::fabric;
      report.partition_id = client_->partition_id();
      report.gcd = client_->gcd();
      report.device = client_->device_id();
      report.generation = first_run_.generation;
      report.machines = first_run_.agent_ids;
      report.routing = fabric::TableName(static_cast<fabric::RoutingType>(first_run_.routing));
      report.gw_routing =
          fabric::TableName(static_cast<fabric::GwRoutingType>(first_run_.gw_routing));
      report.sync_type = fabric::CliName(static_cast<fabric::SyncType>(first_run_.sync_type));
    }
    report.steps = flags_.steps;
    report.modelled_time_s = total_time_;
    report.elapsed_s = elapsed_s;
    report.samples_per_sec = static_cast<double>(samples_per_step_) * flags_.steps / total_time_;
    report.step_source = absl::StrCat("in-process model of ", flags_.system);
    absl::StatusOr<model::StepPrediction> p = model::PredictStep(w_, spec_);
    if (p.ok()) {
      report.step_time_s = p->step_time_s;
      for (const model::StageTime& st : p->stages) {
        report.ipus.push_back({st.ipu, st.compute_s, st.exchange_s, st.idle_s, st.collectives_s,
                               st.weight_update_s, st.host_s});
      }
    } else {
      absl::StrAppend(&report.step_source, ": ", p.status().message());
    }
    try {
      std::printf("Run report: %s\n", popdist::writeRunReport(report).c_str());
    } catch (const popdist::popdist_error& e) {
      std::fprintf(stderr, "%s\n", e.what());
      return 5;
    }
    return 0;
  }

  // The machines that ran the first steps, and the partition as they configured it.
  void DescribeMachines(const vipu::popdist::ipuof::WorkloadResult& run) const {
    namespace fabric = vipu::fabric;
    std::printf("Steps run on %zu IPU-Machines of partition %s (generation %llu): %s\n",
                run.agent_ids.size(), client_->partition_id().c_str(),
                static_cast<unsigned long long>(run.generation),
                absl::StrJoin(run.agent_ids, ",").c_str());
    std::printf(
        "Partition %s as its machines configured it: routing %s, GW routing %s, sync type %s\n",
        client_->partition_id().c_str(),
        fabric::TableName(static_cast<fabric::RoutingType>(run.routing)).c_str(),
        fabric::TableName(static_cast<fabric::GwRoutingType>(run.gw_routing)).c_str(),
        fabric::CliName(static_cast<fabric::SyncType>(run.sync_type)).c_str());
  }

  // Takes the next planned step time, trains the stand-in model one step and
  // prints the step's line.
  void TrainStep(uint32_t step) {
    double step_time = planned_.back();
    planned_.pop_back();
    int64_t samples = static_cast<int64_t>(local_samples_);
    // The global step ends with the slowest instance and counts the samples
    // of all of them.
    if (popdist::isBackendInitialized()) {
      std::vector<double> times(popdist::getNumInstances());
      popdist::collectives::allGather(&step_time, times.data(), 1, popdist::Type::kDouble);
      for (double t : times) step_time = std::max(step_time, t);
      popdist::collectives::allReduceSum(&samples, 1);
    }
    Pace(flags_.pace, step_time);
    total_time_ += step_time;
    vipu::popdist::sample::StepSums sums =
        proxy_.Accumulate(step, first_replica_, local_replicas_, w_.micro_batch);
    if (popdist::isBackendInitialized()) {
      popdist::collectives::allReduceSum(sums.data(), sums.size());
    }
    proxy_.Apply(sums);
    const double mlm = sums.mlm_loss(), nsp = sums.nsp_loss();
    std::printf(
        "Step: %u / %u - LR: %.2e - total loss: %.3f - mlm_loss: %.3f - nsp_loss: %.3f - "
        "mlm_acc: %.3f %% - nsp_acc: %.3f %%:   0%%|          | %u/%u [modelled %s<?, ?it/s, "
        "throughput: %.1f samples/sec]\n",
        step, flags_.steps - 1, proxy_.learning_rate(), mlm + nsp, mlm, nsp,
        100 * sums.mlm_accuracy(), 100 * sums.nsp_accuracy(), step, flags_.steps,
        Clock(total_time_).c_str(), static_cast<double>(samples) / step_time);
  }

  const Flags flags_;
  const model::Workload w_;
  const model::SystemSpec spec_;
  const vipuagent::WorkloadSpec wire_;
  const std::optional<vipu::popdist::ipuof::IpuofClient> client_;
  const uint64_t samples_per_step_;  // of the whole job
  const uint64_t local_samples_;     // this instance's share
  const absl::Duration run_timeout_;
  vipu::popdist::sample::ProxyModel proxy_;
  const uint32_t first_replica_;
  const uint32_t local_replicas_;
  std::vector<double> planned_;  // step times not yet trained, the next one last
  bool machines_named_ = false;
  vipu::popdist::ipuof::WorkloadResult
      first_run_;  // the machines' first answer: partition and machines
  double total_time_ = 0;
};

}  // namespace

int main(int argc, char** argv) {
  CLI::App app{"BERT pre-training sample for poprun/popdist (modelled times)"};
  Flags flags;
  AddFlags(app, flags);
  CLI11_PARSE(app, argc, argv);

  const Config* config = FindConfig(flags.config_name);
  if (config == nullptr) {
    std::fprintf(stderr, "--config: unknown configuration, got %s\n", flags.config_name.c_str());
    return 2;
  }
  if (flags.system.empty()) flags.system = config->system;
  auto spec = model::SystemSpecForPreset(flags.system);
  if (!spec.ok()) {
    std::fprintf(stderr, "--system: %s\n", std::string(spec.status().message()).c_str());
    return 2;
  }
  model::Workload w = WorkloadFor(*config, flags.device_iterations);

  std::printf("Using config: %s\n", config->name);
  const bool distributed = popdist::isPopdistEnvSet();
  if (distributed && !JoinPoprun(w)) return 2;
  // The workload as the machines receive it: the whole data-parallel job,
  // because a step's gradient reduction spans every replica of the
  // partition; each instance then counts its own share of the samples.
  absl::StatusOr<vipuagent::WorkloadSpec> wire = vipu::popdist::ipuof::ToWorkloadSpec(w);
  if (!wire.ok()) {
    std::fprintf(stderr, "%s\n", std::string(wire.status().message()).c_str());
    return 2;
  }

  std::optional<vipu::popdist::ipuof::IpuofClient> client;
  bool attached = true;
  if (!flags.offline) {
    attached = AttachToGcd(w, &client);
  } else {
    std::printf("Offline: no partition; step times from the in-process model of %s\n",
                flags.system.c_str());
  }
  if (!AllInstancesOk(attached)) return 3;

  PrintDeviceAllocation(w);
  LoadOrCompile(CacheKey(w, flags.offline ? flags.system : "partition"));
  std::printf("%s\n--------------------- Training Started --------------------\n", kRule);
  Trainer trainer(flags, distributed, w, *spec, *wire, std::move(client));
  return trainer.Run();
}
