// gpr_sleep_until for the executables: gRPC's sleeps, cut to kLongestGrpcNap.
#include "wire/grpc_naps.h"

#include <algorithm>
#include <atomic>
#include <thread>

namespace vipu::wire {
namespace {

std::atomic<uint64_t> naps_shortened{0};

// How long until `until`, which gRPC gives as a point on one of its clocks
// (or, against its contract, as a span).
std::chrono::nanoseconds Left(gpr_timespec until) {
  if (until.clock_type != GPR_TIMESPAN) until = gpr_time_sub(until, gpr_now(until.clock_type));
  if (until.tv_sec < 0) return std::chrono::nanoseconds::zero();
  // Far futures saturate rather than overflow.
  if (until.tv_sec > 1'000'000'000) return std::chrono::hours(24 * 365);
  return std::chrono::seconds(until.tv_sec) + std::chrono::nanoseconds(until.tv_nsec);
}

// The sleep given for `left`: all of it, up to kLongestGrpcNap.
std::chrono::nanoseconds Cut(std::chrono::nanoseconds left) {
  return std::min<std::chrono::nanoseconds>(left, kLongestGrpcNap);
}

}  // namespace

std::chrono::nanoseconds GrpcNapUntil(gpr_timespec until) { return Cut(Left(until)); }

uint64_t GrpcNapsShortened() { return naps_shortened.load(std::memory_order_relaxed); }

}  // namespace vipu::wire

// Replaces libgpr's definition for every library of the process (see the
// header): gRPC's own declaration, in <grpc/support/time.h>, is extern "C".
void gpr_sleep_until(gpr_timespec until) {
  // One reading of the clock for both the count and the sleep.
  const std::chrono::nanoseconds left = vipu::wire::Left(until);
  if (left > vipu::wire::kLongestGrpcNap) {
    vipu::wire::naps_shortened.fetch_add(1, std::memory_order_relaxed);
  }
  const std::chrono::nanoseconds nap = vipu::wire::Cut(left);
  if (nap > std::chrono::nanoseconds::zero()) std::this_thread::sleep_for(nap);
}
