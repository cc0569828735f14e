// RunPoprun: one whole poprun run, from parsing to mpirun and clean-up, forwarding signals.
#include "poprun/poprun_runner.h"

#include <dirent.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include <atomic>
#include <cerrno>
#include <csignal>
#include <cstdio>
#include <filesystem>
#include <iostream>

#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_split.h"
#include "cli/common/connection.h"
#include "poprun/poprun_hosts.h"
#include "poprun/poprun_launch.h"
#include "poprun/poprun_log.h"
#include "poprun/poprun_options.h"
#include "poprun/poprun_partition.h"
#include "poprun/poprun_target_options.h"
#include "poprun/poprun_topology.h"
#include "poprun/poprun_validation.h"

extern char** environ;

namespace vipu::cli::poprun {
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

int Fail(const std::string& message) {
  std::fprintf(stderr, "POPRUN ERROR: %s\n", message.c_str());
  return 1;
}

std::string FindExecutable(const std::string& name, const Environment& env) {
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

// Runs argv with ChildEnvironment(env) (values of the variables argv
// forwards by name) and returns its exit code.
int SpawnAndWait(const std::vector<std::string>& argv, const EnvList& env, const Logger& log) {
  std::vector<char*> cargv;
  for (const std::string& a : argv) cargv.push_back(const_cast<char*>(a.c_str()));
  cargv.push_back(nullptr);
  const std::vector<std::string> child_env = ChildEnvironment(env);
  std::vector<char*> cenv;
  for (const std::string& e : child_env) cenv.push_back(const_cast<char*>(e.c_str()));
  cenv.push_back(nullptr);
  pid_t pid = fork();
  if (pid < 0) return Fail(absl::StrCat("mpirun: fork failed: ", std::strerror(errno)));
  if (pid == 0) {
    signal(SIGINT, SIG_DFL);
    signal(SIGTERM, SIG_DFL);
    execve(cargv[0], cargv.data(), cenv.data());
    std::fprintf(stderr, "POPRUN ERROR: mpirun: cannot execute %s: %s\n", cargv[0],
                 std::strerror(errno));
    _exit(127);
  }
  g_mpirun.store(pid);
  // A signal that arrived while forking is forwarded now.
  if (int sig = g_signal.load(); sig != 0) ::kill(pid, sig);
  log.Info(absl::StrCat("Waiting for mpirun (PID ", pid, ")"));
  int status = 0;
  while (waitpid(pid, &status, 0) < 0 && errno == EINTR) {
  }
  g_mpirun.store(0);
  const int code = WIFEXITED(status) ? WEXITSTATUS(status) : 128 + WTERMSIG(status);
  log.Info(absl::StrCat("mpirun (PID ", pid, ") terminated with exit code ", code));
  return code;
}

}  // namespace

int RunPoprun(const std::vector<std::string>& args, const Environment& env) {
  auto parsed = ParseCommandLine(args);
  if (!parsed.ok()) return Fail(std::string(parsed.status().message()));
  PoprunOptions& o = *parsed;
  if (o.help) {
    std::cout << HelpText();
    return 0;
  }
  if (o.version_format.has_value()) {
    if (*o.version_format == "full-json") {
      std::cout << "{\"poprun\":\"" << VIPU_VERSION << "\",\"popdist\":\"" << VIPU_VERSION
                << "\"}\n";
    } else if (*o.version_format == "full-text") {
      std::cout << "PopRun version " << VIPU_VERSION << "\nPopDist version " << VIPU_VERSION
                << "\n";
    } else {
      std::cout << "PopRun version " << VIPU_VERSION << "\n";
    }
    return 0;
  }
  auto level =
      ResolveLogLevel(o.verbosity, env.vars.count("POPRUN_LOG_LEVEL")
                                       ? std::optional<std::string>(env.Get("POPRUN_LOG_LEVEL"))
                                       : std::nullopt);
  if (!level.ok()) return Fail(std::string(level.status().message()));
  Logger log(*level);
  if (absl::Status s = ValidateOptions(o); !s.ok()) return Fail(std::string(s.message()));
  if (absl::Status s = ValidateAutoreport(o, env.Get("POPLAR_ENGINE_OPTIONS")); !s.ok()) {
    return Fail(std::string(s.message()));
  }
  const HostProbe probe = SystemHostProbe();
  if (absl::Status s = CheckSynchronisation(o, probe); !s.ok()) {
    return Fail(std::string(s.message()));
  }
  auto env_targets = ParseTargetOptions(env.Get("POPLAR_TARGET_OPTIONS"), "POPLAR_TARGET_OPTIONS");
  if (!env_targets.ok()) return Fail(std::string(env_targets.status().message()));
  const std::string mpirun =
      FindExecutable(env.Get("POPRUN_MPIRUN").empty() ? "mpirun" : env.Get("POPRUN_MPIRUN"), env);
  if (mpirun.empty()) {
    return Fail("mpirun: not found in PATH (install openmpi-bin, or set POPRUN_MPIRUN)");
  }
  if (!o.export_config.empty()) {
    auto written = ExportConfig(o, o.export_config);
    if (!written.ok()) return Fail(std::string(written.status().message()));
    if (*written != o.export_config) {
      log.Warn(absl::StrCat("Configuration file ", o.export_config, " exists; wrote ", *written,
                            " (use --overwrite-config=yes to overwrite)"));
    } else {
      log.Info("Configuration exported to " + *written);
    }
  }
  InstallSignalHandlers();

  LaunchContext launch;
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
  uint32_t num_ilds = std::max<uint32_t>(o.num_ilds, 1);
  TargetOptions partition_targets;
  std::unique_ptr<Connection> conn;
  std::unique_ptr<PartitionManager> manager;
  std::string created;  // partition to remove at the end

  auto cleanup = [&](int code) {
    if (!created.empty() && manager != nullptr) {
      if (o.remove_partition) {
        log.Info("Removing partition " + created);
        if (absl::Status s = manager->Remove(created); !s.ok()) {
          log.Error(absl::StrCat("Removing partition ", created, ": ", std::string(s.message())));
          if (code == 0) code = 1;
        }
      } else {
        log.Info("Keeping partition " + created + " (--remove-partition=no)");
      }
    }
    return code;
  };

  if (o.offline_mode) {
    log.Debug("Offline mode: not contacting the V-IPU server");
  } else {
    auto server = ResolveServer(o, env);
    if (!server.ok()) return Fail(std::string(server.status().message()));
    if (server->from_vipu_config) {
      log.Info("V-IPU server address picked up from 'vipu': " + server->config.Target());
    }
    // Before anything is created: every host's instances must reach the server.
    auto per_host = ServerAddressPerHost(o.hosts, server->config.host, server->config.port, probe);
    if (!per_host.ok()) return Fail(std::string(per_host.status().message()));
    for (size_t i = 0; i < o.hosts.size(); ++i) {
      if ((*per_host)[i] != server->config.host) {
        log.Info(absl::StrCat("Instances on ", o.hosts[i], " reach the V-IPU server at ",
                              (*per_host)[i], ":", server->config.port));
      }
    }
    launch.vipu_host_per_host = *std::move(per_host);
    conn = std::make_unique<Connection>(server->config);
    manager = std::make_unique<PartitionManager>(*conn, o, env, log);
    auto plan = manager->Prepare();
    created = manager->created_partition();
    if (!plan.ok()) {
      const int code = Fail(std::string(plan.status().message()));
      return cleanup(code);
    }
    launch.vipu_host = server->config.host;
    launch.vipu_port = server->config.port;
    launch.vipu_timeout = server->config.timeout_seconds;
    launch.credentials = CredentialEnvironment(server->config);
    launch.partition_id = plan->id;
    launch.num_gcds = plan->num_gcds;
    num_ilds = plan->num_ilds;
    partition_targets = plan->target_options;
  }
  if (int sig = g_signal.load(); sig != 0) {
    log.Warn(absl::StrCat("Interrupted by signal ", sig, " before launch"));
    return cleanup(128 + sig);
  }

  if (o.print_topology || o.verbosity == Verbosity::kDebug) {
    std::vector<std::string> hosts =
        o.hosts.empty() ? std::vector<std::string>{"localhost"} : o.hosts;
    std::cout << RenderTopology(hosts, num_ilds, o.num_instances, o.num_replicas) << std::flush;
  }
  log.Debug("Target options from environment: " + FormatTargetOptions(*env_targets));
  if (!o.offline_mode) {
    log.Debug("Target options from V-IPU partition: " + FormatTargetOptions(partition_targets));
  }
  const TargetOptions targets = MergeTargetOptions(partition_targets, *env_targets);
  if (!targets.empty()) {
    launch.target_options = FormatTargetOptions(targets);
    log.Debug("Using target options: " + launch.target_options);
  }
  if (o.hosts.empty()) {
    if (!o.host_subnet.empty()) log.Debug("No hosts specified; ignoring host-subnet setting");
    log.Debug("Default network/RNIC for host communication: None");
  } else {
    log.Debug("Host communication subnet: " + (o.host_subnet.empty() ? "None" : o.host_subnet));
  }

  // Executable cache: the given directory, none for "", else a temporary one
  // shared by the instances of a multi-instance single-host run.
  std::string temp_cache;
  if (o.executable_cache_path.has_value()) {
    launch.cache_dir = *o.executable_cache_path;
    if (!launch.cache_dir.empty()) {
      std::error_code ec;
      std::filesystem::create_directories(launch.cache_dir, ec);
      if (ec) {
        return cleanup(Fail(absl::StrCat("--executable-cache-path: cannot create ",
                                         launch.cache_dir, ": ", ec.message())));
      }
    }
  } else if (o.num_instances > 1 && o.hosts.empty()) {
    std::string tmpl = (std::filesystem::temp_directory_path() / "poprun-cache-XXXXXX").string();
    if (mkdtemp(tmpl.data()) != nullptr) {
      temp_cache = tmpl;
      launch.cache_dir = tmpl;
      log.Debug("Executable cache: " + tmpl + " (removed at exit)");
    }
  }

  if (o.process_placement == ProcessPlacement::kSpreadNuma) {
    launch.numa_nodes = CountNumaNodes();
    launch.numactl = FindExecutable("numactl", env);
    if (launch.numa_nodes > 1 && launch.numactl.empty()) {
      log.Warn("numactl not found; instances are not bound to NUMA nodes");
      launch.numa_nodes = 1;
    }
    log.Debug(absl::StrCat("NUMA nodes on this host: ", launch.numa_nodes));
  }

  const std::vector<std::string> argv = BuildMpirunCommand(o, launch);
  log.Info("Running command: " + QuoteCommand(argv));
  int code = SpawnAndWait(argv, launch.credentials, log);
  if (int sig = g_signal.load(); sig != 0) {
    log.Warn(absl::StrCat("Interrupted by signal ", sig));
    if (code == 0) code = 128 + sig;
  }
  if (!temp_cache.empty()) {
    std::error_code ec;
    std::filesystem::remove_all(temp_cache, ec);
  }
  return cleanup(code);
}

}  // namespace vipu::cli::poprun
