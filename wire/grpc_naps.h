// The naps gRPC takes on the threads that run callback-API work, cut short.
//
// Debian's gRPC (1.51) runs every callback of its callback API (a reactor's
// reaction, a callback client call's completion) on two "nexting" threads
// per process. Each waits up to one second for work; when a second passes
// without any, it sleeps 100 ms (gpr_sleep_until) before it waits again.
// While both sleep, nothing of the process's callback work runs, and a
// connection that gRPC has left to those threads to read is not read: a
// call arriving then waits out the sleep. In vipu-server and vipu-agent
// that was a stall of up to 100 ms about once a second under load (every
// pending agent call waited), and on some CLI commands after a quiet
// second (3 of 14 removes in one test) (bench/README.md, "gRPC's 100 ms naps").
//
// Linking the object library vipu_grpc_naps into an executable replaces
// gRPC's gpr_sleep_until with one that sleeps at most kLongestGrpcNap: the
// nexting threads wait for work again at once. The library that calls
// gpr_sleep_until resolves it to the executable's definition, so the object
// must be linked into the executable itself (a static library member would
// not be pulled in). gRPC 1.51 calls gpr_sleep_until in only one other
// place, the one-off calibration of its cycle counter at start, which
// measures the time it actually slept.
//
// Thread-safe: the counter is atomic.
#ifndef VIPU_WIRE_GRPC_NAPS_H_
#define VIPU_WIRE_GRPC_NAPS_H_

#include <grpc/support/time.h>

#include <chrono>
#include <cstdint>

namespace vipu::wire {

// The longest sleep gRPC gets from gpr_sleep_until in a process linked
// with vipu_grpc_naps.
inline constexpr std::chrono::milliseconds kLongestGrpcNap{1};

// How long gpr_sleep_until(until) sleeps here: the time left until `until`
// (a point on one of gRPC's clocks; a span is taken as a span), at most
// kLongestGrpcNap, and zero once it has passed.
std::chrono::nanoseconds GrpcNapUntil(gpr_timespec until);

// How many sleeps gRPC asked for that were longer than kLongestGrpcNap and
// were cut to it, since the process started. Defined only where
// vipu_grpc_naps is linked.
uint64_t GrpcNapsShortened();

}  // namespace vipu::wire

#endif  // VIPU_WIRE_GRPC_NAPS_H_
