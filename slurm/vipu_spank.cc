// vipu_spank: the Slurm SPANK plugin that gives a job asking for --ipus=N
// its own V-IPU partition slurm_<jobid> for the job's life.
//
// Where each part runs, and why there:
// - srun/sbatch/salloc (local and allocator contexts): the options are
//   checked (power of two, --ipus-gcds divides --ipus) so that a bad request
//   is refused before the job is submitted.
// - slurmstepd, before the step's tasks start (remote init_post_opt, as
//   root): on node 0 of the job the first step creates the partition and
//   waits for ACTIVE, later steps find it; every step sets IPUOF_VIPU_API_*
//   for its tasks. Creation is not done in the job prolog because a failing
//   prolog drains the node: an unreachable server or a full pod would take
//   nodes out of service instead of failing one job. For the same reason a
//   failure does not fail slurmstepd's init (which drains the node of a
//   batch job): the step's tasks print the reason and exit 1 before the
//   user's command runs.
// - the job epilog (job script context, on every node of the job at its end
//   for any reason): removes the partition; a missing one counts as removed,
//   so the epilogs of several nodes and a second end of the same job id are
//   harmless. It never fails, for the same reason as above: a server that
//   cannot be reached is logged, and vipu-slurm-sweep removes what is left.
// spank.h declares the plugin's entry points outside its extern "C" block.
extern "C" {
#include <slurm/spank.h>
}
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <cstdint>
#include <string>
#include <thread>
#include <utility>
#include <vector>

#include "absl/status/status.h"
#include "absl/strings/str_cat.h"
#include "base/status_macros.h"
#include "slurm/spank_config.h"
#include "slurm/vipu_runner.h"

extern "C" {
// SPANK_PLUGIN() in C++ would give these internal linkage; Slurm looks them
// up by name.
extern const char plugin_name[] = "vipu_spank";
extern const char plugin_type[] = "spank";
extern const unsigned int plugin_version = SLURM_VERSION_NUMBER;
extern const unsigned int spank_plugin_version = 1;
}

