// A value handed from a callback to the one thread that waits for it.
#ifndef VIPU_BASE_OUTCOME_H_
#define VIPU_BASE_OUTCOME_H_

#include <memory>
#include <optional>
#include <utility>

#include "absl/base/thread_annotations.h"
#include "base/mutex.h"

namespace vipu {

// Set once, by whichever thread finishes the work; Wait returns it to the
// thread that started the work. Thread-safe. Keep it in a shared_ptr
// shared with the callback, so that a callback running after Wait returned
// (it cannot, but nothing needs it not to) finds it alive.
template <typename Result>
class Outcome {
 public:
  void Set(Result result) ABSL_LOCKS_EXCLUDED(mu_) {
    vipu::MutexLock lock(&mu_);
    result_ = std::move(result);
    done_ = true;
  }
  // Blocks until Set has been called; returns what it was given.
  Result Wait() ABSL_LOCKS_EXCLUDED(mu_) {
    vipu::MutexLock lock(&mu_);
    mu_.Await(absl::Condition(&done_));
    return std::move(*result_);
  }

 private:
  vipu::Mutex mu_;
  bool done_ ABSL_GUARDED_BY(mu_) = false;
  std::optional<Result> result_ ABSL_GUARDED_BY(mu_);
};

// Starts `call` with a callback that fills an Outcome, and waits for it:
// an asynchronous call made synchronous. Must not be called from a thread
// the callback needs.
template <typename Result, typename Call>
Result Await(Call call) {
  auto outcome = std::make_shared<Outcome<Result>>();
  call([outcome](Result r) { outcome->Set(std::move(r)); });
  return outcome->Wait();
}

}  // namespace vipu

#endif  // VIPU_BASE_OUTCOME_H_
