// `vipu-server --simulate POD`: the pod's IPU-Machines as real vipu-agent
// child processes (one per ILD, i.e. up to 16 machines each, every machine
// on its own free loopback port) that register with this server.
#ifndef VIPU_SERVER_SIMULATOR_H_
#define VIPU_SERVER_SIMULATOR_H_

#include <sys/types.h>

#include <memory>
#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "fabric/pods.h"

namespace vipu::server {

class Simulator {
 public:
  struct Options {
    std::string agent_binary;
    std::string server_address;  // where the agents register
    std::string log_level = "info";
    // Secure mode: the --tls-dir with the pod CA. Each agent process gets
    // the certificate DIR/agents/<first id of its group>/, naming its agent
    // ids, 127.0.0.1 and localhost; a missing or unusable one is issued with
    // DIR/ca-key.pem. Empty: plaintext.
    std::string tls_dir;
  };

  // FAILED_PRECONDITION for an agent binary that cannot run or an agent
  // certificate that cannot be issued (naming the file).
  static absl::StatusOr<std::unique_ptr<Simulator>> Start(const fabric::PodSpec& pod,
                                                          const Options& options);
  ~Simulator();  // Stop()

  const fabric::PodSpec& pod() const { return pod_; }
  // In ladder order: ag1 .. agN.
  const std::vector<std::string>& agent_ids() const { return agent_ids_; }

  // SIGTERM to every child, wait up to 5 s, then SIGKILL. Idempotent.
  void Stop();

 private:
  Simulator(fabric::PodSpec pod, std::vector<std::string> agent_ids)
      : pod_(std::move(pod)), agent_ids_(std::move(agent_ids)) {}

  fabric::PodSpec pod_;
  std::vector<std::string> agent_ids_;
  std::vector<pid_t> children_;
};

}  // namespace vipu::server

#endif  // VIPU_SERVER_SIMULATOR_H_
