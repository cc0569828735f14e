// What a standby member serves on --http-listen until it leads.
#ifndef VIPU_SERVER_HA_STANDBY_HTTP_H_
#define VIPU_SERVER_HA_STANDBY_HTTP_H_

#include <memory>
#include <string>
#include <thread>

#include "absl/status/statusor.h"
#include "server/ha/member_role.h"
#include "server/metrics/metrics.h"
#include "server/metrics/metrics_http.h"

namespace httplib {
class Server;
}  // namespace httplib

namespace vipu::server {

// The HTTP listener of a standby: GET /metrics answers with the member's
// role and the leader (vipu_server_role, vipu_leader_info), so that a
// scraper given every member sees which one leads; every other path gets
// 503 naming the leader, whose console is the pod's. The leader's console
// takes the address over once this object is gone.
//
// Borrows `role`, which must outlive it. Thread safety: the handlers run on
// the listener's threads; construction and destruction are the owner's.
class StandbyHttp {
 public:
  // UNAVAILABLE when the address cannot be bound, INVALID_ARGUMENT naming
  // the flag for a malformed one, FAILED_PRECONDITION naming the files when
  // the certificate cannot be loaded.
  // `listener`: the one the leader's console would use (HttpListenerOf).
  static absl::StatusOr<std::unique_ptr<StandbyHttp>> Start(const HttpListenerOptions& listener,
                                                            const MemberRole* role);
  // Stops the listener and joins its thread: the port is free on return.
  ~StandbyHttp();

  int port() const { return port_; }

 private:
  explicit StandbyHttp(const MemberRole* role);

  const MemberRole* role_;
  Metrics metrics_;
  std::unique_ptr<httplib::Server> http_;
  std::thread thread_;
  int port_ = 0;
};

}  // namespace vipu::server

#endif  // VIPU_SERVER_HA_STANDBY_HTTP_H_
