// A fixed pool of threads running queued jobs: the background halves of
// partition operations that begin by reading the store (resets, moves,
// recovery, reconciliation).
//
// Owns its threads. Thread-safe: Post may be called from any thread, jobs
// included, and is a no-op once stopping; Stop is the owner's, never a
// job's, since it joins the workers.
#ifndef VIPU_SERVER_CONTROL_WORK_QUEUE_H_
#define VIPU_SERVER_CONTROL_WORK_QUEUE_H_

#include <deque>
#include <functional>
#include <thread>
#include <vector>

#include "absl/base/thread_annotations.h"
#include "base/mutex.h"
#include "base/thread_name.h"

namespace vipu::server {

class WorkQueue {
 public:
  explicit WorkQueue(int threads) {
    for (int i = 0; i < threads; ++i) {
      NameThread(workers_.emplace_back([this] { Run(); }), "vipu-worker");
    }
  }
  ~WorkQueue() { Stop(); }

  void Post(std::function<void()> job) ABSL_LOCKS_EXCLUDED(mu_) {
    vipu::MutexLock lock(&mu_);
    if (stopping_) return;
    jobs_.push_back(std::move(job));
    // One idle worker is enough; waking all of them for each job would
    // cost a wake-up per worker per job.
    has_work_.Signal();
  }

  // Runs what is queued, then joins the threads. Idempotent.
  void Stop() ABSL_LOCKS_EXCLUDED(mu_) {
    {
      vipu::MutexLock lock(&mu_);
      stopping_ = true;
      has_work_.SignalAll();
    }
    for (std::thread& t : workers_) {
      if (t.joinable()) t.join();
    }
  }

 private:
  bool HasWorkOrStopping() const ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_) {
    return stopping_ || !jobs_.empty();
  }

  void Run() ABSL_LOCKS_EXCLUDED(mu_) {
    for (;;) {
      std::function<void()> job;
      {
        vipu::MutexLock lock(&mu_);
        while (!HasWorkOrStopping()) has_work_.Wait(&mu_);
        if (jobs_.empty()) return;
        job = std::move(jobs_.front());
        jobs_.pop_front();
      }
      job();
    }
  }

  vipu::Mutex mu_;
  std::deque<std::function<void()>> jobs_ ABSL_GUARDED_BY(mu_);
  vipu::CondVar has_work_;  // signalled with mu_ held when a job or Stop arrives
  bool stopping_ ABSL_GUARDED_BY(mu_) = false;
  std::vector<std::thread> workers_;
};

}  // namespace vipu::server

#endif  // VIPU_SERVER_CONTROL_WORK_QUEUE_H_
