// PoprunJob: the server, the partition, mpirun with forwarded signals, and the clean-up of one
// launch.
#include "poprun/poprun_job.h"

#include <dirent.h>
#include <fcntl.h>
#include <poll.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <cctype>
#include <cerrno>
#include <csignal>
#include <cstdio>
#include <cstring>
#include <filesystem>
#include <iostream>
#include <optional>
#include <thread>
#include <utility>
#include <vector>

#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_split.h"
#include "base/status_macros.h"
#include "poprun/poprun_target_options.h"
#include "poprun/poprun_topology.h"

extern char** environ;

namespace vipu::poprun {
namespace {

std::atomic<int> g_signal{0};
std::atomic<pid_t> g_mpirun{0};

// Remembers the signal and passes it on to mpirun, which forwards it to
// the instances; poprun then waits for mpirun and cleans up.
void OnSignal(int sig) {
  g_signal.store(sig);
  pid_t pid = g_mpirun.load();
  if (pid > 0) ::kill(pid, sig);
}

void InstallSignalHandlers() {
  struct sigaction sa = {};
  sa.sa_handler = OnSignal;
  sigemptyset(&sa.sa_mask);
  sigaction(SIGINT, &sa, nullptr);
  sigaction(SIGTERM, &sa, nullptr);
}

std::string FindExecutable(const std::string& name, const cli::Environment& env) {
  if (name.find('/') != std::string::npos) return access(name.c_str(), X_OK) == 0 ? name : "";
  for (absl::string_view dir : absl::StrSplit(env.Get("PATH"), ':', absl::SkipEmpty())) {
    std::string path = absl::StrCat(dir, "/", name);
    if (access(path.c_str(), X_OK) == 0) return path;
  }
  return "";
}

uint32_t CountNumaNodes() {
  uint32_t n = 0;
  if (DIR* d = opendir("/sys/devices/system/node")) {
    while (struct dirent* e = readdir(d)) {
      absl::string_view name = e->d_name;
      if (absl::StartsWith(name, "node") && name.size() > 4 && isdigit(name[4])) ++n;
    }
    closedir(d);
  }
  return std::max<uint32_t>(n, 1);
}

// mpirun's environment: poprun's own less IPUOF_CONFIG_PATH (instances
// attach through IPUOF_VIPU_API_*), with `overrides` set. Built before the
// fork, since the child of a threaded process may not allocate.
std::vector<std::string> ChildEnvironment(const EnvList& overrides) {
  std::vector<std::string> out;
  auto overridden = [&overrides](absl::string_view entry) {
    const absl::string_view name = entry.substr(0, entry.find('='));
    if (name == "IPUOF_CONFIG_PATH") return true;
    for (const auto& o : overrides) {
      if (name == o.first) return true;
    }
    return false;
  };
  for (char** e = environ; e != nullptr && *e != nullptr; ++e) {
    if (!overridden(*e)) out.emplace_back(*e);
  }
  for (const auto& [name, value] : overrides) out.push_back(absl::StrCat(name, "=", value));
  return out;
}

// Passes mpirun's stderr on to poprun's as it comes, on a thread of its
// own, and keeps its first kMpirunStderrHead bytes, where mpirun says why it
// refused to start, for ExplainMpirunFailure. Owns the pipe's read end.
// Finish is called once, by the thread that made it.
class StderrRelay {
 public:
  explicit StderrRelay(int fd) : fd_(fd) {
    if (pipe2(wake_, O_CLOEXEC) != 0) wake_[0] = wake_[1] = -1;
    thread_ = std::thread([this] { Relay(); });
  }
  ~StderrRelay() { Finish(); }
  StderrRelay(const StderrRelay&) = delete;
  StderrRelay& operator=(const StderrRelay&) = delete;

  // Once mpirun has exited: passes on what it left in the pipe, without
  // waiting for any process that outlived it and still holds the pipe, and
  // returns the head.
  const std::string& Finish() {
    if (thread_.joinable()) {
      if (wake_[1] >= 0) {
        const char c = 0;
        while (write(wake_[1], &c, 1) < 0 && errno == EINTR) {
        }
      }
      thread_.join();
      for (int fd : {fd_, wake_[0], wake_[1]}) {
        if (fd >= 0) close(fd);
      }
    }
    return head_;
  }

