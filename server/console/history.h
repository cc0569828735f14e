// The console's history: samples of IPUs in use, partitions and faults per
// allocation, kept in memory for a fixed window (the last hour) in a ring of
// bounded size, so memory stays flat however long the server runs.
// Thread-safe.
#ifndef VIPU_SERVER_CONSOLE_HISTORY_H_
#define VIPU_SERVER_CONSOLE_HISTORY_H_

#include <cstdint>
#include <deque>
#include <map>
#include <string>
#include <vector>

#include "absl/base/thread_annotations.h"
#include "absl/time/time.h"
#include "base/mutex.h"

namespace vipu::server {

struct Counts {
  uint32_t ipus_in_use = 0;
  uint32_t partitions = 0;
  uint32_t faults = 0;  // machines down, IPUs in error and links down
};

struct Sample {
  int64_t unix_ms = 0;
  std::map<std::string, Counts> by_allocation;
};

class History {
 public:
  // Keeps at most `capacity` samples (>= 1) no older than `window`.
  History(size_t capacity, absl::Duration window) : capacity_(capacity), window_(window) {}

  // Appends; drops the oldest beyond the capacity or the window.
  void Add(Sample sample);
  // The samples of the last `span` before `now`, oldest first.
  std::vector<Sample> Since(absl::Time now, absl::Duration span) const;
  size_t SizeForTesting() const;

 private:
  const size_t capacity_;
  const absl::Duration window_;
  mutable vipu::Mutex mu_;
  std::deque<Sample> samples_ ABSL_GUARDED_BY(mu_);
};

}  // namespace vipu::server

#endif  // VIPU_SERVER_CONSOLE_HISTORY_H_
