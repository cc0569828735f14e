// `vipu-server --simulate POD`: the pod's IPU-Machines as real vipu-agent
// child processes (one per ILD, i.e. up to 16 machines each, every machine
// on its own loopback port and holding an RDMA port of its own) that
// register with this server. A machine that had a port in an earlier run
// gets the same port again, so that the IPUoF configs `vipu create
// partition` wrote keep pointing at it; a new machine's agent takes a pair
// of ports above the kernel's ephemeral range by binding them
// (server/sim/simulated_ports.h), and reports them when it registers.
#ifndef VIPU_SERVER_SIM_SIMULATOR_H_
#define VIPU_SERVER_SIM_SIMULATOR_H_

#include <sys/types.h>

#include <map>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "absl/time/time.h"
#include "fabric/pods.h"

namespace vipu::server {

// Owns the agent child processes and stops them when destroyed. Not
// thread-safe: the server's start-up thread starts it, polls ExitedChild and
// stops it.
class Simulator {
 public:
  struct Options {
    std::string agent_binary;
    std::string server_address;  // where the agents register
    std::string log_level = "info";
    // By agent id: the port each machine served on before (the agents
    // table). Machines not listed get a free port.
    std::map<std::string, uint32_t> ports;
    // How long a remembered port may stay taken before Start gives up: the
    // agents of a server that was just killed release theirs as they exit.
    absl::Duration port_wait = absl::Seconds(5);
    // Secure mode: the --tls-dir with the pod CA. Each agent process gets
    // the certificate DIR/agents/<first id of its group>/, naming its agent
    // ids, 127.0.0.1 and localhost; a missing or unusable one is issued with
    // DIR/ca-key.pem. Empty: plaintext.
    std::string tls_dir;
    // Machines per vipu-agent process, 1..16 (an ILD at most): 1 is one
    // process per machine, so that killing one is losing one machine.
    uint32_t machines_per_process = 16;
  };

  // FAILED_PRECONDITION naming the agent and the port when a remembered
  // port stays in use by another process (moving the machine would leave
  // the IPUoF configs that point at it dead), for an agent binary that
  // cannot run, or for an agent certificate that cannot be issued (naming
  // the file).
  static absl::StatusOr<std::unique_ptr<Simulator>> Start(const fabric::PodSpec& pod,
                                                          const Options& options);
  ~Simulator();  // Stop()

  const fabric::PodSpec& pod() const { return pod_; }
  // In ladder order: ag1 .. agN.
  const std::vector<std::string>& agent_ids() const { return agent_ids_; }

  // A description of the first child that has exited (e.g. because it
  // could not listen on its port), or nullopt while all run.
  std::optional<std::string> ExitedChild();

  // SIGTERM to every child, wait up to 5 s, then SIGKILL. Idempotent.
  void Stop();

 private:
  Simulator(fabric::PodSpec pod, std::vector<std::string> agent_ids)
      : pod_(std::move(pod)), agent_ids_(std::move(agent_ids)) {}

  fabric::PodSpec pod_;
  std::vector<std::string> agent_ids_;
  std::vector<pid_t> children_;
  std::vector<std::string> child_agents_;  // per child: its agent ids, comma-separated
};

}  // namespace vipu::server

#endif  // VIPU_SERVER_SIM_SIMULATOR_H_
