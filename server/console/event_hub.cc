// Bounded per-subscriber queues of server-sent events.
#include "server/console/event_hub.h"

#include <algorithm>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_split.h"

namespace vipu::server {

std::string FormatEvent(const std::string& event, const std::string& data) {
  std::string out = absl::StrCat("event: ", event, "\n");
  for (absl::string_view line : absl::StrSplit(data, '\n')) {
    absl::StrAppend(&out, "data: ", line, "\n");
  }
  out += "\n";
  return out;
}

Subscription::~Subscription() { hub_->Unsubscribe(this); }

std::optional<std::string> Subscription::Next(absl::Duration timeout, bool* ended) {
  vipu::MutexLock lock(&mu_);
  auto ready = [this]() ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_) {
    return !queue_.empty() || dropped_ || closed_;
  };
  mu_.AwaitWithTimeout(absl::Condition(&ready), timeout);
  *ended = dropped_ || closed_;
  if (*ended || queue_.empty()) return std::nullopt;
  std::string next = std::move(queue_.front());
  queue_.pop_front();
  return next;
}

bool Subscription::DroppedForTesting() const {
  vipu::MutexLock lock(&mu_);
  return dropped_;
}

EventHub::~EventHub() { Close(); }

absl::StatusOr<std::unique_ptr<Subscription>> EventHub::Subscribe() {
  vipu::MutexLock lock(&mu_);
  if (closed_) return absl::UnavailableError("events: the server is stopping");
  if (subscribers_.size() >= max_subscribers_) {
    return absl::ResourceExhaustedError(
        absl::StrCat("events: ", max_subscribers_, " consoles are already connected"));
  }
  std::unique_ptr<Subscription> s(new Subscription(this, queue_capacity_));
  subscribers_.push_back(s.get());
  return s;
}

void EventHub::Publish(const std::string& event, const std::string& data) {
  const std::string text = FormatEvent(event, data);
  vipu::MutexLock lock(&mu_);
  for (Subscription* s : subscribers_) {
    vipu::MutexLock sub(&s->mu_);
    if (s->dropped_ || s->closed_) continue;
    if (s->queue_.size() >= s->capacity_) {
      // Whatever it missed, a dropped browser reconnects and reloads the
      // whole state; waiting for it would hold up every other browser.
      s->dropped_ = true;
      s->queue_.clear();
      ++dropped_;
      continue;
    }
    s->queue_.push_back(text);
  }
}

void EventHub::Close() {
  vipu::MutexLock lock(&mu_);
  closed_ = true;
  for (Subscription* s : subscribers_) {
    vipu::MutexLock sub(&s->mu_);
    s->closed_ = true;
  }
}

size_t EventHub::SubscribersForTesting() const {
  vipu::MutexLock lock(&mu_);
  return subscribers_.size();
}

uint64_t EventHub::DroppedForTesting() const {
  vipu::MutexLock lock(&mu_);
  return dropped_;
}

void EventHub::Unsubscribe(Subscription* s) {
  vipu::MutexLock lock(&mu_);
  subscribers_.erase(std::remove(subscribers_.begin(), subscribers_.end(), s), subscribers_.end());
}

}  // namespace vipu::server