namespace {

using vipu::slurm::IpuRequest;
using vipu::slurm::PluginConfig;
using vipu::slurm::VipuRunner;

// Slurm's ids of steps that are not user steps (slurm.h); the extern step
// holds no tasks of the user.
constexpr uint32_t kExternStep = 0xfffffffc;
constexpr uint32_t kBatchStep = 0xfffffffb;

std::string StepName(uint32_t step) {
  return step == kBatchStep ? std::string("batch") : absl::StrCat(step);
}

// Per-process state: each Slurm process loads the plugin once and calls it
// from one thread.
PluginConfig g_config;
IpuRequest g_request;
bool g_gcds_given = false;
bool g_option_error = false;
// Why this step's partition could not be made; the step's tasks report it
// and fail instead of running (see slurm_spank_task_init).
std::string g_step_error;

void Fail(const std::string& message) { slurm_error("vipu_spank: %s", message.c_str()); }

int OnIpus(int, const char* optarg, int) {
  auto n = vipu::slurm::ParseIpus(optarg ? optarg : "");
  if (!n.ok()) {
    Fail(std::string(n.status().message()));
    g_option_error = true;
    return -1;
  }
  g_request.ipus = *n;
  return 0;
}

int OnGcds(int, const char* optarg, int) {
  auto n = vipu::slurm::ParseGcds(optarg ? optarg : "");
  if (!n.ok()) {
    Fail(std::string(n.status().message()));
    g_option_error = true;
    return -1;
  }
  g_request.gcds = *n;
  g_gcds_given = true;
  return 0;
}

int OnReconfigurable(int, const char*, int) {
  g_request.reconfigurable = true;
  return 0;
}

char kIpus[] = "ipus";
char kIpusArg[] = "N";
char kIpusUsage[] =
    "N IPUs for the job: V-IPU partition slurm_<jobid> of N IPUs (a power of two), "
    "ACTIVE before the first task, removed when the job ends";
char kGcds[] = "ipus-gcds";
char kGcdsArg[] = "G";
char kGcdsUsage[] = "the job's partition has G GCDs (a power of two dividing --ipus)";
char kReconfigurable[] = "ipus-reconfigurable";
char kReconfigurableUsage[] = "the job's partition is reconfigurable";

spank_option g_options[] = {
    {kIpus, kIpusArg, kIpusUsage, 1, 0, OnIpus},
    {kGcds, kGcdsArg, kGcdsUsage, 1, 0, OnGcds},
    {kReconfigurable, nullptr, kReconfigurableUsage, 0, 0, OnReconfigurable},
};

uint32_t JobId(spank_t sp) {
  uint32_t id = 0;
  if (spank_get_item(sp, S_JOB_ID, &id) == ESPANK_SUCCESS && id != 0) return id;
  const char* env = getenv("SLURM_JOB_ID");
  return env ? static_cast<uint32_t>(strtoul(env, nullptr, 10)) : 0;
}

// Sets the variables poprun, the IPUoF client and `vipu get partition` read.
absl::Status SetTaskEnvironment(spank_t sp, const std::string& partition) {
  const std::string port = absl::StrCat(g_config.api_port);
  const std::pair<const char*, const std::string*> vars[] = {
      {"IPUOF_VIPU_API_HOST", &g_config.api_host},
      {"IPUOF_VIPU_API_PORT", &port},
      {"IPUOF_VIPU_API_PARTITION_ID", &partition},
  };
  for (const auto& [name, value] : vars) {
    if (spank_err_t rc = spank_setenv(sp, name, value->c_str(), 1); rc != ESPANK_SUCCESS) {
      return absl::InternalError(absl::StrCat("cannot set ", name, ": ", spank_strerror(rc)));
    }
  }
  return absl::OkStatus();
}

// Other nodes of a multi-node job: wait until node 0 made it ACTIVE.
absl::Status AwaitPartition(VipuRunner& vipu, const std::string& id) {
  const auto deadline =
      std::chrono::steady_clock::now() + std::chrono::seconds(g_config.api_timeout_seconds);
  auto delay = std::chrono::milliseconds(50);
  for (;;) {
    auto info = vipu.GetPartition(id);
    if (info.ok() && info->active) return absl::OkStatus();
    if (!info.ok() && !absl::IsNotFound(info.status())) return info.status();
    if (std::chrono::steady_clock::now() + delay > deadline) {
      return absl::DeadlineExceededError(absl::StrCat("partition ", id, " not ACTIVE within ",
                                                      g_config.api_timeout_seconds,
                                                      " s (api-timeout)"));
    }
    // Polling a remote state: no event to wait on from here.
    std::this_thread::sleep_for(delay);
    delay = std::min(delay * 2, std::chrono::milliseconds(1000));
  }
}

// Every entry point Slurm calls first in a process gets the plugstack.conf
// arguments: init in most, job_epilog alone in the epilog's process.
bool LoadConfig(int ac, char** av) {
  auto config = vipu::slurm::ParsePluginArgs(std::vector<std::string>(av, av + ac));
  if (!config.ok()) {
    Fail(std::string(config.status().message()));
    return false;
  }
  g_config = *config;
  return true;
}

// Node 0 of the job: the partition exists and is ACTIVE when this returns
// OK. Creation is tried first, since the job's first step is the common
// case. A partition of this id and the requested shape is the job's own,
// made by another step (a batch script's step, then its sruns, which may run
// at once): it is waited for. One of another shape was left by an earlier
// life of the job id (Slurm's state reset, a node that failed before its
// epilog) and is replaced. *created tells whether this call made it.
absl::Status EnsurePartition(VipuRunner& vipu, const std::string& id, bool* created) {
  *created = false;
  absl::Status s = vipu.CreatePartition(id, g_request);
  if (!absl::IsAlreadyExists(s)) {
    *created = s.ok();
    return s;
  }
  ASSIGN_OR_RETURN(auto existing, vipu.GetPartition(id));
  if (existing.size == g_request.ipus && existing.gcds == g_request.gcds) {
    return existing.active ? absl::OkStatus() : AwaitPartition(vipu, id);
  }
  if (s = vipu.RemovePartition(id); !s.ok()) return s;
  s = vipu.CreatePartition(id, g_request);
  *created = s.ok();
  return s;
}

int CreateForStep(spank_t sp) {
  uint32_t step = 0;
  uint32_t node = 0;
  spank_get_item(sp, S_JOB_STEPID, &step);
  spank_get_item(sp, S_JOB_NODEID, &node);
  if (step == kExternStep) return 0;
  const uint32_t job = JobId(sp);
  const std::string id = vipu::slurm::PartitionId(job);
  const std::string what = absl::StrCat("--ipus=", g_request.ipus, ": partition ", id, ": ");
  VipuRunner vipu(g_config);
  if (absl::Status s = vipu.LoadCredentials(); !s.ok()) {
    g_step_error = what + std::string(s.message());
    Fail(g_step_error);
    return 0;
  }
  bool created = false;
  absl::Status s = node == 0 ? EnsurePartition(vipu, id, &created) : AwaitPartition(vipu, id);
  if (s.ok()) {
    s = SetTaskEnvironment(sp, id);
    if (!s.ok() && created) (void)vipu.RemovePartition(id);
  }
  if (!s.ok()) {
    g_step_error = what + std::string(s.message());
    Fail(g_step_error);
    return 0;
  }
  slurm_info("vipu_spank: job %u step %s: partition %s of %u IPUs %s", job, StepName(step).c_str(),
             id.c_str(), g_request.ipus, created ? "created" : "reused");
  return 0;
}

}  // namespace