 private:
  void Relay() {
    bool finishing = false;
    // Finishing, at most a full pipe more: a process that outlived mpirun
    // and keeps writing does not hold poprun up.
    size_t left_when_finishing = 1 << 16;
    for (;;) {
      pollfd fds[2] = {{fd_, POLLIN, 0}, {wake_[0], POLLIN, 0}};
      // Finishing: only what is already in the pipe.
      const int n = poll(fds, finishing || wake_[0] < 0 ? 1 : 2, finishing ? 0 : -1);
      if (n < 0 && errno == EINTR) continue;
      if (n <= 0) return;
      if (!finishing && (fds[1].revents & POLLIN) != 0) finishing = true;
      if ((fds[0].revents & (POLLIN | POLLHUP | POLLERR)) == 0) continue;
      char buf[4096];
      const ssize_t got = read(fd_, buf, sizeof buf);
      if (got < 0 && errno == EINTR) continue;
      if (got <= 0) return;
      for (ssize_t done = 0; done < got;) {
        const ssize_t w = write(STDERR_FILENO, buf + done, got - done);
        if (w < 0 && errno == EINTR) continue;
        if (w <= 0) break;
        done += w;
      }
      if (head_.size() < kMpirunStderrHead) {
        head_.append(buf, std::min<size_t>(got, kMpirunStderrHead - head_.size()));
      }
      if (finishing) {
        if (static_cast<size_t>(got) >= left_when_finishing) return;
        left_when_finishing -= got;
      }
    }
  }

