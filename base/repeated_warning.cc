// RepeatedWarning: a recurring log line said once, then counted.
#include "base/repeated_warning.h"

#include "absl/time/clock.h"

namespace vipu {

void RepeatedWarning::Say(const std::string& text) {
  const absl::Time now = absl::Now();
  if (text == last_ && now - said_ < absl::Seconds(30)) {
    ++repeats_;
    return;
  }
  if (text == last_ && repeats_ > 0) {
    spdlog::log(level_, "{} ({} times in {} s)", text, repeats_ + 1,
                absl::ToInt64Seconds(now - said_));
  } else {
    spdlog::log(level_, "{}", text);
  }
  last_ = text;
  said_ = now;
  repeats_ = 0;
}

bool RepeatedWarning::Clear() {
  const bool was = !last_.empty();
  last_.clear();
  repeats_ = 0;
  return was;
}

}  // namespace vipu