extern "C" {

int slurm_spank_init(spank_t sp, int ac, char** av) {
  if (!LoadConfig(ac, av)) return -1;
  const spank_context_t ctx = spank_context();
  if (ctx == S_CTX_LOCAL || ctx == S_CTX_REMOTE || ctx == S_CTX_ALLOCATOR ||
      ctx == S_CTX_JOB_SCRIPT) {
    for (spank_option& option : g_options) {
      if (spank_err_t rc = spank_option_register(sp, &option); rc != ESPANK_SUCCESS) {
        Fail(absl::StrCat("cannot register --", option.name, ": ", spank_strerror(rc)));
        return -1;
      }
    }
  }
  return 0;
}

int slurm_spank_init_post_opt(spank_t sp, int, char**) {
  if (g_option_error) return -1;
  if (absl::Status s = vipu::slurm::CheckRequest(g_request, g_gcds_given); !s.ok()) {
    Fail(std::string(s.message()));
    return -1;
  }
  if (g_request.ipus == 0 || spank_context() != S_CTX_REMOTE) return 0;
  return CreateForStep(sp);
}

// A step whose partition could not be made fails in its tasks rather than
// in slurmstepd's init: a failing init of a batch step drains the node,
// and srun would only say "Plugin initialization failed". Here the reason
// reaches the job's stderr (srun's terminal, the batch output file) once,
// from task 0, and no user command runs.
int slurm_spank_task_init(spank_t sp, int, char**) {
  if (g_step_error.empty()) return 0;
  uint32_t task = 0;
  spank_get_item(sp, S_TASK_GLOBAL_ID, &task);
  if (task == 0) {
    const std::string line = absl::StrCat("vipu_spank: ", g_step_error, "\n");
    // Nothing to do if stderr is gone: the step fails either way.
    if (write(STDERR_FILENO, line.data(), line.size()) < 0) _exit(1);
  }
  _exit(1);
}

int slurm_spank_job_epilog(spank_t sp, int ac, char** av) {
  if (!LoadConfig(ac, av)) return 0;
  char* value = nullptr;
  const spank_err_t asked = spank_option_getopt(sp, &g_options[0], &value);
  // ESPANK_ERROR: the job did not ask for IPUs, so it made no partition.
  if (asked == ESPANK_ERROR) return 0;
  const uint32_t job = JobId(sp);
  if (job == 0) return 0;
  const std::string id = vipu::slurm::PartitionId(job);
  VipuRunner vipu(g_config);
  absl::Status s = vipu.LoadCredentials();
  if (s.ok()) s = vipu.RemovePartition(id);
  if (!s.ok()) {
    Fail(absl::StrCat("job ", job, ": cannot remove partition ", id,
                      " (vipu-slurm-sweep will): ", s.message()));
  } else {
    slurm_info("vipu_spank: job %u: partition %s removed", job, id.c_str());
  }
  return 0;
}

}  // extern "C"
