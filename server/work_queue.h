// A fixed pool of threads running queued jobs: the background half of
// partition operations (configuring agents after the reply has left).
#ifndef VIPU_SERVER_WORK_QUEUE_H_
#define VIPU_SERVER_WORK_QUEUE_H_

#include <condition_variable>
#include <deque>
#include <functional>
#include <mutex>
#include <thread>
#include <vector>

namespace vipu::server {

class WorkQueue {
 public:
  explicit WorkQueue(int threads) {
    for (int i = 0; i < threads; ++i) workers_.emplace_back([this] { Run(); });
  }
  ~WorkQueue() { Stop(); }

  void Post(std::function<void()> job) {
    {
      std::lock_guard<std::mutex> lock(mu_);
      if (stopping_) return;
      jobs_.push_back(std::move(job));
    }
    cv_.notify_one();
  }

  // Runs what is queued, then joins the threads. Idempotent.
  void Stop() {
    {
      std::lock_guard<std::mutex> lock(mu_);
      stopping_ = true;
    }
    cv_.notify_all();
    for (std::thread& t : workers_) {
      if (t.joinable()) t.join();
    }
  }

 private:
  void Run() {
    for (;;) {
      std::function<void()> job;
      {
        std::unique_lock<std::mutex> lock(mu_);
        cv_.wait(lock, [&] { return stopping_ || !jobs_.empty(); });
        if (jobs_.empty()) return;
        job = std::move(jobs_.front());
        jobs_.pop_front();
      }
      job();
    }
  }

  std::mutex mu_;
  std::condition_variable cv_;
  std::deque<std::function<void()>> jobs_;
  bool stopping_ = false;
  std::vector<std::thread> workers_;
};

}  // namespace vipu::server

#endif  // VIPU_SERVER_WORK_QUEUE_H_
