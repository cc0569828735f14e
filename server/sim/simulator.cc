// Simulator: starts and stops the vipu-agent child processes of `--simulate POD`.
#include "server/sim/simulator.h"

#include <signal.h>
#include <spawn.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstring>
#include <set>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "absl/time/clock.h"
#include "base/status_macros.h"
#include "fabric/enum_names.h"
#include "server/security/tls_init.h"
#include "server/sim/simulated_ports.h"
#include "spdlog/spdlog.h"
#include "tls/tls_files.h"

extern char** environ;

namespace vipu::server {
namespace {

// The flags that give an agent process of `group` its certificate, issued
// first unless a usable one (same CA, right key) is there.
absl::StatusOr<std::vector<std::string>> AgentTlsFlags(const std::string& tls_dir,
                                                       const std::vector<std::string>& group) {
  const std::string dir = absl::StrCat(tls_dir, "/agents/", group.front());
  tls::TlsFiles files{dir + "/ca.pem", dir + "/cert.pem", dir + "/key.pem"};
  // ca.pem of the agent must be the pod CA the server trusts.
  files.ca = absl::StrCat(tls_dir, "/ca.pem");
  auto pem = tls::LoadTlsFiles(files);
  std::vector<std::string> names = group;
  names.push_back("localhost");
  if (!pem.ok() || tls::CertificateExpired(pem->cert) ||
      !tls::CheckCertificateNames(pem->cert, names, {"127.0.0.1"}).ok()) {
    AgentCertificateSpec spec{group, {"127.0.0.1", "localhost"}};
    auto issued = IssueAgentCertificate(tls_dir, spec);
    if (!issued.ok()) {
      return absl::FailedPreconditionError(
          absl::StrCat("simulate: cannot issue the certificate of agents ", group.front(),
                       "..: ", issued.status().message()));
    }
    spdlog::info("simulate: issued the agent certificate {}/cert.pem", *issued);
  }
  return std::vector<std::string>{"--tls-ca", files.ca,    "--tls-cert",
                                  files.cert, "--tls-key", files.key};
}

// The non-zero ports of the machines of `plan` outside `group`, when a
// machine of `group` has a port to take: those its agent must leave alone.
std::vector<uint32_t> OtherMachinesPorts(const std::map<std::string, MachinePorts>& plan,
                                         const std::vector<std::string>& group) {
  const std::set<std::string> mine(group.begin(), group.end());
  bool takes = false;
  for (const std::string& id : group) {
    takes = takes || plan.at(id).server == 0 || plan.at(id).rdma == 0;
  }
  std::vector<uint32_t> others;
  if (!takes) return others;
  for (const auto& [id, p] : plan) {
    if (mine.count(id) != 0) continue;
    for (uint32_t port : {p.server, p.rdma}) {
      if (port != 0) others.push_back(port);
    }
  }
  return others;
}

// The command line of the agent process of the machines `group`, ports as
// `assigned`.
absl::StatusOr<std::vector<std::string>> AgentArgs(
    const fabric::PodSpec& pod, const Simulator::Options& options,
    const std::map<std::string, MachinePorts>& assigned, const std::vector<std::string>& group) {
  std::vector<std::string> args = {options.agent_binary,
                                   "--server",
                                   options.server_address,
                                   "--agent-ids",
                                   absl::StrJoin(group, ","),
                                   "--machine-type",
                                   fabric::CliName(pod.machine_type),
                                   "--host",
                                   "127.0.0.1",
                                   "--log-level",
                                   options.log_level,
                                   "--exit-with-parent"};
  std::vector<uint32_t> ports;
  std::vector<uint32_t> rdma_ports;
  for (const std::string& id : group) {
    ports.push_back(assigned.at(id).server);
    rdma_ports.push_back(assigned.at(id).rdma);
  }
  args.push_back("--ports");
  args.push_back(absl::StrJoin(ports, ","));
  // Each machine holds its RDMA port too, so that no port of the pod is
  // another's.
  args.push_back("--rdma-ports");
  args.push_back(absl::StrJoin(rdma_ports, ","));
  // A port of 0 is the agent's to take above the ephemeral range, leaving
  // alone the ports the pod's other machines come back to.
  args.push_back("--stable-ports");
  const std::vector<uint32_t> reserved = OtherMachinesPorts(assigned, group);
  if (!reserved.empty()) {
    args.push_back("--reserved-ports");
    args.push_back(absl::StrJoin(reserved, ","));
  }
  if (!options.tls_dir.empty()) {
    ASSIGN_OR_RETURN(std::vector<std::string> flags, AgentTlsFlags(options.tls_dir, group));
    args.insert(args.end(), flags.begin(), flags.end());
  }
  return args;
}

// Starts the program args[0] with `args`; its pid.
absl::StatusOr<pid_t> Spawn(std::vector<std::string> args) {
  std::vector<char*> argv;
  for (std::string& a : args) argv.push_back(a.data());
  argv.push_back(nullptr);
  pid_t pid = 0;
  // Children must not inherit our blocked signal mask, or SIGTERM would
  // not reach them.
  posix_spawnattr_t attr;
  posix_spawnattr_init(&attr);
  sigset_t none;
  sigemptyset(&none);
  posix_spawnattr_setsigmask(&attr, &none);
  posix_spawnattr_setflags(&attr, POSIX_SPAWN_SETSIGMASK);
  int rc = posix_spawn(&pid, argv[0], nullptr, &attr, argv.data(), environ);
  posix_spawnattr_destroy(&attr);
  if (rc != 0) {
    return absl::InternalError(
        absl::StrCat("simulate: cannot start ", args[0], ": ", std::strerror(rc)));
  }
  return pid;
}

}  // namespace

absl::StatusOr<std::unique_ptr<Simulator>> Simulator::Start(const fabric::PodSpec& pod,
                                                            const Options& options) {
  if (access(options.agent_binary.c_str(), X_OK) != 0) {
    return absl::FailedPreconditionError(
        absl::StrCat("simulate: agent binary '", options.agent_binary,
                     "' is not executable: ", std::strerror(errno), " (set --agent-binary)"));
  }
  std::vector<std::string> ids;
  for (uint32_t m = 1; m <= pod.num_machines; ++m) ids.push_back(absl::StrCat("ag", m));
  RETURN_IF_ERROR(AwaitRememberedPorts(ids, options.ports, options.port_wait));
  const std::map<std::string, MachinePorts> assigned = AssignPorts(ids, options.ports);
  std::unique_ptr<Simulator> sim(new Simulator(pod, ids));

  const uint32_t per_process = std::clamp<uint32_t>(options.machines_per_process, 1, 16);
  for (uint32_t first = 0; first < ids.size(); first += per_process) {
    std::vector<std::string> group(ids.begin() + first,
                                   ids.begin() + std::min<size_t>(ids.size(), first + per_process));
    absl::StatusOr<std::vector<std::string>> args = AgentArgs(pod, options, assigned, group);
    if (!args.ok()) {
      sim->Stop();
      return args.status();
    }
    absl::StatusOr<pid_t> pid = Spawn(*std::move(args));
    if (!pid.ok()) {
      sim->Stop();
      return pid.status();
    }
    sim->children_.push_back(*pid);
    sim->child_agents_.push_back(absl::StrJoin(group, ","));
    spdlog::info("simulate {}: started vipu-agent pid {} for {}", pod.name, *pid,
                 absl::StrJoin(group, ","));
  }
  return sim;
}

Simulator::~Simulator() { Stop(); }

std::optional<std::string> Simulator::ExitedChild() {
  for (size_t i = 0; i < children_.size(); ++i) {
    int status = 0;
    if (waitpid(children_[i], &status, WNOHANG) != children_[i]) continue;
    std::string how = WIFEXITED(status) ? absl::StrCat("exited with status ", WEXITSTATUS(status))
                                        : absl::StrCat("was killed by signal ", WTERMSIG(status));
    std::string what =
        absl::StrCat("vipu-agent pid ", children_[i], " for ", child_agents_[i], " ", how);
    // Reaped: Stop must not signal a pid that may be reused.
    children_.erase(children_.begin() + static_cast<std::ptrdiff_t>(i));
    child_agents_.erase(child_agents_.begin() + static_cast<std::ptrdiff_t>(i));
    return what;
  }
  return std::nullopt;
}

void Simulator::Stop() {
  for (pid_t pid : children_) kill(pid, SIGTERM);
  const absl::Time deadline = absl::Now() + absl::Seconds(5);
  for (pid_t pid : children_) {
    for (;;) {
      int status = 0;
      pid_t r = waitpid(pid, &status, WNOHANG);
      if (r == pid || (r < 0 && errno != EINTR)) break;
      if (absl::Now() > deadline) {
        spdlog::warn("simulate: agent pid {} did not stop, killing it", pid);
        kill(pid, SIGKILL);
        waitpid(pid, &status, 0);
        break;
      }
      absl::SleepFor(absl::Milliseconds(10));  // polling a child's exit; no event to wait on
    }
  }
  children_.clear();
  child_agents_.clear();
}

}  // namespace vipu::server
