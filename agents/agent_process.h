// One vipu-agent process: the simulated IPU-Machines its options name, the
// gRPC servers that serve them (one port per machine, or one shared port),
// the RDMA port of each machine,
// the certificates of mutual TLS, and the registration that keeps vipu-server
// told about the machines.
#ifndef VIPU_AGENTS_AGENT_PROCESS_H_
#define VIPU_AGENTS_AGENT_PROCESS_H_

#include <memory>
#include <ostream>
#include <string>
#include <thread>
#include <vector>

#include "absl/base/thread_annotations.h"
#include "absl/status/statusor.h"
#include "agents/agent_options.h"
#include "agents/agent_service.h"
#include "agents/rdma_ports.h"
#include "agents/registration.h"
#include "agents/simulated_machine.h"
#include "agents/stable_port_picker.h"
#include "base/mutex.h"
#include "grpcpp/security/credentials.h"
#include "grpcpp/security/server_credentials.h"
#include "grpcpp/server.h"
#include "tls/live_certificates.h"

namespace vipu::agents {

// Owns everything it starts. Destroying it is the shutdown: registration
// stops first (the server sees the machines go quiet, not fail), then every
// server ends its calls at once. Thread-safe for ReloadCertificates; Start
// and destruction happen on one thread.
class AgentProcess {
 public:
  // Checks the certificates, opens every port (the machines' RDMA ports
  // included), and only then writes one
  // "listening" line per machine (or one for the shared port) to
  // `announce`, which a parent process reads; then registers with the
  // server in the background. On failure nothing is left running and the
  // message says what failed, for "vipu-agent: <message>":
  // INVALID_ARGUMENT for bad TLS files or a certificate for other agent ids,
  // UNAVAILABLE for a port that cannot be listened on.
  static absl::StatusOr<std::unique_ptr<AgentProcess>> Start(const AgentOptions& options,
                                                             std::ostream& announce);
  ~AgentProcess();

  AgentProcess(const AgentProcess&) = delete;
  AgentProcess& operator=(const AgentProcess&) = delete;

  // Reads the certificate files again (SIGHUP); listeners, connections and
  // partitions stay, new handshakes use the new files. FAILED_PRECONDITION
  // without TLS; the loader's error, with the old files kept, when the new
  // ones do not load.
  absl::Status ReloadCertificates();
  // Whether the certificate in use has expired (after a reload, for a warning).
  bool CertificateExpired() const;

  size_t machines() const { return machines_.size(); }

 private:
  explicit AgentProcess(const AgentOptions& options) : options_(options) {}

  absl::Status StartTls();
  absl::Status ServeSharedPort(std::ostream& announce);
  absl::Status ServeEachMachine(std::ostream& announce);
  // The gRPC server of `service` on `asked`, or with --stable-ports and
  // `asked` 0 on a port the picker takes (whose successor is kept for the
  // machine's RDMA port: `*rdma` is set to it). Null when it cannot listen;
  // `*port` is the port bound.
  std::unique_ptr<grpc::Server> ServeOn(uint32_t asked, grpc::Service* service, int* port,
                                        uint32_t* rdma);
  // Listens on every machine's RDMA port (`wanted`, one per machine; 0:
  // any) and tells the machines theirs.
  absl::Status HoldRdmaPorts(std::vector<uint32_t> wanted);
  // An injected crash of machine `index`: a single-machine process dies like
  // a machine, after the reply left; a machine among many stops its server
  // from another thread (not from inside its own handler, which Shutdown
  // would wait for).
  void Crash(size_t index);
  void JoinCrashThreads() ABSL_LOCKS_EXCLUDED(crash_mu_);
  void ShutdownServers();
  // The services' peer policy: the server's calls from the server only once
  // TLS is set up (--tls-dir), everyone's in plaintext.
  PeerPolicy Peers() const;

  // Members in the order they are started.
  const AgentOptions options_;
  std::unique_ptr<tls::LiveCertificates> certificates_;
  std::shared_ptr<grpc::ServerCredentials> server_credentials_;
  std::shared_ptr<grpc::ChannelCredentials> channel_credentials_;  // null: plaintext
  std::vector<std::unique_ptr<SimulatedMachine>> machines_;
  std::vector<std::unique_ptr<AgentService>> services_;  // one per machine, or one shared
  // Written by Start under crash_mu_, which crash threads take to read it.
  std::vector<std::unique_ptr<grpc::Server>> servers_;
  std::unique_ptr<RdmaPorts> rdma_ports_;
  std::unique_ptr<StablePortPicker> picker_;  // with --stable-ports; start-up only
  vipu::Mutex crash_mu_;
  std::vector<std::thread> crash_threads_ ABSL_GUARDED_BY(crash_mu_);
  std::unique_ptr<RegistrationClient> registration_;
};

}  // namespace vipu::agents

#endif  // VIPU_AGENTS_AGENT_PROCESS_H_