  const int fd_;
  int wake_[2] = {-1, -1};
  std::string head_;  // written by the relay thread only, read after the join
  std::thread thread_;
};

// Runs argv with ChildEnvironment(env) (values of the variables argv
// forwards by name) and returns its exit code. When mpirun refused to start
// for a reason it printed and poprun recognises, poprun adds one line of
// its own saying what to change.
int SpawnAndWait(const std::vector<std::string>& argv, const EnvList& env, const Logger& log) {
  std::vector<char*> cargv;
  for (const std::string& a : argv) cargv.push_back(const_cast<char*>(a.c_str()));
  cargv.push_back(nullptr);
  const std::vector<std::string> child_env = ChildEnvironment(env);
  std::vector<char*> cenv;
  for (const std::string& e : child_env) cenv.push_back(const_cast<char*>(e.c_str()));
  cenv.push_back(nullptr);
  int err_pipe[2];
  if (pipe2(err_pipe, O_CLOEXEC) != 0) {
    return ReportError(absl::StrCat("mpirun: pipe failed: ", std::strerror(errno)));
  }
  pid_t pid = fork();
  if (pid < 0) {
    close(err_pipe[0]);
    close(err_pipe[1]);
    return ReportError(absl::StrCat("mpirun: fork failed: ", std::strerror(errno)));
  }
  if (pid == 0) {
    signal(SIGINT, SIG_DFL);
    signal(SIGTERM, SIG_DFL);
    // dup2 clears close-on-exec on the new descriptor only.
    dup2(err_pipe[1], STDERR_FILENO);
    execve(cargv[0], cargv.data(), cenv.data());
    std::fprintf(stderr, "POPRUN ERROR: mpirun: cannot execute %s: %s\n", cargv[0],
                 std::strerror(errno));
    _exit(127);
  }
  close(err_pipe[1]);
  StderrRelay relay(err_pipe[0]);
  g_mpirun.store(pid);
  // A signal that arrived while forking is forwarded now.
  if (int sig = g_signal.load(); sig != 0) ::kill(pid, sig);
  log.Info(absl::StrCat("Waiting for mpirun (PID ", pid, ")"));
  int status = 0;
  while (waitpid(pid, &status, 0) < 0 && errno == EINTR) {
  }
  g_mpirun.store(0);
  const std::string& head = relay.Finish();
  const int code = WIFEXITED(status) ? WEXITSTATUS(status) : 128 + WTERMSIG(status);
  log.Info(absl::StrCat("mpirun (PID ", pid, ") terminated with exit code ", code));
  if (code != 0) {
    if (std::optional<std::string> why = ExplainMpirunFailure(head)) ReportError(*why);
  }
  return code;
}

}  // namespace

PoprunJob::PoprunJob(const PoprunOptions& options, const cli::Environment& env, const Logger& log,
                     const HostProbe& probe)
    : options_(options), env_(env), log_(log), probe_(probe) {}

PoprunJob::~PoprunJob() { Finish(0); }

absl::StatusOr<std::unique_ptr<PoprunJob>> PoprunJob::Prepare(const PoprunOptions& options,
                                                              const cli::Environment& env,
                                                              const Logger& log,
                                                              const HostProbe& probe,
                                                              const FailureReporter& report) {
  auto fail = [&report](absl::Status status) {
    report(status);
    return status;
  };
  std::unique_ptr<PoprunJob> job(new PoprunJob(options, env, log, probe));
  auto env_targets = ParseTargetOptions(env.Get("POPLAR_TARGET_OPTIONS"), "POPLAR_TARGET_OPTIONS");
  if (!env_targets.ok()) return fail(env_targets.status());
  job->env_targets_ = *std::move(env_targets);
  const std::string mpirun =
      FindExecutable(env.Get("POPRUN_MPIRUN").empty() ? "mpirun" : env.Get("POPRUN_MPIRUN"), env);
  if (mpirun.empty()) {
    return fail(absl::NotFoundError(
        "mpirun: not found in PATH (install openmpi-bin, or set POPRUN_MPIRUN)"));
  }
  if (!options.export_config.empty()) {
    auto written = ExportConfig(options, options.export_config);
    if (!written.ok()) return fail(written.status());
    if (*written != options.export_config) {
      log.Warn(absl::StrCat("Configuration file ", options.export_config, " exists; wrote ",
                            *written, " (use --overwrite-config=yes to overwrite)"));
    } else {
      log.Info("Configuration exported to " + *written);
    }
  }
  InstallSignalHandlers();

  LaunchContext& launch = job->launch_;
  launch.mpirun = mpirun;
  launch.ipuof_log_level = env.Get("IPUOF_LOG_LEVEL").empty() ? "WARN" : env.Get("IPUOF_LOG_LEVEL");
  launch.tf_poplar_flags = env.Get("TF_POPLAR_FLAGS");
  std::vector<std::string> forwarded;
  // Engine options set once for poprun apply to every instance alike; only
  // the report directory differs, and popdist derives that per instance.
  launch.forwarded.push_back("POPLAR_ENGINE_OPTIONS");
  for (const std::string& name : launch.forwarded) {
    if (env.vars.count(name)) forwarded.push_back(name);
  }
  launch.forwarded = forwarded;
  job->num_ilds_ = std::max<uint32_t>(options.num_ilds, 1);

  if (absl::Status s = job->PrepareServerAndPartition(); !s.ok()) return fail(s);
  if (int sig = g_signal.load(); sig != 0) {
    log.Warn(absl::StrCat("Interrupted by signal ", sig, " before launch"));
    job->interrupted_before_launch_ = sig;
    return job;
  }
  if (absl::Status s = job->PrepareLaunch(); !s.ok()) return fail(s);
  return job;
}

absl::Status PoprunJob::PrepareServerAndPartition() {
  const PoprunOptions& o = options_;
  if (o.offline_mode) {
    log_.Debug("Offline mode: not contacting the V-IPU server");
    return absl::OkStatus();
  }
  ASSIGN_OR_RETURN(auto server, ResolveServer(o, env_));
  if (server.from_vipu_config) {
    log_.Info("V-IPU server address picked up from 'vipu': " + server.config.Target());
  }
  // Before anything is created: every host's instances must reach every
  // member of the server.
  ASSIGN_OR_RETURN(auto members, server.config.Members());
  ASSIGN_OR_RETURN(auto per_host, MembersPerHost(o.hosts, members, probe_));
  for (size_t i = 0; i < o.hosts.size(); ++i) {
    if (per_host[i] != server.config.host) {
      log_.Info(absl::StrCat(
          "Instances on ", o.hosts[i], " reach the V-IPU server at ", per_host[i],
          members.size() == 1 && !members[0].port_given ? absl::StrCat(":", server.config.port)
                                                        : std::string()));
    }
  }
  launch_.vipu_host_per_host = std::move(per_host);
  conn_ = std::make_unique<cli::Connection>(server.config);
  manager_ = std::make_unique<PartitionManager>(*conn_, o, env_, log_);
  auto plan = manager_->Prepare();
  created_ = manager_->created_partition();
  if (!plan.ok()) return plan.status();
  launch_.vipu_host = server.config.host;
  launch_.vipu_port = server.config.port;
  launch_.vipu_timeout = server.config.timeout_seconds;
  launch_.credentials = CredentialEnvironment(server.config);
  launch_.partition_id = plan->id;
  launch_.num_gcds = plan->num_gcds;
  num_ilds_ = plan->num_ilds;
  partition_targets_ = plan->target_options;
  return absl::OkStatus();
}

absl::Status PoprunJob::PrepareLaunch() {
  const PoprunOptions& o = options_;
  if (o.print_topology || o.verbosity == Verbosity::kDebug) {
    std::vector<std::string> hosts =
        o.hosts.empty() ? std::vector<std::string>{"localhost"} : o.hosts;
    std::cout << RenderTopology(hosts, num_ilds_, o.num_instances, o.num_replicas) << std::flush;
  }
  log_.Debug("Target options from environment: " + FormatTargetOptions(env_targets_));
  if (!o.offline_mode) {
    log_.Debug("Target options from V-IPU partition: " + FormatTargetOptions(partition_targets_));
  }
  const TargetOptions targets = MergeTargetOptions(partition_targets_, env_targets_);
  if (!targets.empty()) {
    launch_.target_options = FormatTargetOptions(targets);
    log_.Debug("Using target options: " + launch_.target_options);
  }
  if (o.hosts.empty()) {
    if (!o.host_subnet.empty()) log_.Debug("No hosts specified; ignoring host-subnet setting");
    log_.Debug("Default network/RNIC for host communication: None");
  } else {
    log_.Debug("Host communication subnet: " + (o.host_subnet.empty() ? "None" : o.host_subnet));
  }

  // Executable cache: the given directory, none for "", else a temporary one
  // shared by the instances of a multi-instance single-host run.
  if (o.executable_cache_path.has_value()) {
    launch_.cache_dir = *o.executable_cache_path;
    if (!launch_.cache_dir.empty()) {
      std::error_code ec;
      std::filesystem::create_directories(launch_.cache_dir, ec);
      if (ec) {
        return absl::FailedPreconditionError(absl::StrCat("--executable-cache-path: cannot create ",
                                                          launch_.cache_dir, ": ", ec.message()));
      }
    }
  } else if (o.num_instances > 1 && o.hosts.empty()) {
    std::string tmpl = (std::filesystem::temp_directory_path() / "poprun-cache-XXXXXX").string();
    if (mkdtemp(tmpl.data()) != nullptr) {
      temp_cache_ = tmpl;
      launch_.cache_dir = tmpl;
      log_.Debug("Executable cache: " + tmpl + " (removed at exit)");
    }
  }

  if (o.process_placement == ProcessPlacement::kSpreadNuma) {
    launch_.numa_nodes = CountNumaNodes();
    launch_.numactl = FindExecutable("numactl", env_);
    if (launch_.numa_nodes > 1 && launch_.numactl.empty()) {
      log_.Warn("numactl not found; instances are not bound to NUMA nodes");
      launch_.numa_nodes = 1;
    }
    log_.Debug(absl::StrCat("NUMA nodes on this host: ", launch_.numa_nodes));
  }
  return absl::OkStatus();
}

int PoprunJob::Launch() {
  if (interrupted_before_launch_ != 0) return 128 + interrupted_before_launch_;
  const std::vector<std::string> argv = BuildMpirunCommand(options_, launch_);
  log_.Info("Running command: " + QuoteCommand(argv));
  int code = SpawnAndWait(argv, launch_.credentials, log_);
  if (int sig = g_signal.load(); sig != 0) {
    log_.Warn(absl::StrCat("Interrupted by signal ", sig));
    if (code == 0) code = 128 + sig;
  }
  return code;
}

int PoprunJob::Finish(int code) {
  if (!temp_cache_.empty()) {
    std::error_code ec;
    std::filesystem::remove_all(temp_cache_, ec);
    temp_cache_.clear();
  }
  if (!created_.empty() && manager_ != nullptr) {
    if (options_.remove_partition) {
      log_.Info("Removing partition " + created_);
      if (absl::Status s = manager_->Remove(created_); !s.ok()) {
        log_.Error(absl::StrCat("Removing partition ", created_, ": ", std::string(s.message())));
        if (code == 0) code = 1;
      }
    } else {
      log_.Info("Keeping partition " + created_ + " (--remove-partition=no)");
    }
    created_.clear();
  }
  return code;
}

}  // namespace vipu::poprun
