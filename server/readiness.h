// Whether the server takes mutating requests. From start until the known
// agents have registered and been reconciled to the database (bounded by
// --reconcile-window-ms) a change could be based on a picture of the agents
// that is about to be corrected, so mutating RPCs are refused with
// UNAVAILABLE and a retry hint: the message says how long to wait and the
// trailing metadata `retry-after-ms` carries the same number for programs.
// Reads are served throughout.
#ifndef VIPU_SERVER_READINESS_H_
#define VIPU_SERVER_READINESS_H_

#include <grpcpp/grpcpp.h>

#include <atomic>
#include <string>

#include "absl/base/thread_annotations.h"
#include "absl/strings/string_view.h"
#include "absl/time/time.h"
#include "base/mutex.h"

namespace vipu::server {

class Readiness {
 public:
  Readiness() = default;

  // Not ready until `deadline` at the latest (the hint counts down to it).
  void Reconciling(absl::Time deadline);
  void SetReady();
  bool ready() const { return ready_.load(); }

  // How long a refused client should wait: the time left until the
  // deadline, at least 100 ms.
  absl::Duration RetryAfter(absl::Time now) const;

  // OK when ready. Otherwise UNAVAILABLE naming `what` ("create partition")
  // with retry-after-ms added to `context`'s trailing metadata (when given).
  grpc::Status Admit(grpc::ServerContext* context, absl::string_view what) const;

 private:
  std::atomic<bool> ready_{false};
  mutable vipu::Mutex mu_;
  absl::Time deadline_ ABSL_GUARDED_BY(mu_) = absl::InfinitePast();
};

// For services: OK when `readiness` is null (tests that build a service
// alone) or ready.
inline grpc::Status AdmitWhenReady(const Readiness* readiness, grpc::ServerContext* context,
                                   absl::string_view what) {
  return readiness == nullptr ? grpc::Status::OK : readiness->Admit(context, what);
}

}  // namespace vipu::server

#endif  // VIPU_SERVER_READINESS_H_
