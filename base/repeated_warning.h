// A log line that would otherwise repeat every few hundred milliseconds
// while something the process depends on is away (etcd, the database): said
// once, then again at once when its words change, or every 30 s with how
// often it recurred meanwhile ("... (150 times in 30 s)").
//
// Owns its last words. Not thread-safe: one thread says one warning.
#ifndef VIPU_BASE_REPEATED_WARNING_H_
#define VIPU_BASE_REPEATED_WARNING_H_

#include <string>

#include "absl/time/time.h"
#include "spdlog/spdlog.h"

namespace vipu {

class RepeatedWarning {
 public:
  // Lines are logged at `level` (spdlog's warn unless given).
  explicit RepeatedWarning(spdlog::level::level_enum level = spdlog::level::warn) : level_(level) {}

  // Logs `text` unless it is the same as the last and was said less than
  // 30 s ago, in which case it is only counted.
  void Say(const std::string& text);

  // The condition is over: the next warning is said at once. Returns
  // whether a warning had been said since the last Clear().
  bool Clear();

 private:
  spdlog::level::level_enum level_;
  std::string last_;
  absl::Time said_ = absl::InfinitePast();
  int repeats_ = 0;
};

}  // namespace vipu

#endif  // VIPU_BASE_REPEATED_WARNING_H_
