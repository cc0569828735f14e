// The proof that a replay is the server's placement: the creates and
// removes of a finished virtual replay sent to a real vipu-server (for
// example `vipu-server --simulate pod16`) through its public user API, in
// the replay's order and in compressed real time, each partition's IPUs
// compared with where the replay placed the job. Lives beside the program,
// not in vipu_plan, because it speaks gRPC.
#ifndef VIPU_PLAN_VIPU_PLAN_LIVE_REPLAY_H_
#define VIPU_PLAN_VIPU_PLAN_LIVE_REPLAY_H_

#include <cstdint>
#include <functional>
#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "plan/replay.h"
#include "plan/trace.h"

namespace vipu::plan {

struct LiveOptions {
  std::string address;       // HOST:PORT of the server's user API (plaintext)
  double time_scale = 1000;  // virtual seconds per wall second
  // Called about once a wall-clock second: actions done, actions in all.
  std::function<void(uint64_t, uint64_t)> progress;
};

struct LiveOutcome {
  uint64_t creates = 0;   // partitions created, as the replay started jobs
  uint64_t refusals = 0;  // creates refused, as the replay refused them (policy none)
  double wall_s = 0;
  // Where the server did otherwise than the replay, one line each; empty
  // when it did the same everywhere.
  std::vector<std::string> divergences;
};

// Sends `result`'s creates (partition "plan-<job index>" of the job's
// size) and removes to the server, in the replay's order: at each virtual
// time, removes first, then creates in the order the replay made them.
// Each create is waited on until PS_ACTIVE, then its IPUs are read back
// (ListPartitions) and compared. FAILED_PRECONDITION when the server
// already holds partitions (its placement would start elsewhere);
// UNAVAILABLE and the server's other errors as the server gave them. The
// partitions it created are removed before it returns.
absl::StatusOr<LiveOutcome> ReplayLive(const Trace& trace, const ReplayResult& result,
                                       const LiveOptions& options);

}  // namespace vipu::plan

#endif  // VIPU_PLAN_VIPU_PLAN_LIVE_REPLAY_H_
