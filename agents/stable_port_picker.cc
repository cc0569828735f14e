// StablePortPicker: a walk over the stable port range in which the bind decides.
#include "agents/stable_port_picker.h"

namespace vipu::agents {

StablePortPicker::StablePortPicker(std::pair<uint32_t, uint32_t> range, uint32_t start,
                                   std::set<uint32_t> reserved)
    : first_(range.first),
      span_(range.first <= range.second ? range.second - range.first + 1 : 0),
      next_(span_ == 0 ? 0 : start % span_),
      reserved_(std::move(reserved)) {}

uint32_t StablePortPicker::Take(const std::function<bool(uint32_t)>& take, bool pair) {
  const uint32_t last = first_ + span_ - 1;
  for (uint32_t tried = 0; tried < span_; ++tried) {
    const uint32_t candidate = first_ + next_;
    next_ = (next_ + 1) % span_;
    if (Reserved(candidate)) continue;
    if (pair && (candidate == last || Reserved(candidate + 1))) continue;
    if (!take(candidate)) continue;
    reserved_.insert(candidate);
    return candidate;
  }
  return 0;
}

}  // namespace vipu::agents
