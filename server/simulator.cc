// Simulator: starts and stops the vipu-agent child processes of `--simulate POD`.
#include "server/simulator.h"

#include <netinet/in.h>
#include <signal.h>
#include <spawn.h>
#include <sys/socket.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <fstream>
#include <random>
#include <set>
#include <utility>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "absl/time/clock.h"
#include "fabric/enum_names.h"
#include "spdlog/spdlog.h"

extern char** environ;

namespace vipu::server {
namespace {

constexpr uint32_t kMachinesPerProcess = 16;

// Whether a gRPC server could listen on 127.0.0.1:port now. SO_REUSEADDR as
// gRPC sets it, so that connections of the previous run in TIME_WAIT do not
// count as taken; a listening socket does.
bool LoopbackPortFree(uint32_t port) {
  const int fd = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
  if (fd < 0) return false;
  const int one = 1;
  setsockopt(fd, SOL_SOCKET, SO_REUSEADDR, &one, sizeof one);
  sockaddr_in addr{};
  addr.sin_family = AF_INET;
  addr.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  addr.sin_port = htons(static_cast<uint16_t>(port));
  const bool free =
      bind(fd, reinterpret_cast<sockaddr*>(&addr), sizeof addr) == 0 && listen(fd, 1) == 0;
  close(fd);
  return free;
}

// Ports that neither connect() nor a bind to port 0 ever hands out: those
// above the kernel's ephemeral range. A machine's port must be free again
// when the server restarts, and any outgoing connection made meanwhile
// could otherwise have taken it. Empty when the range reaches 65535.
std::pair<uint32_t, uint32_t> StablePortRange() {
  uint32_t low = 32768, high = 60999;
  std::ifstream range("/proc/sys/net/ipv4/ip_local_port_range");
  range >> low >> high;
  return {high + 1, 65535};
}

// A port for every machine: the remembered one, else a free one in the
// stable range, starting at a random place so that servers started at the
// same time rarely probe the same ports; 0 (any free port) when the stable
// range has none left.
std::map<std::string, uint32_t> AssignPorts(const std::vector<std::string>& ids,
                                            const std::map<std::string, uint32_t>& remembered) {
  std::map<std::string, uint32_t> ports;
  std::set<uint32_t> taken;
  for (const std::string& id : ids) {
    auto it = remembered.find(id);
    if (it != remembered.end() && it->second != 0) {
      ports[id] = it->second;
      taken.insert(it->second);
    }
  }
  const auto [first, last] = StablePortRange();
  const uint32_t span = first <= last ? last - first + 1 : 0;
  uint32_t next = span == 0 ? 0 : std::random_device()() % span;
  uint32_t probed = 0;
  for (const std::string& id : ids) {
    if (ports.count(id) != 0) continue;
    uint32_t port = 0;
    for (; probed < span && port == 0; ++probed) {
      const uint32_t candidate = first + next;
      next = (next + 1) % span;
      if (taken.count(candidate) == 0 && LoopbackPortFree(candidate)) port = candidate;
    }
    if (port == 0) {
      spdlog::warn(
          "simulate: no free port above the ephemeral range for agent {}; it gets any "
          "free port and may move when the server restarts",
          id);
    }
    taken.insert(port);
    ports[id] = port;
  }
  return ports;
}

// OK once every remembered port is free, waiting up to `wait` for the
// agents of a killed server to let go of them.
absl::Status AwaitRememberedPorts(const std::vector<std::string>& ids,
                                  const std::map<std::string, uint32_t>& ports,
                                  absl::Duration wait) {
  const absl::Time deadline = absl::Now() + wait;
  for (const std::string& id : ids) {
    auto it = ports.find(id);
    if (it == ports.end() || it->second == 0) continue;
    while (!LoopbackPortFree(it->second)) {
      if (absl::Now() > deadline) {
        return absl::FailedPreconditionError(absl::StrCat(
            "simulate: agent ", id, " served on 127.0.0.1:", it->second,
            " before and must again (the IPUoF configs of its partitions point there), but "
            "another process holds that port; stop that process, or use another --db"));
      }
      absl::SleepFor(absl::Milliseconds(20));  // no event tells when another process lets go
    }
  }
  return absl::OkStatus();
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
  if (absl::Status s = AwaitRememberedPorts(ids, options.ports, options.port_wait); !s.ok()) {
    return s;
  }
  const std::map<std::string, uint32_t> assigned = AssignPorts(ids, options.ports);
  std::unique_ptr<Simulator> sim(new Simulator(pod, ids));

  for (uint32_t first = 0; first < ids.size(); first += kMachinesPerProcess) {
    std::vector<std::string> group(
        ids.begin() + first,
        ids.begin() + std::min<size_t>(ids.size(), first + kMachinesPerProcess));
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
    for (const std::string& id : group) ports.push_back(assigned.at(id));
    args.push_back("--ports");
    args.push_back(absl::StrJoin(ports, ","));
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
      sim->Stop();
      return absl::InternalError(
          absl::StrCat("simulate: cannot start ", options.agent_binary, ": ", std::strerror(rc)));
    }
    sim->children_.push_back(pid);
    sim->child_agents_.push_back(absl::StrJoin(group, ","));
    spdlog::info("simulate {}: started vipu-agent pid {} for {}", pod.name, pid,
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
