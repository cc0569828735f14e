// Fan-out of server-sent events to the console's browsers. Each subscriber
// has its own bounded queue; Publish never waits on a subscriber: one whose
// queue is full (a slow or stalled browser) is dropped, and its stream ends
// so the browser reconnects and reloads the state. The hub also caps the
// number of subscribers, since each open stream holds an HTTP thread.
//
// Thread-safe: Publish, Subscribe and Close from any thread; a Subscription
// is used by the one thread serving its stream.
#ifndef VIPU_SERVER_CONSOLE_EVENT_HUB_H_
#define VIPU_SERVER_CONSOLE_EVENT_HUB_H_

#include <cstdint>
#include <deque>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "absl/base/thread_annotations.h"
#include "absl/status/statusor.h"
#include "absl/time/time.h"
#include "base/mutex.h"

namespace vipu::server {

class EventHub;

// One browser's stream. Destroying it unsubscribes. Borrows the hub, which
// must outlive it; its queue is guarded by mu_, since Publish fills it from
// other threads.
class Subscription {
 public:
  ~Subscription();
  Subscription(const Subscription&) = delete;
  Subscription& operator=(const Subscription&) = delete;

  // The next queued event (already formatted as SSE text), waiting at most
  // `timeout`. nullopt on timeout; *ended set when the subscriber was
  // dropped or the hub closed (the stream must end).
  std::optional<std::string> Next(absl::Duration timeout, bool* ended);
  bool DroppedForTesting() const;

 private:
  friend class EventHub;
  Subscription(EventHub* hub, size_t capacity) : hub_(hub), capacity_(capacity) {}

  EventHub* const hub_;
  const size_t capacity_;
  mutable vipu::Mutex mu_;
  std::deque<std::string> queue_ ABSL_GUARDED_BY(mu_);
  bool dropped_ ABSL_GUARDED_BY(mu_) = false;
  bool closed_ ABSL_GUARDED_BY(mu_) = false;
};

// Keeps pointers to its subscriptions but does not own them: each removes
// itself when destroyed.
class EventHub {
 public:
  // `max_subscribers` streams at once, `queue_capacity` events queued per
  // stream before it is dropped.
  EventHub(size_t max_subscribers, size_t queue_capacity)
      : max_subscribers_(max_subscribers), queue_capacity_(queue_capacity) {}
  ~EventHub();  // Close()s; Subscriptions must be gone before the hub.

  // RESOURCE_EXHAUSTED when max_subscribers streams are open; UNAVAILABLE
  // after Close.
  absl::StatusOr<std::unique_ptr<Subscription>> Subscribe();

  // Queues an SSE event (`event` name, one-line `data`) for every
  // subscriber; drops those whose queue is full. Never blocks on them.
  void Publish(const std::string& event, const std::string& data);

  // Ends every stream (shutdown).
  void Close();

  size_t SubscribersForTesting() const;
  // Subscribers dropped for being too slow since start.
  uint64_t DroppedForTesting() const;

 private:
  friend class Subscription;
  void Unsubscribe(Subscription* s);

  const size_t max_subscribers_;
  const size_t queue_capacity_;
  mutable vipu::Mutex mu_;
  std::vector<Subscription*> subscribers_ ABSL_GUARDED_BY(mu_);
  bool closed_ ABSL_GUARDED_BY(mu_) = false;
  uint64_t dropped_ ABSL_GUARDED_BY(mu_) = 0;
};

// "event: NAME\ndata: DATA\n\n"; newlines in `data` become separate data lines.
std::string FormatEvent(const std::string& event, const std::string& data);

}  // namespace vipu::server

#endif  // VIPU_SERVER_CONSOLE_EVENT_HUB_H_
