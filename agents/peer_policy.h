// Who may make vipu-server's calls to a simulated machine, and how the
// machine dials the other machines of its partitions: the one choice an
// agent's service cannot be built without, so that a secure agent wired
// without it cannot serve everyone by mistake.
#ifndef VIPU_AGENTS_PEER_POLICY_H_
#define VIPU_AGENTS_PEER_POLICY_H_

#include <memory>
#include <utility>

#include "grpcpp/security/credentials.h"

namespace vipu::agents {

// A value; copyable and immutable, so thread-safe.
class PeerPolicy {
 public:
  // Without --tls-dir: every peer may make every call, and other machines
  // are dialed in plaintext.
  static PeerPolicy PlaintextAdmittingEveryone() { return PeerPolicy(nullptr); }
  // Mutual TLS: the server's calls (configure, reset, release, topology,
  // faults, link tests) only from a peer whose certificate is the server's;
  // data-plane calls from any certificate of the pod CA, which the listener
  // checks. Other machines are dialed with `credentials` (not null),
  // verifying their certificate against their agent id.
  static PeerPolicy ServerCallsFromTheServerOnly(
      std::shared_ptr<grpc::ChannelCredentials> credentials) {
    return PeerPolicy(std::move(credentials));
  }

  bool secure() const { return credentials_ != nullptr; }
  // What other machines are dialed with; null in plaintext.
  const std::shared_ptr<grpc::ChannelCredentials>& credentials() const { return credentials_; }

 private:
  explicit PeerPolicy(std::shared_ptr<grpc::ChannelCredentials> credentials)
      : credentials_(std::move(credentials)) {}

  std::shared_ptr<grpc::ChannelCredentials> credentials_;
};

}  // namespace vipu::agents

#endif  // VIPU_AGENTS_PEER_POLICY_H_
