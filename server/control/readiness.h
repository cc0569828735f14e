// Whether the server takes mutating requests. From start until the known
// agents have registered and been reconciled to the database (bounded by
// --reconcile-window-ms) a change could be based on a picture of the agents
// that is about to be corrected, so mutating RPCs are refused with
// UNAVAILABLE and a retry hint: the message says how long to wait and the
// trailing metadata `retry-after-ms` carries the same number for programs.
// Reads are served throughout. The refusal is marked NothingDone; the gRPC
// edge turns the mark into the trailing metadata
// (server/api/nothing_done_interceptor.h).
//
// Owns nothing; thread-safe: any thread may ask while the daemon's start-up
// thread moves it to ready.
#ifndef VIPU_SERVER_CONTROL_READINESS_H_
#define VIPU_SERVER_CONTROL_READINESS_H_

#include <atomic>
#include <cstdint>

#include "absl/base/thread_annotations.h"
#include "absl/status/status.h"
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
  // and saying how long to wait; the status is marked NothingDone
  // (base/nothing_done.h) with that wait, which the gRPC edge sends as
  // `retry-after-ms`.
  absl::Status Admit(absl::string_view what) const;

 private:
  std::atomic<bool> ready_{false};
  mutable vipu::Mutex mu_;
  absl::Time deadline_ ABSL_GUARDED_BY(mu_) = absl::InfinitePast();
};

}  // namespace vipu::server

#endif  // VIPU_SERVER_CONTROL_READINESS_H_
