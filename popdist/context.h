// What poprun tells each instance, read from the environment it sets
// (POPDIST_*, see poprun/poprun_launch.h). Outside poprun every getter
// returns the single-instance default, so an application runs unchanged.
#ifndef VIPU_POPDIST_CONTEXT_H_
#define VIPU_POPDIST_CONTEXT_H_

#include <stdexcept>
#include <string>

namespace popdist {

// The error popdist throws, as the Python module and C++ applications of the
// published popdist expect an exception. An immutable value; thread-safe.
class popdist_error : public std::runtime_error {
 public:
  using std::runtime_error::runtime_error;
};

// True when poprun launched this process (POPDIST_NUM_TOTAL_REPLICAS set).
bool isPopdistEnvSet();

// Defaults outside poprun: 1, 1, 1, 0, 0. A malformed value throws
// popdist_error naming the variable.
unsigned getNumTotalReplicas();
unsigned getNumLocalReplicas();
unsigned getNumIpusPerReplica();
unsigned getReplicaIndexOffset();
unsigned getLocalInstanceIndex();

// POPDIST_UNIFORM_REPLICAS_PER_INSTANCE (true when unset).
bool isUniformReplicasPerInstance();

// total / local and offset / local; popdist_error when the replicas are
// not spread uniformly over the instances.
unsigned getNumInstances();
unsigned getInstanceIndex();

// The Poplar device id of this instance's replicas inside its GCD, with
// devices numbered size class by size class (ids 0..N-1 single IPUs, then
// the N/2 pairs, ...), N = instanceSize from POPLAR_TARGET_OPTIONS, else
// the whole partition. ipusPerReplica 0 uses POPDIST_NUM_IPUS_PER_REPLICA.
unsigned getDeviceId(unsigned ipusPerReplica = 0);

// With poprun's --autoreport-dir (POPDIST_AUTOREPORT_DIRECTORY): this
// instance's own profile directory, <dir>/<instance index>, to use as
// autoReport.directory; empty otherwise.
std::string getAutoReportDirectory();

// False when the IPUs per replica of the launch differ from `expected`.
bool checkNumIpusPerReplica(unsigned expected);

}  // namespace popdist

#endif  // VIPU_POPDIST_CONTEXT_H_
